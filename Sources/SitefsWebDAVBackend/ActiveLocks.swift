import SitefsAPI
import SitefsProvider
import SitefsWebDAV
import Synchronization

/// A resource's `DAV:lockdiscovery` as the model's `ProviderLock`: who holds it, from where,
/// since and until when, each value checked and bounded. A lock whose token or timeout is not
/// one is left out (the item shows no lock), never an error: a listing does not fail for it.
enum ActiveLocks {
    /// The lock to show for a resource: the first this backend holds (`isHeldHere`), else the
    /// first usable one; nil when the server lists none usable.
    static func shown(_ locks: [DAVActiveLock], now: Timestamp, isHeldHere: (String) -> Bool,
                      firstSeen: (String) -> Timestamp) -> ProviderLock? {
        guard !locks.isEmpty else { return nil }
        let usable = locks.filter { $0.token.map { LockWire.token($0) != nil } ?? true }
        let mine = usable.first { $0.token.map(isHeldHere) == true }
        guard let chosen = mine ?? usable.first else { return nil }
        return lock(chosen, now: now, heldHere: mine != nil, firstSeen: firstSeen)
    }

    /// One active lock as a `ProviderLock`. The holder, from the most specific source there
    /// is: sitefs's `account` and `name` elements, else the owner's text, else its href (how
    /// a client following RFC 4918's examples names itself), else nothing (nginx keeps no
    /// owner). `since` is sitefs's element, else when this backend first saw the lock.
    /// `expires` is `timeout` from now; nil for `Infinite`, or when the server gives none.
    static func lock(_ active: DAVActiveLock, now: Timestamp, heldHere: Bool, firstSeen: (String) -> Timestamp) -> ProviderLock? {
        var expires: Timestamp?
        if let timeout = active.timeout {
            guard let granted = LockWire.granted(timeout) else { return nil }
            expires = LockWire.expiry(of: granted, from: now)
        }
        let fields = active.sitefsFields.mapValues(LockWire.clean)
        let named = fields["name"] ?? ""
        let fallback = LockWire.clean(!active.ownerText.isEmpty ? active.ownerText : active.ownerHref ?? "")
        let account = fields["account"].flatMap { $0.isEmpty ? nil : $0 } ?? (named.isEmpty ? fallback : named)
        let since = fields["since"].flatMap(Timestamp.init(rfc3339:)).flatMap { plausible($0, now: now) }
            ?? firstSeen(active.token ?? "\(active.root ?? "")|\(account)")
        return ProviderLock(holder: account, holderName: named.isEmpty ? account : named, device: fields["device"] ?? "",
                            application: fields["application"] ?? "", since: since, expires: expires, heldHere: heldHere)
    }

    /// A time a lock says it was taken, if it could be: not before 2000, not more than a day
    /// ahead of this machine's clock.
    private static func plausible(_ since: Timestamp, now: Timestamp) -> Timestamp? {
        let earliest = Timestamp(microsecondsSinceEpoch: 946_684_800_000_000)
        let latest = Timestamp(microsecondsSinceEpoch: now.microseconds + 86_400_000_000)
        return since >= earliest && since <= latest ? since : nil
    }
}

/// When this backend first saw each lock whose holder did not say when it took it: the
/// `since` shown for it stays put across listings. Bounded: the oldest sightings go first
/// beyond `capacity` (a lock forgotten and seen again shows a later `since`, nothing worse).
/// A leaf lock, held only to read or record one sighting.
final class LockSightings: Sendable {
    static let capacity = 1024
    private let state = Mutex<(seen: [String: Timestamp], order: [String])>(([:], []))

    /// When `key` (a token) was first seen; now, recorded, if never.
    func firstSeen(_ key: String, now: Timestamp) -> Timestamp {
        state.withLock { state in
            if let known = state.seen[key] { return known }
            if state.order.count >= Self.capacity {
                let dropped = state.order.prefix(Self.capacity / 4)
                for old in dropped { state.seen[old] = nil }
                state.order.removeFirst(dropped.count)
            }
            state.seen[key] = now
            state.order.append(key)
            return now
        }
    }
}

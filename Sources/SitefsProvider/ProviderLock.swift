import SitefsAPI

/// A lock for editing on one item, as the server reports it: who holds it, from where,
/// since and until when. The File Provider model has no locks; this is what WebDAV
/// (RFC 4918 §6) and `sitefs-server` share: an exclusive write lock with a timeout the
/// holder refreshes, so an abandoned lock ends by itself.
public struct ProviderLock: Sendable, Equatable {
    /// The holder's account on the server (a WebDAV server's principal or the lock's owner).
    public var holder: String
    /// The holder as a person reads it ("Anna Berger"); the account when the server has no
    /// display name.
    public var holderName: String
    /// The machine the lock was taken from ("site-laptop-3"); empty when unknown.
    public var device: String
    /// The program the lock was taken for ("LibreOffice"); empty when unknown.
    public var application: String
    public var since: Timestamp
    /// When the server ends the lock unless it is refreshed; nil: never (a WebDAV
    /// `Infinite` timeout).
    public var expires: Timestamp?
    /// Taken by this backend instance (this mount): writes it sends on the item carry the
    /// lock's token, and the mount shows no lock file for it (the program that asked has
    /// its own).
    public var heldHere: Bool

    public init(holder: String, holderName: String, device: String, application: String, since: Timestamp,
                expires: Timestamp?, heldHere: Bool) {
        self.holder = holder
        self.holderName = holderName
        self.device = device
        self.application = application
        self.since = since
        self.expires = expires
        self.heldHere = heldHere
    }

    /// "Anna Berger on site-laptop-3 since 2026-11-27T10:14:00Z": for logs, status and
    /// notifications.
    public var description: String {
        var text = holderName.isEmpty ? holder : holderName
        if !device.isEmpty { text += " on \(device)" }
        return text + " since \(since.rfc3339)"
    }
}

/// What a mount asks for when it takes a lock. The account comes from the sign-in.
public struct LockRequest: Sendable, Equatable {
    /// The holder's name as people should read it, where the server does not know it
    /// (WebDAV's `owner`); `sitefs-server` uses the account's own.
    public var holderName: String
    public var device: String
    public var application: String
    /// How long the lock lasts unless refreshed. A server may grant less or more; the
    /// answer's `expires` says what it granted.
    public var timeout: Duration

    public init(holderName: String, device: String, application: String, timeout: Duration) {
        self.holderName = holderName
        self.device = device
        self.application = application
        self.timeout = timeout
    }
}

/// Whether a server locks items.
public enum LockSupport: Sendable, Equatable {
    /// It does: `lock`/`unlock` work and items carry their locks.
    case supported
    /// It does not (a WebDAV server without a lock database): the mount works as before,
    /// without locks, and says so once in its log. `reason` says what was found.
    case unsupported(reason: String)
}

import SitefsAPI
import SitefsHTTP
import SitefsProvider
import SitefsWebDAV

/// Locks for editing (RFC 4918 §6-§10): exclusive write locks on files, taken with LOCK,
/// refreshed with LOCK and the token, released with UNLOCK. While one is held, every write
/// this backend sends on the file carries its token in `If` (`sendHoldingLocks`); others'
/// locks come with listings and items from `DAV:lockdiscovery`. README.md, "Locks", says what
/// each server tested does.
extension WebDAVDocumentBackend {
    // MARK: Whether the server locks

    /// Asked once, with OPTIONS on the mount URL: a server that locks names class 2 in its
    /// `DAV` header (RFC 4918 §18.2). A definite answer is remembered; a failure to ask is
    /// not (the next caller asks again).
    public var lockSupport: LockSupport {
        if let known = lockSupportFound.withLock({ $0 }) { return known }
        let response: HTTPResponse
        do throws(ProviderError) {
            response = try transport.send(HTTPRequest(method: .options, path: location.basePath))
        } catch {
            return .unsupported(reason: "OPTIONS \(location.basePath) failed: \(error)")
        }
        guard (200..<300).contains(response.status) else {
            return .unsupported(reason: "OPTIONS \(location.basePath) answered HTTP \(response.status)")
        }
        let header = response.headers.values(for: "DAV").joined(separator: ",")
        let classes = header.split(separator: ",").map { String($0).trimmingASCIIWhitespace }
        let found: LockSupport = classes.contains("2") ? .supported
            : .unsupported(reason: "the server's DAV header (\(LockWire.clean(header).debugDescription)) names no class 2: it does not lock")
        let answer = lockSupportFound.withLock { known in
            if known == nil { known = found }
            return known ?? found
        }
        if case .unsupported(let reason) = answer {
            sayOnce("locks", "\(reason); files are not locked for editing on this mount")
        }
        return answer
    }

    // MARK: Taking and releasing

    public func lock(_ file: ItemIdentifier, _ request: LockRequest) throws(ProviderError) -> ProviderLock {
        let (node, location) = try resolve(file)
        guard !location.isCollection else { throw .refused(status: 0, code: "not_a_file", message: "only files are locked") }
        if let held = heldLocks.held(node) {
            switch try refresh(node, at: location, held, request) {
            case .refreshed(let lock): return lock
            case .gone: break  // taken again below, once
            }
        }
        return try take(node, at: location, request)
    }

    public func unlock(_ file: ItemIdentifier) throws(ProviderError) {
        guard let node = IdentityTable.Node(file.id), let held = heldLocks.held(node) else { return }
        // Where the item is now; where it was locked when its identity is gone.
        let path: String
        do throws(ProviderError) {
            path = try resolve(file).1.pathForRequest(in: location)
        } catch {
            guard error.isNotFound else { throw error }
            path = location.path(of: held.components, collection: false)
        }
        let response = try transport.send(HTTPRequest(method: .unlock, path: path, headers: [("Lock-Token", "<\(held.token)>")]))
        switch response.status {
        case 200, 204:
            heldLocks.drop(node, token: held.token)
        // Not locked (any more) with that token: Apache says 400, WsgiDAV 409 (or 404 for a
        // resource that is gone), RFC 4918 §9.11.1 412. Nothing is held either way.
        case 400, 404, 409, 410, 412:
            heldLocks.drop(node, token: held.token)
        default:
            throw WebDAVTransport.error(for: response, "UNLOCK \(held.components.last ?? "")")
        }
    }

    /// A new lock: LOCK with a lockinfo body. `If-Match: *` keeps a LOCK from making an empty
    /// file where the file is gone (RFC 4918 §7.3: a LOCK of an unmapped URL creates one);
    /// Apache honours it. WsgiDAV and nginx do not: a 201 says they made one, which is deleted
    /// again under the lock just taken before `notFound` is reported.
    private func take(_ node: IdentityTable.Node, at location: IdentityTable.Location,
                      _ request: LockRequest) throws(ProviderError) -> ProviderLock {
        let now = Timestamp.now()
        let account = LockWire.account(fromAuthorization: transport.credentials.authorization())
        let owner = LockWire.Owner(account: account, name: LockWire.clean(request.holderName), device: LockWire.clean(request.device),
                                   application: LockWire.clean(request.application), since: now, requestID: LockWire.newRequestID())
        let path = location.pathForRequest(in: self.location)
        let name = location.components.last ?? ""
        let response: HTTPResponse
        do throws(ProviderError) {
            response = try transport.send(HTTPRequest(method: .lock, path: path, headers: [
                ("Depth", "0"), ("Timeout", LockWire.timeoutHeader(request.timeout)), ("If-Match", "*"),
                ("Content-Type", "application/xml; charset=utf-8"),
            ], body: .bytes(LockWire.lockInfo(owner))))
        } catch where error.isTransient {
            guard let adopted = adoptLost(node, at: location, owner, request, failure: error) else { throw error }
            return adopted
        }
        switch response.status {
        case 200, 201:
            guard let token = LockWire.token(fromHeader: response.headers["Lock-Token"]) ?? grantedLocks(response, name).first?.token
                .flatMap(LockWire.token) else {
                throw .invalidResponse("LOCK \(name): an answer without a usable lock token")
            }
            if response.status == 201 { try deleteMadeByLock(location, token: token, name) }
            heldLocks.hold(node, HeldLocks.Held(token: token, components: location.components, request: request, since: now))
            return ownLock(owner, expires: expiry(of: response, token: token, asked: request.timeout, now: now, name))
        case 423, 207:
            let refusal = response.status == 423 ? ProviderError.locked(by: nil) : transport.multistatusFailure(response, "LOCK \(name)")
            guard case .locked = refusal else { throw refusal }
            // Another thread of this backend took it meanwhile: that lock is the answer.
            if let held = heldLocks.held(node), case .refreshed(let lock) = try refresh(node, at: location, held, request) {
                return lock
            }
            // libcurl sends a request again by itself when a kept-alive connection dies before
            // any byte of the answer: the first one may have made the lock this one ran into.
            let locks: [DAVActiveLock]
            do throws(ProviderError) {
                locks = try serverLocks(at: location, "LOCK \(name)")
            } catch {
                logger.info("LOCK \(name.debugDescription.prefix(80)): locked, and who holds it could not be read: \(error)")
                throw .locked(by: nil)
            }
            if let adopted = adopt(node, at: location, owner, request, from: locks) { return adopted }
            throw .locked(by: foreignLock(locks))
        case 404, 409, 410, 412:
            throw .notFound  // 412: If-Match: * found nothing there
        case 405, 501:
            throw .refused(status: response.status, code: "locks_unsupported", message: "LOCK \(name): HTTP \(response.status)")
        default:
            let failure = WebDAVTransport.error(for: response, "LOCK \(name)")
            // A gateway's 502 or 504 may come after the server made the lock.
            guard failure.isTransient, let adopted = adoptLost(node, at: location, owner, request, failure: failure) else { throw failure }
            return adopted
        }
    }

    /// A LOCK whose answer was lost (a reset or timeout after the server took the request, a
    /// gateway's 5xx) may have made a lock in this mount's name that no one here has the
    /// token of: every write of the file would then meet it (423) until its timeout. One
    /// `PROPFIND Depth: 0` looks for it (`adopt`). Nil when it finds none, or cannot be sent
    /// (then `failure`, the LOCK's error, is logged with why): nothing is held.
    private func adoptLost(_ node: IdentityTable.Node, at location: IdentityTable.Location, _ owner: LockWire.Owner,
                           _ request: LockRequest, failure: ProviderError) -> ProviderLock? {
        let name = location.components.last ?? ""
        let locks: [DAVActiveLock]
        do throws(ProviderError) {
            locks = try serverLocks(at: location, "LOCK \(name) (looking for its lost answer)")
        } catch {
            logger.info("LOCK \(name.debugDescription.prefix(80)) failed (\(failure)); whether it made a lock could not be read: \(error)")
            return nil
        }
        guard let adopted = adopt(node, at: location, owner, request, from: locks) else { return nil }
        logger.info("LOCK \(name.debugDescription.prefix(80)) failed (\(failure)) after the server made the lock; it is held")
        return adopted
    }

    /// The lock among `locks` that this LOCK request made, held here as if its answer had
    /// come: the one whose owner carries the request's id (`owner.requestID`, fresh for each
    /// LOCK, so never an earlier lock of this mount, nor anyone else's) and a usable token.
    /// Nil when there is none, as where the server keeps no owner (nginx). `expires` from
    /// its `timeout` counted from when the LOCK was sent (no later than the server's end),
    /// else as asked.
    private func adopt(_ node: IdentityTable.Node, at location: IdentityTable.Location, _ owner: LockWire.Owner,
                       _ request: LockRequest, from locks: [DAVActiveLock]) -> ProviderLock? {
        guard let found = locks.first(where: { $0.requestID == owner.requestID }),
              let token = found.token.flatMap(LockWire.token) else { return nil }
        heldLocks.hold(node, HeldLocks.Held(token: token, components: location.components, request: request, since: owner.since))
        let granted = found.timeout.flatMap(LockWire.granted) ?? .seconds(LockWire.timeoutSeconds(request.timeout))
        return ownLock(owner, expires: LockWire.expiry(of: granted, from: owner.since))
    }

    /// A LOCK that answered 201 made an empty file where the file was gone (RFC 4918 §7.3):
    /// deleted again under that lock, which no one else can have changed it through. Then the
    /// file is reported gone.
    private func deleteMadeByLock(_ location: IdentityTable.Location, token: String, _ name: String) throws(ProviderError) -> Never {
        let deleted = try transport.send(HTTPRequest(method: .delete, path: location.pathForRequest(in: self.location),
                                                     headers: [("If", "(<\(token)>)")]))
        if !(200..<300).contains(deleted.status) {
            logger.warning("LOCK \(name.debugDescription.prefix(80)) made an empty file where the file was gone; deleting it answered HTTP \(deleted.status)")
        }
        throw .notFound
    }

    private enum Refresh {
        case refreshed(ProviderLock)
        /// The server has no such lock any more (expired, or ended by someone else).
        case gone
    }

    /// A refresh: LOCK without a body, the token in `If` (RFC 4918 §9.10.2), a new timeout.
    private func refresh(_ node: IdentityTable.Node, at location: IdentityTable.Location, _ held: HeldLocks.Held,
                         _ request: LockRequest) throws(ProviderError) -> Refresh {
        let now = Timestamp.now()
        let name = location.components.last ?? ""
        let response = try transport.send(HTTPRequest(method: .lock, path: location.pathForRequest(in: self.location), headers: [
            ("If", "(<\(held.token)>)"), ("Timeout", LockWire.timeoutHeader(request.timeout)),
        ]))
        switch response.status {
        case 200, 201:
            var renewed = held
            renewed.request = request
            // nginx takes a refresh of a lock it no longer has for a new lock, with a token of
            // its own (and a 201 where the file is gone, which it has just made empty).
            if let answered = LockWire.token(fromHeader: response.headers["Lock-Token"]), answered != held.token {
                renewed.token = answered
                renewed.since = now
                if response.status == 201 {
                    heldLocks.drop(node, token: held.token)
                    try deleteMadeByLock(location, token: answered, name)
                }
            }
            heldLocks.hold(node, renewed)
            let owner = LockWire.Owner(account: LockWire.account(fromAuthorization: transport.credentials.authorization()),
                                       name: LockWire.clean(request.holderName), device: LockWire.clean(request.device),
                                       application: LockWire.clean(request.application), since: renewed.since, requestID: "")
            return .refreshed(ownLock(owner, expires: expiry(of: response, token: renewed.token, asked: request.timeout, now: now, name)))
        // The token no longer names a lock there: WsgiDAV says 412, nginx 423, Apache 400.
        case 400, 412, 423:
            heldLocks.drop(node, token: held.token)
            return .gone
        case 404, 410:
            heldLocks.drop(node, token: held.token)
            throw .notFound
        default:
            throw WebDAVTransport.error(for: response, "LOCK \(name) (refresh)")
        }
    }

    private func ownLock(_ owner: LockWire.Owner, expires: Timestamp?) -> ProviderLock {
        let holder = owner.account.isEmpty ? owner.name : owner.account
        return ProviderLock(holder: holder, holderName: owner.name.isEmpty ? holder : owner.name, device: owner.device,
                            application: owner.application, since: owner.since, expires: expires, heldHere: true)
    }

    /// The locks a LOCK answer lists. A body that is not a lock answer is logged and taken as
    /// none: the lock was granted (the status says so), only its details are missing.
    private func grantedLocks(_ response: HTTPResponse, _ name: String) -> [DAVActiveLock] {
        do throws(DAVParseError) {
            return try LockAnswer.activeLocks(in: response.body)
        } catch {
            logger.warning("LOCK \(name.debugDescription.prefix(80)): the answer's body is unusable (\(error)); the lock's timeout is taken as asked")
            return []
        }
    }

    /// When the lock with `token` ends, as the answer grants it; as asked when the answer does
    /// not say (a server that grants less then ends it earlier than shown: the holder's
    /// refresh comes well before either).
    private func expiry(of response: HTTPResponse, token: String, asked: Duration, now: Timestamp, _ name: String) -> Timestamp? {
        let locks = grantedLocks(response, name)
        let granted = (locks.first { $0.token == token } ?? (locks.count == 1 ? locks.first : nil))?.timeout.flatMap(LockWire.granted)
        return LockWire.expiry(of: granted ?? .seconds(LockWire.timeoutSeconds(asked)), from: now)
    }

    // MARK: Writes under a lock

    /// One resource a write touches: a token held for it goes along.
    struct LockedTarget {
        var node: IdentityTable.Node
        var location: IdentityTable.Location
    }

    /// Sends a write that touches `targets` (the request's own resource first; a MOVE adds
    /// the file it replaces). `send` gets the `If` header to add: the tokens this backend
    /// holds on any of them (none: no header). With `tagged`, they go as tagged lists even
    /// when only the request's own resource has one: Apache checks an untagged list against
    /// every resource a DELETE or MOVE changes (the parent folder, a MOVE's destination),
    /// which have no such lock, and fails the request (424). Then:
    ///
    /// - a 412 to a request that carried tokens may be a lock that ended on the server
    ///   (expired, or removed by someone) rather than the request's own condition: each lock
    ///   sent is looked up (`PROPFIND lockdiscovery`), those the server no longer has are
    ///   dropped, and the request goes once more without them;
    /// - a 423 while this backend holds a lock on a target now that the request did not
    ///   carry: the lock was taken while the request was on its way and reached the server
    ///   first (a file opened for writing is locked in the background while a quick save
    ///   goes); the request goes once more with its token;
    /// - a 423 to tagged lists carrying only the request's own token goes once more untagged:
    ///   nginx compares a tagged URL undecoded with the decoded path, so a name with a
    ///   percent-escape never matches; its answer counts only if it succeeded;
    /// - a 423 (someone else's lock) becomes `.locked(by:)` naming the holder.
    func sendHoldingLocks(_ targets: [LockedTarget], _ operation: String, tagged: Bool = false,
                          _ send: (_ lockHeaders: [(String, String)]) throws(ProviderError) -> HTTPResponse) throws(ProviderError) -> HTTPResponse {
        let heldNow = { [heldLocks] in targets.compactMap { target in heldLocks.held(target.node).map { (target, $0) } } }
        var held = heldNow()
        writePause.withLock { $0 }?()
        var result = try send(ifHeader(held, requestTarget: targets.first, tagged: tagged))
        if result.status == 423 {
            let now = heldNow()
            if now.contains(where: { taken in !held.contains { $0.1.token == taken.1.token } }) {
                logger.debug("\(operation): refused by a lock taken here while it was on its way; sent again with its token")
                held = now
                result = try send(ifHeader(held, requestTarget: targets.first, tagged: tagged))
            }
        }
        if result.status == 412, !held.isEmpty {
            var dropped = false
            for (target, lock) in held {
                guard try !serverHasLock(lock.token, at: target.location, operation) else { continue }
                heldLocks.drop(target.node, token: lock.token)
                dropped = true
            }
            if dropped {
                logger.info("\(operation): a lock held here had ended on the server; sent again without it")
                held = heldNow()
                result = try send(ifHeader(held, requestTarget: targets.first, tagged: tagged))
            }
        }
        if result.status == 423, tagged, held.count == 1, held[0].0.node == targets.first?.node {
            let untagged = try send(ifHeader(held, requestTarget: targets.first, tagged: false))
            if (200..<300).contains(untagged.status) { result = untagged }
        }
        if result.status == 423 { throw lockedError(at: targets.map(\.location), operation) }
        return result
    }

    private func ifHeader(_ held: [(LockedTarget, HeldLocks.Held)], requestTarget: LockedTarget?, tagged: Bool) -> [(String, String)] {
        let url = { (location: IdentityTable.Location) in self.location.url(of: location.pathForRequest(in: self.location)) }
        let tokens = held.map { (url: url($0.0.location), token: $0.1.token) }
        let requestURL = tagged ? nil : requestTarget.map { url($0.location) }
        return LockWire.ifHeader(tokens, untaggedFor: requestURL).map { [("If", $0)] } ?? []
    }

    /// Whether the server still lists `token` among the locks on `location`.
    private func serverHasLock(_ token: String, at location: IdentityTable.Location, _ operation: String) throws(ProviderError) -> Bool {
        try serverLocks(at: location, operation).contains { $0.token == token }
    }

    /// The locks the server lists on `location` (`PROPFIND Depth: 0`); none when it is gone.
    private func serverLocks(at location: IdentityTable.Location, _ operation: String) throws(ProviderError) -> [DAVActiveLock] {
        do throws(WebDAVListingError) {
            return try listing.resource(at: location.components, collection: location.isCollection,
                                        headers: transport.authorizationHeaders)?.properties.locks ?? []
        } catch {
            if case .status(404, _) = error { return [] }
            throw WebDAVTransport.error(for: error, operation)
        }
    }

    /// The error for a 423: `.locked(by:)` with the first lock the server lists on
    /// `locations` that this backend does not hold (nil when it lists none, or cannot be
    /// asked). Only the lock's holder is wanted: a failure to ask leaves it out.
    func lockedError(at locations: [IdentityTable.Location], _ operation: String) -> ProviderError {
        for location in locations {
            let locks: [DAVActiveLock]
            do throws(ProviderError) {
                locks = try serverLocks(at: location, operation)
            } catch {
                logger.info("\(operation): locked, and who holds it could not be read: \(error)")
                return .locked(by: nil)
            }
            if let lock = foreignLock(locks) { return .locked(by: lock) }
        }
        return .locked(by: nil)
    }

    /// The first of `locks` that this backend does not hold, as shown; nil when there is none.
    private func foreignLock(_ locks: [DAVActiveLock]) -> ProviderLock? {
        let foreign = locks.filter { !($0.token.map(heldLocks.holds(token:)) ?? false) }
        return ActiveLocks.shown(foreign, now: .now(), isHeldHere: { _ in false }, firstSeen: firstSeen)
    }

    /// When this backend first saw a lock that does not say when it was taken.
    func firstSeen(_ key: String) -> Timestamp {
        lockSightings.firstSeen(key, now: .now())
    }

    /// The lock to show on a resource whose `lockdiscovery` lists `locks`.
    func shownLock(_ locks: [DAVActiveLock]) -> ProviderLock? {
        guard !locks.isEmpty else { return nil }
        return ActiveLocks.shown(locks, now: .now(), isHeldHere: heldLocks.holds(token:), firstSeen: firstSeen)
    }
}

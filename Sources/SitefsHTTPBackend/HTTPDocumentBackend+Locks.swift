import Foundation
import SitefsAPI
import SitefsCrypto
import SitefsHTTP
import SitefsProvider

/// Locks for editing on sitefs-server (`PUT`/`DELETE /v1/items/{id}/lock`). The tokens
/// this backend holds live in `heldLocks`; every write of an item it holds a lock on
/// carries the token (`lockedWrite`).
extension HTTPDocumentBackend {
    public var lockSupport: LockSupport { .supported }

    /// Takes the lock, or refreshes it when this backend holds it (the token goes along).
    /// Someone else's lock: `.locked(by:)` naming them, and a lock held here that the
    /// server no longer has (taken over after it expired, or the file gone) is forgotten.
    public func lock(_ file: ItemIdentifier, _ request: LockRequest) throws(ProviderError) -> ProviderLock {
        let body = try Self.encode(LockRequestBody(
            device: Self.clipped(request.device), application: Self.clipped(request.application),
            timeout: Self.lockSeconds(request.timeout)))
        // A new lock's token is chosen here and held before the request goes: if its answer
        // is lost, writes still carry it and the next call refreshes what the server made.
        let held = heldLocks.held(file) ?? {
            let token = LockIdentity.newToken()
            let pending = HeldLocks.Held(lockID: LockIdentity.lockID(forToken: token, item: file.id), token: token)
            heldLocks.hold(file, pending)
            return pending
        }()
        let headers = [("Content-Type", "application/json"), ("Lock-Token", held.token)]
        let response: HTTPResponse
        do {
            response = try send(HTTPRequest(method: .put, path: Self.itemPath(file, "lock"), headers: headers, body: .bytes(body)))
        } catch {
            if !error.isTransient { heldLocks.drop(file, lockID: held.lockID) }
            throw error
        }
        guard response.status == 200 || response.status == 201 else {
            let error = Self.error(for: response)
            if !error.isTransient { heldLocks.drop(file, lockID: held.lockID) }
            throw error
        }
        let grant: LockGrant
        do {
            grant = try JSONDecoder().decode(LockGrant.self, from: Data(response.body))
        } catch {
            throw .invalidResponse("malformed lock grant from PUT \(Self.itemPath(file, "lock")): \(error)")
        }
        if let problem = ResponseValidation.problem(with: grant.lock) { throw .invalidResponse("the lock granted on \(file): \(problem)") }
        guard !grant.token.isEmpty, grant.token.utf8.count <= 128,
              grant.token.utf8.allSatisfy({ Self.tokenCharacters.contains($0) })
        else { throw .invalidResponse("the lock granted on \(file) has an unusable token") }
        guard grant.token == held.token, grant.lock.id == held.lockID else {
            heldLocks.drop(file, lockID: held.lockID)
            throw .invalidResponse("the lock granted on \(file) is not the one asked for")
        }
        return ResponseValidation.providerLock(grant.lock, heldHere: true)
    }

    /// Releases this backend's lock. Holding none, nothing is sent. The answer ends the
    /// holding whatever it is (released, already gone, someone else's lock now), except a
    /// failure in transit or a 5xx/429: then the lock is still held and the error thrown,
    /// so the caller may try again.
    public func unlock(_ file: ItemIdentifier) throws(ProviderError) {
        guard let held = heldLocks.held(file) else { return }
        let response = try send(HTTPRequest(method: .delete, path: Self.itemPath(file, "lock"), headers: [("Lock-Token", held.token)]))
        switch response.status {
        case 200, 204, 404, 423:
            // 404: the file is gone, and its lock with it; 423: the server has another lock
            // on it now (ours had expired), which is not ours to end.
            heldLocks.drop(file, lockID: held.lockID)
        default:
            let error = Self.error(for: response)
            if !error.isTransient { heldLocks.drop(file, lockID: held.lockID) }
            throw error
        }
    }

    /// Sends a write of `item` with the `Lock-Token` headers `send` gets: the tokens this
    /// backend holds for it (with `wholeSite`, for every file of its site it may reach, see
    /// `HeldLocks.tokens`). A refusal by a lock (423) then goes one of two ways:
    /// - a token is held now that the write did not carry: the lock was taken while the
    ///   write was on its way, and reached the server first. A file opened for writing gets
    ///   its lock in the background (`EditingLockKeeper`) while `futimens` or a quick save
    ///   goes, so `touch` would fail on our own lock. The write is sent once more, with the
    ///   token; a lock that is someone else's refuses it again.
    /// - it carried the item's own token (and `forgetsRefusedLock`): the server's lock is not
    ///   ours (ours ended), so it is forgotten.
    func lockedWrite<T>(of item: ItemIdentifier, wholeSite: Bool = false, forgetsRefusedLock: Bool = true,
                        _ send: (_ tokenHeaders: [(String, String)]) throws(ProviderError) -> T) throws(ProviderError) -> T {
        var sentAgain = false
        while true {
            let held = heldLocks.held(item)
            let tokens = heldLocks.tokens(for: item, wholeSite: wholeSite)
            writePause.withLock { $0 }?(item)
            do {
                return try send(tokens.isEmpty ? [] : [("Lock-Token", tokens.joined(separator: ", "))])
            } catch {
                guard case .locked = error else { throw error }
                let takenMeanwhile = !Set(heldLocks.tokens(for: item, wholeSite: wholeSite)).isSubset(of: tokens)
                if takenMeanwhile, !sentAgain {
                    sentAgain = true
                    continue
                }
                if forgetsRefusedLock, let held { heldLocks.drop(item, lockID: held.lockID) }
                throw error
            }
        }
    }

    /// Whole seconds the server grants (`LockRequestBody.timeoutRange`), rounded up.
    static func lockSeconds(_ timeout: Duration) -> Int {
        let (seconds, attoseconds) = timeout.components
        let whole = seconds + (attoseconds > 0 ? 1 : 0)
        return Int(min(max(whole, Int64(LockRequestBody.timeoutRange.lowerBound)), Int64(LockRequestBody.timeoutRange.upperBound)))
    }

    /// `text` without control characters, cut at a character boundary to what the server
    /// takes (`LockRequestBody.maximumTextBytes`): a long host name must not cost the lock.
    static func clipped(_ text: String) -> String {
        var result = ""
        var bytes = 0
        for character in text where !character.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            let size = character.utf8.count
            guard bytes + size <= LockRequestBody.maximumTextBytes else { break }
            result.append(character)
            bytes += size
        }
        return result
    }

    static let tokenCharacters = Set(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8))
}

import SitefsAPI
import SitefsCrypto

/// One row of `locks`: a lock for editing on a file (see `DocumentStore+Locks.swift`).
///
/// The token is kept only as its SHA-256 (`AccountStore.tokenHash`, as session tokens are):
/// a copy of the database lets nobody write as the holder.
struct LockRow: Sendable, Equatable {
    var itemID: Int64
    /// The public id (`ItemLock.id`).
    var lockID: String
    var tokenHash: String
    /// nil when the administrator took it.
    var holderUserID: Int64?
    var holder: String
    var holderName: String
    var device: String
    var application: String
    var createdAt: Int64
    var expiresAt: Int64

    /// The lock's columns under names no `items` column has, for joins and lock queries
    /// alike: `SELECT ..., \(LockRow.columns) FROM ... locks ...`.
    static let columns = """
        locks.item_id AS lock_item_id, locks.lock_id AS lock_id, locks.token_hash AS lock_token_hash,
        locks.holder_user_id AS lock_holder_user_id, locks.holder AS lock_holder, locks.holder_name AS lock_holder_name,
        locks.device AS lock_device, locks.application AS lock_application, locks.created_at AS lock_created_at,
        locks.expires_at AS lock_expires_at
        """

    /// The lock in a row selected with `columns`; nil when the row has none (a LEFT JOIN
    /// that found no live lock, or a query without the columns).
    init?(joined row: SQLRow) throws {
        guard let lockID = try row.optionalText("lock_id") else { return nil }
        self.lockID = lockID
        itemID = try row.int("lock_item_id")
        tokenHash = try row.text("lock_token_hash")
        holderUserID = try row.optionalInt("lock_holder_user_id")
        holder = try row.text("lock_holder")
        holderName = try row.text("lock_holder_name")
        device = try row.text("lock_device")
        application = try row.text("lock_application")
        createdAt = try row.int("lock_created_at")
        expiresAt = try row.int("lock_expires_at")
    }

    init(itemID: Int64, lockID: String, tokenHash: String, holderUserID: Int64?, holder: String, holderName: String,
         device: String, application: String, createdAt: Int64, expiresAt: Int64) {
        self.itemID = itemID
        self.lockID = lockID
        self.tokenHash = tokenHash
        self.holderUserID = holderUserID
        self.holder = holder
        self.holderName = holderName
        self.device = device
        self.application = application
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }

    /// The API's view: everything but the token.
    var api: ItemLock {
        ItemLock(id: lockID, holder: holder, holderName: holderName, device: device, application: application,
                 createdAt: Timestamp(microsecondsSinceEpoch: createdAt), expiresAt: Timestamp(microsecondsSinceEpoch: expiresAt))
    }

    /// Whether `caller` may break this lock without its token: the holder's own account
    /// (from any device) and the administrator.
    func mayBeBroken(by caller: Caller) -> Bool {
        caller.isAdministrator || (caller.userID != nil && caller.userID == holderUserID)
    }
}

/// The lock tokens a request carries (`Lock-Token`: one or more, comma-separated), as the
/// hashes `locks` stores. A write on a locked file goes through only when its lock's
/// token is among them; the same request may carry the tokens of several files (deleting a
/// folder with locked files in it).
public struct LockTokens: Sendable, Equatable {
    /// hash -> token.
    private let byHash: [String: String]

    public static let none = LockTokens(tokens: [])

    /// Most tokens one request may carry.
    public static let maximumCount = 64
    /// Longest token accepted; the server hands out 43 characters.
    public static let maximumLength = 128

    public init(tokens: [String]) {
        byHash = Dictionary(tokens.map { (AccountStore.tokenHash($0), $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The tokens in `Lock-Token` header values: 400 for more than `maximumCount`, or one
    /// that cannot be a token (empty, too long, not base64url).
    public static func parse(headerValues: [String]) throws -> LockTokens {
        var tokens: [String] = []
        for value in headerValues {
            for part in value.split(separator: ",", omittingEmptySubsequences: false) {
                let token = part.trimmingCharacters(in: .whitespaces)
                guard !token.isEmpty, token.utf8.count <= maximumLength,
                      token.utf8.allSatisfy({ Self.base64URL.contains($0) })
                else { throw APIError.badRequest("Lock-Token must be lock tokens (base64url) separated by commas", code: "bad_lock_token") }
                tokens.append(token)
            }
        }
        guard tokens.count <= maximumCount else {
            throw APIError.badRequest("Lock-Token carries at most \(maximumCount) tokens", code: "bad_lock_token")
        }
        return LockTokens(tokens: tokens)
    }

    private static let base64URL = Set(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8))

    public var isEmpty: Bool { byHash.isEmpty }

    /// The one token carried, when it is long enough for a client to have chosen it as a
    /// new lock's (`LockIdentity.minimumClientTokenLength`).
    var soleClientToken: String? {
        guard byHash.count == 1, let token = byHash.values.first, token.utf8.count >= LockIdentity.minimumClientTokenLength
        else { return nil }
        return token
    }

    /// The token that opens `lock`, if carried.
    func token(opening lock: LockRow) -> String? { byHash[lock.tokenHash] }

    func opens(_ lock: LockRow) -> Bool { byHash[lock.tokenHash] != nil }

    /// Throws 423 with the lock unless `row` has no live lock or these tokens open it.
    func requireOpen(_ row: ItemRow) throws {
        if let lock = row.lock, !opens(lock) { throw APIError.locked(lock.api) }
    }
}

extension APIError {
    /// 423: someone's lock for editing is in the way. `what`: the locked file when it is not
    /// the item the request names (a file inside a folder being deleted, the file a
    /// rename-over would replace).
    static func locked(_ lock: ItemLock, what: String? = nil) -> APIError {
        var message = "locked for editing by \(lock.holderName) since \(lock.createdAt.rfc3339)"
        if let what { message = "'\(what)' is \(message)" }
        var error = APIError(.init(code: 423, reasonPhrase: "Locked"), code: "locked", message)
        error.lock = lock
        return error
    }
}

import Foundation

import Crypto
import Foundation
import SitefsCrypto

/// Paging cursors, opaque to the client and bound to the caller.
///
/// A cursor holds a position in a sequence the whole server shares (the change feed's
/// sequence, items' list order): in the clear, a user polling the change feed could watch
/// how much happens in sites they cannot see. So a cursor is the position sealed
/// with AES-GCM under a key of the server's, with the caller's identity as authenticated
/// data: it reveals nothing, cannot be forged or altered, and one user's cursor is refused
/// for another (400 bad_cursor), as is a cursor of one listing given to another. The key
/// lives in the database, so cursors survive a restart and serve every instance of a server
/// that shares it.
struct CursorCodec: Sendable {
    enum Kind: String {
        case children = "c"
        case sites = "s"
        case changes = "f"
        /// `GET /v1/search`: several numbers and the search it belongs to (`SearchCursor`).
        case search = "q"
    }

    private let key: SymmetricKey

    init(key: SymmetricKey) {
        self.key = key
    }

    /// The server's cursor key (see `ServerSecrets`).
    static func load(from metadata: MetadataStore) throws -> CursorCodec {
        CursorCodec(key: SymmetricKey(data: try ServerSecrets.key(named: "cursor_key", in: metadata)))
    }

    func encode(_ kind: Kind, _ position: Int64, for caller: Caller) -> String {
        seal("\(kind.rawValue)1:\(position)", for: caller)
    }

    /// `plain` sealed for `caller` (what `open` gives back, to this caller only).
    func seal(_ text: String, for caller: Caller) -> String {
        let plain = Array(text.utf8)
        do {
            let sealed = try AES.GCM.seal(plain, using: key, authenticating: Self.binding(caller))
            return Base64URL.encode(Array(sealed.combined!))  // combined is always there with the default nonce
        } catch {
            fatalError("AES-GCM sealing failed: \(error)")  // only allocation failures get here
        }
    }

    func decode(_ kind: Kind, _ text: String, for caller: Caller) throws -> Int64 {
        let prefix = "\(kind.rawValue)1:"
        guard let plain = open(text, for: caller, maximumLength: 128),
              plain.hasPrefix(prefix), let position = Int64(plain.dropFirst(prefix.count)), position >= 0
        else { throw Self.badCursor }
        return position
    }

    /// What `seal` sealed for `caller`, or nil for anything else (altered, forged, another
    /// caller's, longer than `maximumLength` characters).
    func open(_ text: String, for caller: Caller, maximumLength: Int) -> String? {
        guard text.utf8.count <= maximumLength, let bytes = Base64URL.decode(text),
              let box = try? AES.GCM.SealedBox(combined: bytes),
              let opened = try? AES.GCM.open(box, using: key, authenticating: Self.binding(caller))
        else { return nil }
        return String(validating: Array(opened), as: UTF8.self)
    }

    static let badCursor = APIError.badRequest("cursor is not one this listing handed out to you", code: "bad_cursor")

    /// Who a cursor is for: the user, or an administrator by name.
    private static func binding(_ caller: Caller) -> [UInt8] {
        Array((caller.userID.map { "user:\($0)" } ?? "admin:\(caller.name)").utf8)
    }
}

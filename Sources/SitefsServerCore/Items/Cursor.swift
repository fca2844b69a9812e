import SitefsCrypto

/// Opaque paging cursors. Each names what it pages over, so a cursor from one listing
/// given to another is a clear 400 instead of a silently wrong page.
enum Cursor {
    enum Kind: String {
        case children = "c"
        case sites = "s"
        case changes = "f"
    }

    static func encode(_ kind: Kind, _ position: Int64) -> String {
        Base64URL.encode(Array("\(kind.rawValue)1:\(position)".utf8))
    }

    static func decode(_ kind: Kind, _ text: String) throws -> Int64 {
        let prefix = "\(kind.rawValue)1:"
        guard text.utf8.count <= 64, let bytes = Base64URL.decode(text), let plain = String(validating: bytes, as: UTF8.self),
              plain.hasPrefix(prefix), let position = Int64(plain.dropFirst(prefix.count)), position >= 0
        else { throw APIError.badRequest("cursor is not one this listing handed out", code: "bad_cursor") }
        return position
    }
}

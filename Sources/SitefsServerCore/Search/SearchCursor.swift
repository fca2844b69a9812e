import Crypto
import SitefsCrypto

/// A position in a search's order (rank class, modification time, id: `SearchRanking`),
/// sealed like every cursor (`CursorCodec`: opaque, bound to the caller) and bound to the
/// search too: a digest of its words and filters is inside, so a cursor given with another
/// query is `400 bad_cursor` rather than a position in an order it was not taken from.
struct SearchPosition: Sendable, Equatable {
    let rankClass: Int64
    let modifiedAt: Int64
    let id: Int64

    /// The longest sealed search cursor: the plain text is at most about 80 bytes.
    static let maximumCursorLength = 256

    func encode(with codec: CursorCodec, query: SearchQuery, for caller: Caller) -> String {
        codec.seal("\(CursorCodec.Kind.search.rawValue)1:\(Self.digest(query)):\(rankClass):\(modifiedAt):\(id)", for: caller)
    }

    static func decode(_ text: String, with codec: CursorCodec, query: SearchQuery, for caller: Caller) throws -> SearchPosition {
        guard let plain = codec.open(text, for: caller, maximumLength: maximumCursorLength) else { throw CursorCodec.badCursor }
        let parts = plain.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0] == "\(CursorCodec.Kind.search.rawValue)1", parts[1] == digest(query),
              let rankClass = Int64(parts[2]), (0...2).contains(rankClass),
              let modifiedAt = Int64(parts[3]), let id = Int64(parts[4]), id >= 0
        else { throw CursorCodec.badCursor }
        return SearchPosition(rankClass: rankClass, modifiedAt: modifiedAt, id: id)
    }

    private static func digest(_ query: SearchQuery) -> String {
        Base64URL.encode(Array(SHA256.hash(data: Array(query.identity.utf8)).prefix(9)))
    }
}

import SitefsCrypto

/// API item ids: a row id through a keyed permutation (`OpaqueNumber`), so an id reveals
/// nothing.
///
/// Row ids are one counter for the whole server. In the clear, a user who created a file
/// could tell from its id how many items had been made since, in sites they cannot see.
/// An API id is 22 base64url characters that show no number and no order; an id the
/// server did not hand out is simply not found (404), like an id of a site the caller was
/// not granted.
///
/// Ids are the same for every user: they name the item, so a link or a log line means the
/// same to everyone who may see it. Per-user ids would hide nothing more, since an id
/// carries no order, and would make one document many. The key lives in the database
/// (`ServerSecrets`), so ids survive restarts and every instance on the database agrees.
///
/// Inside the server ids stay row ids (`Int64`); this is the only place they become or
/// stop being API ids.
struct ItemIDCodec: Sendable {
    private let cipher: OpaqueNumber

    init(key: [UInt8]) {
        cipher = OpaqueNumber(key: key, domain: "item")
    }

    static func load(from metadata: MetadataStore) throws -> ItemIDCodec {
        ItemIDCodec(key: try ServerSecrets.key(named: "item_id_key", in: metadata))
    }

    /// The API id of the item with this row id.
    func apiID(for rowID: Int64) -> String { cipher.token(for: rowID) }

    /// The row id behind an API id, or nil for a string the server never handed out.
    func rowID(for apiID: String) -> Int64? { cipher.number(for: apiID) }
}

import SitefsAPI
import SitefsProvider
import SitefsStore

/// What one folder listing may take from a server, and the entries it may show.
///
/// Every loop a server drives has a bound: a server repeating its `next_cursor` would make
/// `readdir` ask without end (`du` stuck for minutes), and fresh cursors forever would grow
/// the daemon without limit. So a listing stops, with an error and a log line,
/// at a cursor it has seen before, past `maximumEntries` entries (the memory budget: under
/// 1 KiB per known entry), or past `maximumPages` pages.
///
/// Two entries with the same name (byte for byte) cannot both be shown: the first keeps it
/// and the later ones are left out with a log line.
struct ListingBounds {
    static let maximumEntries = 250_000

    enum Refusal: Error, CustomStringConvertible {
        case repeatedCursor
        case tooManyEntries
        case tooManyPages

        var description: String {
            switch self {
            case .repeatedCursor: return "the server repeated a page cursor (an endless listing); listing stopped"
            case .tooManyEntries: return "the folder has more than \(ListingBounds.maximumEntries) entries; sitefs lists no more"
            case .tooManyPages: return "the server sent more pages than the folder can have; listing stopped"
            }
        }
    }

    let maximumPages: Int
    /// False for the root: sites sharing a name are all shown, made unique (`SiteNames`).
    let deduplicating: Bool
    private var cursors: Set<PageToken> = []
    /// The first entry of each name, indexed by a hash of its bytes: a name is a duplicate
    /// when an entry it leads to has the same bytes. (A set of the names' bytes cost 100
    /// bytes an entry, a tenth of the memory budget; this costs about 16.)
    private var firstEntries = SlotIndex()
    private var pages = 0

    /// `pageSize`: the items asked for per page. A server may send fewer, but not so few
    /// that the largest listing needs more than four times the pages it would at that size.
    init(pageSize: Int, deduplicating: Bool = true) {
        maximumPages = max(64, Self.maximumEntries / max(pageSize, 1) * 4)
        self.deduplicating = deduplicating
    }

    /// Appends a page's entries to a listing being assembled, except names it shows already;
    /// returns those left out.
    mutating func append(_ page: FetchedPage, to listedNames: inout [String],
                         _ listedIdentifiers: inout [ItemIdentifier]) throws(Refusal) -> [String] {
        pages += 1
        guard pages <= maximumPages else { throw .tooManyPages }
        if let next = page.next {
            guard cursors.insert(next).inserted else { throw .repeatedCursor }
        }
        guard listedNames.count + page.names.count <= Self.maximumEntries else { throw .tooManyEntries }
        var duplicates: [String] = []
        for (name, identifier) in zip(page.names, page.identifiers) {
            if deduplicating {
                let hash = Self.byteHash(name)
                if firstEntries.slot(hash: hash, where: { ItemName.same(listedNames[$0], name) }) != nil {
                    duplicates.append(name)
                    continue
                }
                firstEntries.insert(listedNames.count, hash: hash)
            }
            listedNames.append(name)
            listedIdentifiers.append(identifier)
        }
        return duplicates
    }

    /// A hash of the name's bytes (String's own hash treats NFC and NFD as one).
    private static func byteHash(_ name: String) -> Int {
        var hasher = Hasher()
        var name = name
        name.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        return hasher.finalize()
    }
}

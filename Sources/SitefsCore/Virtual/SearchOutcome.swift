import Foundation
import SitefsAPI
import SitefsProvider
import SitefsStore

/// One search folder's answer, kept for a few seconds so that `ls` and the `open` after it
/// see the same entries (`SitefsFilesystem.searchOutcome`).
struct SearchOutcome: Sendable {
    enum Coverage: String, Sendable {
        /// The server searched names and document text over everything the user may see.
        case server
        /// The mount searched names over the folders it has listed (a server that does not
        /// search, or one that cannot be reached now).
        case listedNames = "listed_names"
    }

    var hits: [SearchFolderHit]
    var coverage: Coverage
    /// Said with the results: why only listed names were searched, or that there were more.
    var note: String?
    /// Why there are no results: a query the mount cannot run (a bad filter, an unknown
    /// site) or a server that failed.
    var error: String?
    var madeAt: ContinuousClock.Instant

    static func failed(_ message: String, at now: ContinuousClock.Instant) -> SearchOutcome {
        SearchOutcome(hits: [], coverage: .server, note: nil, error: message, madeAt: now)
    }

    /// The hit shown as `name` in the search folder.
    func hit(entryNamed name: FileName) -> SearchFolderHit? {
        hits.first { $0.entryName.map { FileName($0) == name } ?? false }
    }
}

/// One item found, where it is on the mount, and what the search folder calls it.
struct SearchFolderHit: Sendable {
    var item: ProviderItem
    /// From the site's name (as the mount root shows it) down to the item's own name.
    var path: [String]
    var matched: SearchMatch
    var snippet: String?
    /// Its name in the search folder: files only (a folder cannot have two parents in the
    /// kernel's tree); unique in the folder (see `SearchEntryNames`).
    var entryName: String?
}

/// Names in a search folder: a file's own name, unless another hit has it too; then
/// `stem (Site › Folder).ext`, which keeps the extension (programs open by it) and says
/// where each one is.
enum SearchEntryNames {
    static func assign(_ hits: inout [SearchFolderHit]) {
        var counts: [NameKey: Int] = [:]
        for hit in hits where hit.item.kind == .file { counts[NameKey(hit.item.name), default: 0] += 1 }
        var taken = Set<NameKey>()
        for index in hits.indices {
            guard hits[index].item.kind == .file else {
                hits[index].entryName = nil
                continue
            }
            let name = hits[index].item.name
            var candidate = counts[NameKey(name)] == 1 ? name : located(name, in: hits[index].path.dropLast())
            var counter = 2
            while taken.contains(NameKey(candidate)) || candidate.utf8.count > 255 {
                candidate = numbered(name, counter)
                counter += 1
            }
            taken.insert(NameKey(candidate))
            hits[index].entryName = candidate
        }
    }

    private static func located(_ name: String, in folders: ArraySlice<String>) -> String {
        let (stem, suffix) = split(name)
        return "\(stem) (\(folders.joined(separator: " › ")))\(suffix)"
    }

    private static func numbered(_ name: String, _ counter: Int) -> String {
        let (stem, suffix) = split(name)
        let ending = " (\(counter))\(suffix)"
        // Cut the stem (at a character) so the name fits in 255 bytes.
        var cut = stem
        while cut.utf8.count + ending.utf8.count > 255, !cut.isEmpty { cut.removeLast() }
        return cut + ending
    }

    /// "plan.final.pdf" -> ("plan.final", ".pdf"); a leading dot is not an extension.
    private static func split(_ name: String) -> (stem: String, suffix: String) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return (name, "") }
        let suffix = String(name[dot...])
        guard suffix.utf8.count <= 16 else { return (name, "") }
        return (String(name[..<dot]), suffix)
    }
}

/// What `user.sitefs.control.results` answers on a search folder (`sitefs search`), a page
/// at a time: an attribute's value is at most 64 KiB, so `next` names the attribute with the
/// rest (`user.sitefs.control.results:INDEX`).
struct SearchResultsAnswer: Encodable {
    struct Hit: Encodable {
        var entry: String?
        var path: String
        var matched: [String]
        var snippet: String?
        var modifiedAt: String
        var size: Int64
        var kind: String

        enum CodingKeys: String, CodingKey {
            case entry, path, matched, snippet, size, kind
            case modifiedAt = "modified_at"
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(entry, forKey: .entry)
            try c.encode(path, forKey: .path)
            try c.encode(matched, forKey: .matched)
            try c.encode(snippet, forKey: .snippet)
            try c.encode(modifiedAt, forKey: .modifiedAt)
            try c.encode(size, forKey: .size)
            try c.encode(kind, forKey: .kind)
        }
    }

    var coverage: String
    var note: String?
    var hits: [Hit]
    var next: String?
    var error: String?

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(coverage, forKey: .coverage)
        try c.encode(note, forKey: .note)
        try c.encode(hits, forKey: .hits)
        try c.encode(next, forKey: .next)
        try c.encode(error, forKey: .error)
    }

    enum CodingKeys: String, CodingKey { case coverage, note, hits, next, error }

    /// Room left for the hits of one answer (the attribute's limit is 64 KiB).
    static let pageBytes = 56_000

    /// The answer from hit `start` on, as many hits as fit in `pageBytes`.
    static func page(of outcome: SearchOutcome, from start: Int) -> [UInt8] {
        var answer = SearchResultsAnswer(coverage: outcome.coverage.rawValue, note: outcome.note, hits: [], next: nil,
                                         error: outcome.error)
        var used = 200 + (outcome.note?.utf8.count ?? 0) + (outcome.error?.utf8.count ?? 0)
        var index = max(0, start)
        let encoder = JSONEncoder()
        while index < outcome.hits.count {
            let hit = Hit(outcome.hits[index])
            let size = (try? encoder.encode(hit).count) ?? 0
            if used + size > pageBytes, !answer.hits.isEmpty {
                answer.next = String(index)
                break
            }
            used += size + 1
            answer.hits.append(hit)
            index += 1
        }
        return SitefsFilesystem.json(answer)
    }
}

extension SearchResultsAnswer.Hit {
    init(_ hit: SearchFolderHit) {
        var matched: [String] = []
        if hit.matched.contains(.name) { matched.append("name") }
        if hit.matched.contains(.content) { matched.append("content") }
        self.init(entry: hit.entryName, path: hit.path.joined(separator: "/"), matched: matched, snippet: hit.snippet,
                  modifiedAt: hit.item.modified.rfc3339, size: hit.item.kind == .file ? hit.item.size : 0,
                  kind: hit.item.kind == .file ? "file" : hit.item.kind == .symlink ? "symlink" : "folder")
    }
}

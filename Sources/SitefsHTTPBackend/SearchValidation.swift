import SitefsAPI
import SitefsProvider

/// A search page is checked before anything reaches the mount, as listings are
/// (`ResponseValidation`): each result's item as a listed item would be, and where the
/// server says it is. A result that fails is left out and its reason joins `refused`; only
/// an unusable cursor fails the page.
enum SearchValidation {
    /// Deepest path accepted (folders from the site down to the parent). Deeper trees exist
    /// nowhere a person could search them, and each level costs the mount a path lookup.
    static let maximumDepth = 256
    /// Most `matched` values one result may carry (there are two kinds today).
    static let maximumMatchValues = 16
    /// Longest snippet kept, in bytes; a longer one is cut at a character boundary.
    static let maximumSnippetBytes = 1024

    static func page(_ page: SearchResultPage, for query: SearchQuery, held: ResponseValidation.HeldLockIDs) throws(ProviderError)
        -> SearchPage {
        var hits: [SearchHit] = []
        var refused: [String] = []
        hits.reserveCapacity(page.results.count)
        for result in page.results {
            do throws(ProviderError) {
                hits.append(try hit(result, for: query, held: held, notes: &refused))
            } catch {
                refused.append(error.description)
            }
        }
        if let next = page.nextCursor {
            guard !next.isEmpty, next.utf8.count <= ResponseValidation.maximumCursorLength else {
                throw .invalidResponse("unusable search next_cursor (\(next.utf8.count) bytes)")
            }
        }
        return SearchPage(hits: hits, next: page.nextCursor.map(PageToken.init), refused: refused)
    }

    /// One result: its item valid, in the site asked about (if one was), its path leading
    /// from that site down to the item's parent through folders with usable ids and names,
    /// and `matched` naming where the words were ("name", "content"; kinds a newer server
    /// adds are ignored, as unknown capabilities are).
    static func hit(_ result: SearchResult, for query: SearchQuery, held: ResponseValidation.HeldLockIDs,
                    notes: inout [String]) throws(ProviderError) -> SearchHit {
        let item = try ResponseValidation.providerItem(result.item, held: held, notes: &notes)
        let label = "search result \(result.item.id.prefix(80))"
        if let site = query.site, item.identifier.site != site.site {
            throw .invalidResponse("\(label) is in site \(item.identifier.site.prefix(80)), not the one searched")
        }
        let ancestors = try path(result.path, of: item, label: label)
        guard result.matched.count <= maximumMatchValues else {
            throw .invalidResponse("\(label) says it matched in \(result.matched.count) ways")
        }
        var matched: SearchMatch = []
        for kind in result.matched {
            switch kind {
            case "name": matched.insert(.name)
            case "content": matched.insert(.content)
            default: break
            }
        }
        return SearchHit(item: item, ancestors: ancestors, matched: matched, snippet: result.snippet.map(cleanSnippet))
    }

    /// The ancestors a result's `path` names: empty for a site; otherwise the site first
    /// and the item's parent last, every id and name usable, none twice (a cycle).
    static func path(_ elements: [PathElement], of item: ProviderItem, label: String) throws(ProviderError)
        -> [(identifier: ItemIdentifier, name: String)] {
        guard item.kind != .site else {
            guard elements.isEmpty else { throw .invalidResponse("\(label) is a site, but has a path") }
            return []
        }
        guard !elements.isEmpty, elements.count <= maximumDepth else {
            throw .invalidResponse("\(label) has a path of \(elements.count) folders")
        }
        guard elements.first?.id == item.identifier.site else {
            throw .invalidResponse("\(label)'s path does not start at its site")
        }
        guard let parent = item.parent, elements.last?.id == parent.id else {
            throw .invalidResponse("\(label)'s path does not end at its parent")
        }
        var seen = Set<String>()
        var ancestors: [(identifier: ItemIdentifier, name: String)] = []
        ancestors.reserveCapacity(elements.count)
        for element in elements {
            guard !element.id.isEmpty, element.id.utf8.count <= maximumIDBytes, !element.id.hasPrefix(ItemIdentifier.localPrefix),
                  element.id != item.identifier.id, seen.insert(element.id).inserted
            else { throw .invalidResponse("\(label)'s path holds an unusable id \(element.id.prefix(80).debugDescription)") }
            if let violation = ItemName.violation(of: element.name) {
                throw .invalidResponse("\(label)'s path holds an unusable name (\(violation)): \(element.name.prefix(80).debugDescription)")
            }
            ancestors.append((ItemIdentifier(site: item.identifier.site, id: element.id), element.name))
        }
        return ancestors
    }

    /// Longest id accepted in a path (the server's are 22 characters).
    static let maximumIDBytes = 256

    /// A snippet as one line of text: whitespace controls (line breaks, tabs) become spaces,
    /// other controls go, and it is cut at a character boundary to `maximumSnippetBytes`.
    static func cleanSnippet(_ text: String) -> String {
        var result = ""
        var bytes = 0
        for character in text {
            var piece = character
            if character.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                guard character.isWhitespace else { continue }
                piece = " "
            }
            let size = piece.utf8.count
            guard bytes + size <= maximumSnippetBytes else { break }
            result.append(piece)
            bytes += size
        }
        return result
    }
}

import Foundation
import SitefsAPI
import SitefsProvider

/// Versions as `sitefs-server` keeps them (every content change keeps the one before; a
/// restore makes an old content the newest), and a search over names and text, for tests of
/// the core's search and versions folders.
extension InMemoryBackend {
    /// Whether `search` answers, or is refused like a WebDAV server's.
    public func setSearching(_ searches: Bool) { state.withLock { $0.searches = searches } }

    public var searchSupport: SearchSupport {
        state.withLock { $0.searches } ? .server : .unsupported(reason: "test: this server does not search")
    }

    /// Every word in the name (any part, case-insensitive) or the content (UTF-8), newest
    /// first, `limit` a page; the token is the index of the next hit.
    public func search(_ query: SearchQuery, after token: PageToken?, limit: Int) throws(ProviderError) -> SearchPage {
        try call("search")
        let (searches, nodes) = state.withLock { ($0.searches, $0.nodes) }
        guard searches else { throw .refused(status: 501, code: "search_unsupported", message: "test: this server does not search") }
        let words = query.words.lowercased().split(separator: " ").map(String.init)
        var hits: [SearchHit] = []
        for node in nodes.values.sorted(by: { ($0.item.modified, $0.position) > ($1.item.modified, $1.position) })
        where !node.item.identifier.isSite {
            if let site = query.site, node.item.identifier.site != site.site { continue }
            if let suffix = query.fileExtension, !node.item.name.lowercased().hasSuffix("." + suffix) { continue }
            if let since = query.modifiedSince, node.item.modified < since { continue }
            let name = node.item.name.lowercased()
            let text = String(decoding: node.content, as: UTF8.self).lowercased()
            guard words.allSatisfy({ name.contains($0) || text.contains($0) }) else { continue }
            var matched: SearchMatch = []
            if words.contains(where: { name.contains($0) }) { matched.insert(.name) }
            if words.contains(where: { text.contains($0) }) { matched.insert(.content) }
            var ancestors: [(identifier: ItemIdentifier, name: String)] = []
            var parent = node.item.parent
            while let here = parent, let folder = nodes[here], ancestors.count < 64 {
                ancestors.insert((here, folder.item.name), at: 0)
                parent = folder.item.parent
            }
            hits.append(SearchHit(item: node.item, ancestors: ancestors, matched: matched,
                                  snippet: matched.contains(.content) ? String(text.prefix(40)) : nil))
        }
        let start = token.flatMap { Int($0.rawValue) } ?? 0
        let end = min(hits.count, start + limit)
        return SearchPage(hits: Array(hits[min(start, end)..<end]), next: end < hits.count ? PageToken(String(end)) : nil)
    }

    public func versions(of file: ItemIdentifier) throws(ProviderError) -> [ItemVersion] {
        try call("versions")
        return try state.withLock { state throws(ProviderError) in
            guard let node = state.nodes[file] else { throw .notFound }
            guard node.item.kind == .file else { throw .refused(status: 400, code: "not_a_file", message: "only files have versions") }
            let current = ItemVersion(identifier: node.item.version, size: node.item.size, modified: node.item.modified,
                                      modifiedBy: node.item.modifiedBy)
            return [current] + node.history.reversed().map {
                ItemVersion(identifier: $0.version, size: Int64($0.content.count), modified: $0.modified, modifiedBy: $0.by)
            }
        }
    }

    public func restore(_ file: ItemIdentifier, version: String, baseVersion: String?) throws(ProviderError) -> ProviderItem {
        try call("restore")
        return try state.withLock { state throws(ProviderError) in
            guard var node = state.nodes[file] else { throw .notFound }
            if let baseVersion, baseVersion != node.item.version { throw .versionMismatch(current: node.item) }
            guard let old = node.history.first(where: { $0.version == version }) ?? (version == node.item.version
                ? StoredVersion(version: node.item.version, content: node.content, modified: node.item.modified, by: node.item.modifiedBy)
                : nil)
            else { throw .refused(status: 404, code: "no_such_version", message: "this file has no version '\(version)'") }
            node.keepVersion()
            node.content = old.content
            node.item.size = Int64(old.content.count)
            node.item.version = UUID().uuidString
            node.item.modified = .now()
            state.nodes[file] = node
            state.feed.append(.updated(node.item))
            return node.item
        }
    }
}

import Foundation
import Synchronization
import SitefsProvider

/// Where a folder stood on the mount when something was saved or made in it: every folder
/// from its site down to it, each by identifier and name. Recorded with each save and each
/// folder operation (and journaled with them), because the folder may be deleted on the
/// server before the upload goes, and the mount then forgets it: the chain is what the
/// uploader makes again (`Uploader.remakeFolders`), below the deepest of its folders that
/// still exists there. Edits win over deletes.
public struct FolderChain: Sendable, Equatable {
    public struct Link: Sendable, Equatable {
        public var identifier: ItemIdentifier
        public var name: String

        public init(identifier: ItemIdentifier, name: String) {
            self.identifier = identifier
            self.name = name
        }
    }

    /// From the site's own folder (first) to the folder itself (last); never empty.
    public let links: [Link]

    /// Deeper chains are not recorded (a cycle in what a server said, or a tree no person
    /// made): such a folder is not made again, and its content is rescued instead.
    public static let maximumDepth = 256

    /// Nil unless the chain starts at a site, stays in it and is no deeper than `maximumDepth`.
    public init?(_ links: [Link]) {
        guard let first = links.first, first.identifier.isSite, links.count <= Self.maximumDepth,
              links.allSatisfy({ $0.identifier.site == first.identifier.site && !$0.name.isEmpty && !$0.name.contains("/") })
        else { return nil }
        self.links = links
    }

    /// The folder the chain ends in.
    public var folder: ItemIdentifier { links[links.count - 1].identifier }

    /// "Site/Folder/Sub", as the mount shows it.
    public var path: String { links.map(\.name).joined(separator: "/") }

    /// The chain of a folder one level down, named `name`.
    public func appending(_ identifier: ItemIdentifier, named name: String) -> FolderChain? {
        FolderChain(links + [Link(identifier: identifier, name: name)])
    }

    /// The chain down to link `index` (0: the site alone).
    func prefix(through index: Int) -> FolderChain { FolderChain(Array(links[...index]))! }

    // MARK: In the journal

    private struct Stored: Codable {
        var id: String
        var name: String
    }

    /// JSON, one `{"id", "name"}` per link: the journal's `folders` column.
    var encoded: String {
        // Every save journals its folder's chain, and a program writing many files writes
        // them into one folder: the last chain encoded is kept and compared, not encoded again.
        // Compared as bytes: String's == takes "café" in NFC and in NFD for the same name.
        if let last = Self.lastEncoded.withLock({ $0 }), last.chain.isSameBytes(as: self) { return last.json }
        let stored = links.map { Stored(id: $0.identifier.id, name: $0.name) }
        let json = String(decoding: (try? JSONEncoder().encode(stored)) ?? Data("[]".utf8), as: UTF8.self)
        Self.lastEncoded.withLock { $0 = (self, json) }
        return json
    }

    /// Every identifier and name the same, byte for byte.
    private func isSameBytes(as other: FolderChain) -> Bool {
        links.count == other.links.count && zip(links, other.links).allSatisfy { mine, theirs in
            mine.name.utf8.elementsEqual(theirs.name.utf8) && mine.identifier.site.utf8.elementsEqual(theirs.identifier.site.utf8)
                && mine.identifier.id.utf8.elementsEqual(theirs.identifier.id.utf8)
        }
    }

    /// The chain `encoded` was last asked for, and its JSON. A leaf lock.
    private static let lastEncoded = Mutex<(chain: FolderChain, json: String)?>(nil)

    /// Read back from the journal; nil for what does not make a chain of `site`.
    init?(encoded: String?, site: String) {
        guard let encoded, let stored = try? JSONDecoder().decode([Stored].self, from: Data(encoded.utf8)) else { return nil }
        self.init(stored.map { Link(identifier: ItemIdentifier(site: site, id: $0.id), name: $0.name) })
    }
}

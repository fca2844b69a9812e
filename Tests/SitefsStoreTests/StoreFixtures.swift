import Foundation
import SitefsAPI
import SitefsProvider

/// Items and folders for the store's tests: one site ("1") with a folder "Plans".
enum Tree {
    static let site = ItemIdentifier.site("1")
    static let plans = ItemIdentifier(site: "1", id: "10")
    static let drawings = ItemIdentifier(site: "1", id: "11")

    static func item(_ id: String, _ name: String, in parent: ItemIdentifier? = plans, kind: ProviderItem.Kind = .file,
                     site: String = "1") -> ProviderItem {
        let time = Timestamp(microsecondsSinceEpoch: 1_700_000_000_000_000)
        return ProviderItem(identifier: ItemIdentifier(site: site, id: id), parent: parent, name: name, kind: kind, size: 1,
                            created: time, modified: time, createdBy: "test", modifiedBy: "test", version: "v\(id)",
                            capabilities: [.read, .write, .rename, .delete])
    }
}

/// A fresh folder in the temporary directory, removed by `remove()`.
struct ScratchFolder {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-store-\(UUID().uuidString.prefix(8))")

    init() throws {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    func remove() { try? FileManager.default.removeItem(at: url) }
}

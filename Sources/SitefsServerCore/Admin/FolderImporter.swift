import Foundation
import SitefsAPI

/// Copies a local folder tree into a site (`sitefs-server site add --import`).
///
/// The whole tree is checked first, so a name the API would refuse stops the import before
/// anything is created rather than leaving half a tree behind. Symbolic links and special
/// files are skipped and reported.
public struct FolderImporter {
    public struct Report: Sendable {
        public var folders = 0
        public var files = 0
        public var bytes: Int64 = 0
        public var skipped: [String] = []
    }

    public struct InvalidName: Error, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String { "cannot import '\(path)': \(reason)" }
    }

    let documents: DocumentStore
    let caller: Caller

    public init(documents: DocumentStore, caller: Caller) {
        self.documents = documents
        self.caller = caller
    }

    public func importTree(at root: URL, into parentID: String) async throws -> Report {
        var report = Report()
        let plan = try scan(root, report: &report)
        try await create(plan, in: parentID, report: &report)
        return report
    }

    private indirect enum Entry {
        case folder(name: String, children: [Entry])
        case file(name: String, url: URL)
    }

    private func scan(_ directory: URL, report: inout Report) throws -> [Entry] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        var entries: [Entry] = []
        for name in names {
            let url = directory.appendingPathComponent(name)
            if let violation = ItemName.violation(of: name) {
                throw InvalidName(path: url.path, reason: violation.description)
            }
            var info = stat()
            guard lstat(url.path, &info) == 0 else { throw POSIXFailure("stat \(url.path)") }
            switch info.st_mode & S_IFMT {
            case S_IFDIR: entries.append(.folder(name: name, children: try scan(url, report: &report)))
            case S_IFREG: entries.append(.file(name: name, url: url))
            default: report.skipped.append(url.path)
            }
        }
        return entries
    }

    private func create(_ entries: [Entry], in parentID: String, report: inout Report) async throws {
        for entry in entries {
            switch entry {
            case .folder(let name, let children):
                let folder = try await documents.createFolder(named: name, in: parentID, by: caller)
                report.folders += 1
                try await create(children, in: folder.id, report: &report)
            case .file(let name, let url):
                let file = try await documents.createFile(named: name, in: parentID, copying: URLPath(url: url), by: caller)
                report.files += 1
                report.bytes += file.size
            }
        }
    }
}

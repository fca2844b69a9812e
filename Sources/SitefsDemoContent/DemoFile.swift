/// One file of a demo site: where it goes and what it holds.
///
/// The path is kept as components rather than a slash-joined string so that callers
/// can create folders one level at a time and never have to split or escape names.
public struct DemoFile: Sendable, Equatable {
    /// Folder names from the site root down, then the file name as the last component.
    public let path: [String]
    public let contents: [UInt8]

    public init(path: [String], contents: [UInt8]) {
        precondition(!path.isEmpty, "a demo file needs at least a file name")
        self.path = path
        self.contents = contents
    }

    /// Convenience for plain-text files (README, CSV), stored as UTF-8.
    init(path: [String], text: String) {
        self.init(path: path, contents: Array(text.utf8))
    }

    /// The last path component.
    public var fileName: String { path[path.count - 1] }

    /// The folder components, empty for a file at the site root.
    public var folders: [String] { Array(path.dropLast()) }
}

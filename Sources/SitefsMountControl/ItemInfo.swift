import Foundation
import SitefsCommandLine

/// What `sitefs info` shows of one item: what `stat` says (kind, size) and the daemon's
/// `user.sitefs.*` attributes. An attribute the daemon does not have (an older daemon, a
/// WebDAV mount, a file not on the server yet) is simply left out.
public struct ItemInfo: Sendable, Equatable {
    /// The path as given (made absolute by the caller).
    public var path: String
    /// "file", "folder", "link" (from `lstat`).
    public var kind: String
    public var size: Int64
    /// Each attribute's text by its name without `user.sitefs.` (`id`, `version`, ...).
    public var attributes: [String: String]

    /// The attributes read, in the order they are shown.
    public static let attributeNames = ["state", "id", "version", "created_at", "created_by", "modified_at", "modified_by",
                                        "version_count", "lock"]

    public init(path: String, kind: String, size: Int64, attributes: [String: String]) {
        self.path = path
        self.kind = kind
        self.size = size
        self.attributes = attributes
    }

    /// `Name: value` lines, the values aligned; server text escaped, times local.
    public func lines(_ text: HumanText) -> [String] {
        var rows: [(String, String)] = [("Name", (path as NSString).lastPathComponent), ("Path", path), ("Kind", kind)]
        if kind == "file" { rows.append(("Size", HumanText.sizeWithBytes(size))) }
        if let state = attributes["state"] { rows.append(("State", state)) }
        if let created = attributes["created_at"] { rows.append(("Created", text.localTime(created))) }
        if let author = attributes["created_by"], !author.isEmpty { rows.append(("Created by", author)) }
        if let modified = attributes["modified_at"] { rows.append(("Modified", text.localTime(modified))) }
        if let author = attributes["modified_by"], !author.isEmpty { rows.append(("Modified by", author)) }
        if let count = versionCount { rows.append(("Versions", String(count))) }
        if let lock = attributes["lock"] { rows.append(("Locked", lock)) }
        if let id = attributes["id"] { rows.append(("Server id", id.isEmpty ? "none yet (not on the server yet)" : id)) }
        if let version = attributes["version"], !version.isEmpty { rows.append(("Version", version)) }
        let width = (rows.map(\.0.count).max() ?? 0) + 1
        return rows.map { name, value in
            (name + ":").padding(toLength: width, withPad: " ", startingAt: 0) + " " + TerminalText.escaped(value)
        }
    }

    /// `version_count` when it is a count.
    public var versionCount: Int? {
        attributes["version_count"].flatMap { Int($0) }.flatMap { $0 >= 0 ? $0 : nil }
    }

    /// `--json`: the same, attributes under their own names (times as RFC 3339, the count
    /// as a number), absent ones left out.
    public func json() -> String {
        var document: [String: JSONValue] = ["path": .text(path), "name": .text((path as NSString).lastPathComponent),
                                             "kind": .text(kind)]
        if kind == "file" { document["size"] = .number(size) }
        for name in Self.attributeNames where name != "version_count" {
            if let value = attributes[name] { document[name] = .text(value) }
        }
        if let count = versionCount { document["version_count"] = .number(Int64(count)) }
        return JSONText.encode(document)
    }

    enum JSONValue: Encodable {
        case text(String)
        case number(Int64)

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .text(let text): try container.encode(text)
            case .number(let number): try container.encode(number)
            }
        }
    }
}

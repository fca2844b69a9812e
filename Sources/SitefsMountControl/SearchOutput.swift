import Foundation
import SitefsCommandLine

/// How `sitefs search` shows hits. Every text that came from the server (paths, snippets,
/// notes) is escaped for the terminal (`TerminalText`) in the lines, and made safe in JSON
/// (`JSONText`); `-0` prints paths as they are, NUL-terminated, for `xargs -0`.
public struct SearchOutput: Sendable {
    /// The mount point, absolute, without a trailing slash (but `/` itself).
    public let mount: String
    /// The terminal's width in columns: lines longer than this get a shorter snippet. Nil:
    /// not a terminal, nothing shortened.
    public let width: Int?

    /// Shortest snippet worth showing, in characters; with less room, "text" alone.
    static let shortestSnippet = 12

    public init(mount: String, width: Int?) {
        self.mount = mount
        self.width = width
    }

    /// The hit's absolute path.
    public func fullPath(_ hit: SearchResultHit) -> String {
        (mount.hasSuffix("/") ? mount : mount + "/") + hit.path
    }

    /// `PATH  name, text: …snippet…`: the path whole, then where the words were, the
    /// snippet cut so the line fits the terminal.
    public func line(_ hit: SearchResultHit) -> String {
        let path = TerminalText.escaped(fullPath(hit))
        var places: [String] = []
        if hit.matched.contains("name") { places.append("name") }
        let snippet = hit.matched.contains("content") ? hit.snippet.map(Self.cleaned) ?? "" : ""
        if hit.matched.contains("content") && snippet.isEmpty { places.append("text") }
        let head = path + "  " + places.joined(separator: ", ")
        guard !snippet.isEmpty else { return places.isEmpty ? path : head }
        let prefix = head + (places.isEmpty ? "" : ", ") + "text: …"
        guard let width else { return prefix + snippet + "…" }
        let room = width - prefix.count - 1
        if snippet.count <= room { return prefix + snippet + "…" }
        guard room >= Self.shortestSnippet else { return head + (places.isEmpty ? "" : ", ") + "text" }
        return prefix + String(snippet.prefix(room)).trimmingCharacters(in: .whitespaces) + "…"
    }

    /// A snippet as one line: whitespace runs become one space, an ellipsis the server put at
    /// either end goes (the line adds its own), and what could drive the terminal is escaped.
    static func cleaned(_ snippet: String) -> String {
        var text = snippet.split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
        for mark in ["…", "..."] {
            if text.hasPrefix(mark) { text.removeFirst(mark.count) }
            if text.hasSuffix(mark) { text.removeLast(mark.count) }
        }
        return TerminalText.escaped(text.trimmingCharacters(in: .whitespaces))
    }

    /// `--json`: one document with every hit, paths absolute; `complete` false and `error`
    /// set when the daemon failed part way.
    public func json(searchFolder: String, coverage: String?, note: String?, hits: [SearchResultHit], error: String?) -> String {
        let document = SearchDocument(
            searchFolder: searchFolder, coverage: coverage, note: note,
            hits: hits.map { SearchDocument.Hit(path: fullPath($0), hit: $0) }, complete: error == nil, error: error)
        return JSONText.encode(document)
    }

    struct SearchDocument: Encodable {
        struct Hit: Encodable {
            var path: String
            var hit: SearchResultHit

            enum CodingKeys: String, CodingKey { case path, entry, matched, snippet, size, kind, modifiedAt = "modified_at" }

            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(path, forKey: .path)
                try container.encode(hit.entry, forKey: .entry)
                try container.encode(hit.matched, forKey: .matched)
                try container.encode(hit.snippet, forKey: .snippet)
                try container.encode(hit.size, forKey: .size)
                try container.encode(hit.kind, forKey: .kind)
                try container.encode(hit.modifiedAt, forKey: .modifiedAt)
            }
        }

        var searchFolder: String
        var coverage: String?
        var note: String?
        var hits: [Hit]
        var complete: Bool
        var error: String?

        enum CodingKeys: String, CodingKey { case coverage, note, hits, complete, error, searchFolder = "search_folder" }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(searchFolder, forKey: .searchFolder)
            try container.encode(coverage, forKey: .coverage)
            try container.encode(note, forKey: .note)
            try container.encode(hits, forKey: .hits)
            try container.encode(complete, forKey: .complete)
            try container.encode(error, forKey: .error)
        }
    }
}

/// JSON for a terminal: sorted keys, indented, and the characters JSON allows raw in
/// strings but a terminal would act on (DEL, the C1 controls, the Unicode line and paragraph
/// separators) written as `\uXXXX`, so printing the document is as safe as printing lines.
public enum JSONText {
    public static func encode(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "null" }
        return terminalSafe(String(decoding: data, as: UTF8.self))
    }

    static func terminalSafe(_ json: String) -> String {
        var result = ""
        result.unicodeScalars.reserveCapacity(json.unicodeScalars.count)
        for scalar in json.unicodeScalars {
            if (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029 {
                result += String(format: "\\u%04x", scalar.value)
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}

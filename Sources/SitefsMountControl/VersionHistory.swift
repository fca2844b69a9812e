import Foundation
import SitefsCommandLine
import SitefsCrypto

/// The daemon's answer to `user.sitefs.control.versions` on a file: its stored versions,
/// newest first, or why there are none to show.
public struct VersionsAnswer: Decodable, Sendable, Equatable {
    public var versions: [StoredVersion]
    public var error: String?

    public init(versions: [StoredVersion], error: String? = nil) {
        self.versions = versions
        self.error = error
    }
}

public struct StoredVersion: Codable, Sendable, Equatable {
    /// The full version id, as the server names it (what `restore` sends back).
    public var id: String
    /// RFC 3339.
    public var modifiedAt: String
    public var modifiedBy: String?
    public var size: Int64
    /// The file's content now.
    public var current: Bool

    public init(id: String, modifiedAt: String, modifiedBy: String?, size: Int64, current: Bool) {
        self.id = id
        self.modifiedAt = modifiedAt
        self.modifiedBy = modifiedBy
        self.size = size
        self.current = current
    }

    enum CodingKeys: String, CodingKey {
        case id, size, current
        case modifiedAt = "modified_at"
        case modifiedBy = "modified_by"
    }
}

/// A file's versions as `sitefs versions` and `sitefs restore` name them: each by a short
/// id, the first hex digits of the SHA-256 of its full id (uniform and typeable whatever
/// the server's ids look like: 32 hex digits, an ETag with quotes, size and time). Eight
/// digits, or as many more as it takes for no two versions to share one (all the same
/// length, so the column lines up).
public struct VersionHistory: Sendable {
    public let versions: [StoredVersion]
    /// Each version's SHA-256 in hex, in `versions`' order.
    public let hashes: [String]
    /// How many hex digits a short id has here.
    public let shortLength: Int

    public static let shortestID = 8
    /// Fewest digits a typed short id must have: fewer would too easily name a version by
    /// accident.
    public static let shortestTyped = 4

    /// `shortest`: the fewest digits a short id has (`shortestID`; tests give fewer, to see
    /// ids grow without searching for a 32-bit collision).
    public init(_ versions: [StoredVersion], shortest: Int = shortestID) {
        self.versions = versions
        hashes = versions.map { Hex.encode(SHA256.hash(Array($0.id.utf8))) }
        var length = min(max(shortest, 1), 64)
        // Grows until unique; two versions with the same id never are, so it stops at 64.
        while length < 64, Set(hashes.map { $0.prefix(length) }).count < hashes.count { length += 1 }
        shortLength = length
    }

    public func shortID(at index: Int) -> String {
        String(hashes[index].prefix(shortLength))
    }

    /// Where the current content is: the entry marked current, else the newest.
    public var currentIndex: Int { versions.firstIndex(where: \.current) ?? 0 }

    /// The version `argument` names: `-N` (N versions back from the current one), a full
    /// id, or a short id (at least `shortestTyped` hex digits, naming exactly one version).
    public func resolve(_ argument: String) throws(VersionChoiceError) -> Int {
        guard !versions.isEmpty else { throw .noVersions }
        if argument.hasPrefix("-") {
            guard let back = Int(argument.dropFirst()), back >= 1, String(back) == argument.dropFirst() else {
                throw .badBackCount(argument)
            }
            let index = currentIndex + back
            guard index < versions.count else { throw .notThatManyBack(back, available: versions.count - 1 - currentIndex) }
            return index
        }
        if let exact = versions.firstIndex(where: { $0.id == argument }) { return exact }
        let typed = argument.lowercased()
        guard typed.count >= Self.shortestTyped, typed.utf8.allSatisfy({ Self.hexDigits.contains($0) }) else {
            throw .unknown(argument)
        }
        let matches = hashes.indices.filter { hashes[$0].hasPrefix(typed) }
        guard matches.count <= 1 else { throw .ambiguous(argument, candidates: matches.map(shortID(at:))) }
        guard let match = matches.first else { throw .unknown(argument) }
        return match
    }

    static let hexDigits = Set(Array("0123456789abcdef".utf8))

    /// The table `sitefs versions` prints: short id, local time, author, size, and which is
    /// the current content; authors escaped for the terminal and cut at 40 characters.
    public func table(_ text: HumanText) -> [String] {
        let authors = versions.map { Self.author($0.modifiedBy) }
        let times = versions.map { TerminalText.escaped(text.localTime($0.modifiedAt)) }
        let sizes = versions.map { HumanText.size($0.size) }
        let idWidth = max(shortLength, "VERSION".count)
        let timeWidth = max(times.map(\.count).max() ?? 0, "MODIFIED".count)
        let authorWidth = max(authors.map(\.count).max() ?? 0, "BY".count)
        let sizeWidth = max(sizes.map(\.count).max() ?? 0, "SIZE".count)
        func row(_ id: String, _ time: String, _ author: String, _ size: String, _ marker: String) -> String {
            let cells = [Self.pad(id, idWidth), Self.pad(time, timeWidth), Self.pad(author, authorWidth),
                         String(repeating: " ", count: sizeWidth - size.count) + size]
            return (cells.joined(separator: "  ") + (marker.isEmpty ? "" : "  " + marker))
                .replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }
        var lines = [row("VERSION", "MODIFIED", "BY", "SIZE", "")]
        for index in versions.indices {
            lines.append(row(shortID(at: index), times[index], authors[index], sizes[index], versions[index].current ? "(current)" : ""))
        }
        return lines
    }

    /// How an author is shown: escaped, at most `longestAuthor` characters, "-" when unknown.
    static func author(_ name: String?) -> String {
        guard let name, !name.isEmpty else { return "-" }
        let escaped = TerminalText.escaped(name)
        return escaped.count <= longestAuthor ? escaped : String(escaped.prefix(longestAuthor - 1)) + "…"
    }

    static let longestAuthor = 40

    static func pad(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }

    /// "restored FILE to version 3f2a9c1e of 2026-11-27 11:14:03 by Anna Berger; it is now
    /// the newest version".
    public func restoredMessage(file: String, index: Int, _ text: HumanText) -> String {
        let version = versions[index]
        let author = version.modifiedBy.flatMap { $0.isEmpty ? nil : " by " + TerminalText.escaped($0) } ?? ""
        return "restored \(TerminalText.escaped(file)) to version \(shortID(at: index)) of "
            + "\(TerminalText.escaped(text.localTime(version.modifiedAt)))\(author); it is now the newest version"
    }

    /// `--json`: the versions with their short ids.
    public func json() -> String {
        struct Entry: Encodable {
            var short: String
            var version: StoredVersion
            enum CodingKeys: String, CodingKey { case short, id, size, current, modifiedAt = "modified_at", modifiedBy = "modified_by" }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(short, forKey: .short)
                try container.encode(version.id, forKey: .id)
                try container.encode(version.modifiedAt, forKey: .modifiedAt)
                try container.encode(version.modifiedBy, forKey: .modifiedBy)
                try container.encode(version.size, forKey: .size)
                try container.encode(version.current, forKey: .current)
            }
        }
        struct Document: Encodable { var versions: [Entry] }
        return JSONText.encode(Document(versions: versions.indices.map { Entry(short: shortID(at: $0), version: versions[$0]) }))
    }
}

/// Why a VERSION argument names no version, in words for the person who typed it.
public enum VersionChoiceError: Error, Equatable, CustomStringConvertible {
    case noVersions
    case badBackCount(String)
    case notThatManyBack(Int, available: Int)
    case unknown(String)
    case ambiguous(String, candidates: [String])

    public var description: String {
        switch self {
        case .noVersions:
            return "the server lists no versions of this file"
        case .badBackCount(let argument):
            return "\(TerminalText.escaped(argument)) is no version: -N goes N versions back (-1 is the one before the current)"
        case .notThatManyBack(let back, let available):
            return "there \(available == 1 ? "is 1 older version" : "are \(available) older versions"), not \(back)"
        case .unknown(let argument):
            return "no version of this file is \(TerminalText.escaped(argument)); `sitefs versions FILE` lists them"
        case .ambiguous(let argument, let candidates):
            return "\(TerminalText.escaped(argument)) could be \(candidates.joined(separator: " or ")); give more of it"
        }
    }
}

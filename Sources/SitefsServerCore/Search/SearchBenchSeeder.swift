import SitefsAPI

/// Synthetic documents written straight into the store, already indexed, for the search
/// bench (`sitefs-server bench-seed`, `scripts/bench`): 100,000 documents through the API
/// and the indexer would take the bench far longer than what it measures.
///
/// Not a way to import anything: the files have no content (no blob, no version), only
/// what search reads (names, folded names, times, indexed text). Deterministic: the same
/// count gives the same documents on both stores, so their figures compare.
public struct SearchBenchSeeder: Sendable {
    let storage: ServerStorage

    public init(storage: ServerStorage) {
        self.storage = storage
    }

    /// Rows per transaction (items, then their texts: well under both engines' limits on
    /// bound values per statement).
    static let batch = 500
    /// Files per folder.
    static let folderSize = 1000

    /// Creates site `site` and fills it with `documents` text files in folders of
    /// `folderSize`. Each text is 40-160 words of a 4,000-word vocabulary drawn with a
    /// skew (a few words are in most documents, most in few), and the file's name has two
    /// of them and its number.
    public func seed(site: String, documents: Int) async throws {
        let admin = Caller.administrator("bench")
        let siteItem = try await storage.documents.createSite(named: site, by: admin)
        guard let siteID = storage.documents.ids.rowID(for: siteItem.id) else { throw StoreFailure("the new site has no id") }
        var random = SplitMix(seed: 0x5EED)
        let vocabulary = Self.vocabulary(&random, count: 4000)
        var folder: Int64 = siteID
        var made = 0
        let start: Int64 = 1_700_000_000_000_000
        while made < documents {
            if made % Self.folderSize == 0 {
                folder = try await storage.documents.createFolder(named: "folder \(made / Self.folderSize)", in: siteItem.id, by: admin)
                    .id.flatMapRowID(storage.documents.ids)
            }
            let count = min(Self.batch, documents - made, Self.folderSize - made % Self.folderSize)
            var files: [(name: String, text: String, modified: Int64)] = []
            for index in made..<(made + count) {
                let words = (0..<(40 + Int(random.next() % 121))).map { _ in vocabulary[Self.skewed(&random, count: vocabulary.count)] }
                let name = "\(vocabulary[Self.skewed(&random, count: vocabulary.count)]) \(index) \(words[0]).txt"
                files.append((name, words.joined(separator: " "), start + Int64(index) * 1_000_000))
            }
            try await insert(files, site: siteID, folder: folder)
            made += count
        }
        // Statistics for the planner, as PostgreSQL's autovacuum would take them a while after
        // a bulk load (without them it scans the texts instead of using their index).
        try await storage.metadata.write { db in try db.execute(sql: "ANALYZE") }
    }

    private func insert(_ files: [(name: String, text: String, modified: Int64)], site: Int64, folder: Int64) async throws {
        try await storage.metadata.write { db in
            var values: [String] = []
            var arguments: [any SQLArgument] = []
            for file in files {
                let folded = FoldedName(file.name)
                // A list position of its own, so folder listings show the documents.
                values.append("(?, ?, ?, 'file', ?, 'text/plain', ?, ?, 'bench', 'bench', ?, NULL, ?, ?, ?)")
                arguments += [site, folder, file.name, file.text.utf8.count, file.modified, file.modified,
                              "bench-\(file.modified)", file.modified, folded.folded, folded.stem]
            }
            let rows = try db.rows(sql: """
                INSERT INTO items (site_id, parent_id, name, kind, size, content_type, created_at, modified_at, created_by,
                                   modified_by, etag, blob, list_seq, name_folded, name_stem)
                VALUES \(values.joined(separator: ", ")) RETURNING id, name
                """, arguments: arguments)
            var ids: [String: Int64] = [:]
            for row in rows { ids[try row.text("name")] = try row.int("id") }
            values = []
            arguments = []
            for file in files {
                guard let id = ids[file.name] else { throw StoreFailure("a seeded item has no id") }
                values.append("(?, ?, 'complete', NULL, ?, ?, ?)")
                arguments += [id, "bench-\(file.modified)", file.text, SearchFolding.indexWords(of: file.text).words, file.modified]
            }
            try db.execute(sql: """
                INSERT INTO search_text (item_id, etag, outcome, detail, text, words, indexed_at)
                VALUES \(values.joined(separator: ", "))
                """, arguments: arguments)
        }
    }

    /// Pronounceable made-up words, distinct.
    private static func vocabulary(_ random: inout SplitMix, count: Int) -> [String] {
        let onsets = ["b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "st", "tr", "pl", "gr"]
        let vowels = ["a", "e", "i", "o", "u", "ä", "é", "ou"]
        var words: [String] = []
        var seen = Set<String>()
        // Bounded: each round adds a word or repeats one; far more rounds than needed.
        for _ in 0..<(count * 20) where words.count < count {
            let syllables = 2 + Int(random.next() % 3)
            let word = (0..<syllables).map { _ in onsets[Int(random.next() % UInt64(onsets.count))] + vowels[Int(random.next() % UInt64(vowels.count))] }
                .joined()
            if seen.insert(word).inserted { words.append(word) }
        }
        return words
    }

    /// An index in 0..<count, small ones far more often (roughly Zipf-like).
    private static func skewed(_ random: inout SplitMix, count: Int) -> Int {
        let uniform = Double(random.next() % 1_000_000) / 1_000_000
        return min(count - 1, Int(Double(count) * uniform * uniform * uniform))
    }
}

/// A small deterministic generator (SplitMix64): the same seed, the same documents.
struct SplitMix {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

private extension String {
    func flatMapRowID(_ ids: ItemIDCodec) throws -> Int64 {
        guard let id = ids.rowID(for: self) else { throw StoreFailure("a new folder has no id") }
        return id
    }
}

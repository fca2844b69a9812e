/// The payload of a commit notification: the sites whose change feeds the write extended,
/// as decimal ids separated by commas, or `*` when they would not fit (PostgreSQL takes at
/// most 8000 bytes), which wakes every long-poll.
enum CommitPayload {
    static let limit = 7900

    static func encode(_ sites: Set<Int64>) -> String {
        let text = sites.sorted().map(String.init).joined(separator: ",")
        return text.utf8.count <= limit ? text : "*"
    }

    /// The sites, or nil (any) for `*` or anything this version does not read.
    static func decode(_ payload: String) -> Set<Int64>? {
        var sites: Set<Int64> = []
        for part in payload.split(separator: ",") {
            guard let site = Int64(part) else { return nil }
            sites.insert(site)
        }
        return sites.isEmpty ? nil : sites
    }
}

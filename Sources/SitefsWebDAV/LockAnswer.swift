/// The body of a LOCK answer (RFC 4918 §9.10.1): a `DAV:prop` holding the resource's
/// `DAV:lockdiscovery`, the lock just taken or refreshed among its `DAV:activelock`s (with
/// the timeout the server granted). Parsed by the multistatus parser's machinery, with its
/// limits and refusals (no DOCTYPE, bounded depth, text and size).
public enum LockAnswer {
    /// The locks the answer lists; empty when it lists none (an empty body, which a server
    /// may send for a refresh, is no error here: the caller knows what it asked for).
    public static func activeLocks(in body: [UInt8], limits: MultistatusParser.Limits = .init()) throws(DAVParseError) -> [DAVActiveLock] {
        guard body.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }) else { return [] }
        var locks: [DAVActiveLock] = []
        let parser = MultistatusParser(document: .lockAnswer, limits: limits) { answer in locks = answer.properties.locks }
        try parser.feed(body)
        try parser.finish()
        return locks
    }
}

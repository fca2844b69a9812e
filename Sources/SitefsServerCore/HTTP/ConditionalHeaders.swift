import Hummingbird

/// `If-Match`, `If-None-Match`, `ETag` and `Range` in the forms this API uses.
enum ConditionalHeaders {
    /// `"abc"` for an etag.
    static func quoted(_ etag: String) -> String { "\"\(etag)\"" }

    /// Entity tags listed in a header; weak ones are kept apart because `If-Match` compares
    /// strongly (a weak tag never matches) and `If-None-Match` weakly.
    private static func tags(in header: String) -> (strong: [String], weak: [String], any: Bool) {
        var strong: [String] = [], weak: [String] = [], any = false
        for raw in header.split(separator: ",") {
            var tag = raw.trimmingCharacters(in: .whitespaces)
            if tag == "*" { any = true; continue }
            let isWeak = tag.hasPrefix("W/")
            if isWeak { tag.removeFirst(2) }
            if tag.count >= 2, tag.hasPrefix("\""), tag.hasSuffix("\"") { tag = String(tag.dropFirst().dropLast()) }
            if isWeak { weak.append(tag) } else { strong.append(tag) }
        }
        return (strong, weak, any)
    }

    static func ifMatch(_ request: Request) -> VersionCondition? {
        guard let header = request.headers[.ifMatch] else { return nil }
        let parsed = tags(in: header)
        return parsed.any ? .any : .oneOf(parsed.strong)
    }

    /// True when `If-None-Match` names the current etag (the client's copy is current).
    static func ifNoneMatchHits(_ request: Request, etag: String) -> Bool {
        guard let header = request.headers[.ifNoneMatch] else { return false }
        let parsed = tags(in: header)
        return parsed.any || parsed.strong.contains(etag) || parsed.weak.contains(etag)
    }

    /// The byte range a `Range` header asks for, or nil for the whole content (no header,
    /// another unit, or several ranges, which this server answers with the whole content as
    /// RFC 9110 allows). Throws 416 for a single range outside the content.
    static func byteRange(_ request: Request, size: Int64) throws -> ClosedRange<Int64>? {
        guard let header = request.headers[.range] else { return nil }
        let value = header.trimmingCharacters(in: .whitespaces)
        guard value.lowercased().hasPrefix("bytes=") else { return nil }
        let spec = value.dropFirst("bytes=".count)
        guard !spec.contains(",") else { return nil }
        let bounds = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2 else { throw APIError.badRequest("malformed Range header", code: "bad_range") }
        let first = bounds[0].trimmingCharacters(in: .whitespaces), last = bounds[1].trimmingCharacters(in: .whitespaces)
        if first.isEmpty {
            guard let suffix = Int64(last), suffix >= 0 else { throw APIError.badRequest("malformed Range header", code: "bad_range") }
            guard suffix > 0, size > 0 else { throw APIError.rangeNotSatisfiable(size: size) }
            return max(0, size - suffix)...(size - 1)
        }
        guard let start = Int64(first), start >= 0 else { throw APIError.badRequest("malformed Range header", code: "bad_range") }
        let end: Int64
        if last.isEmpty {
            end = size - 1
        } else {
            guard let parsed = Int64(last), parsed >= start else { throw APIError.badRequest("malformed Range header", code: "bad_range") }
            end = min(parsed, size - 1)
        }
        guard start < size else { throw APIError.rangeNotSatisfiable(size: size) }
        return start...end
    }
}

import Foundation

import CCurl

/// The request header lines as the curl_slist libcurl reads during a transfer.
///
/// Built from the caller's headers plus the ones the client adds, and freed when the
/// transfer is over. Header values are copied into the list and never logged.
final class HeaderList {
    private(set) var raw: UnsafeMutablePointer<curl_slist>?

    init(for request: HTTPRequest, sendsBody: Bool) throws(HTTPClientError) {
        var hasExpect = false
        var hasContentType = false
        for (name, value) in request.headers {
            try Self.validate(name: name, value: value)
            let lower = name.lowercased()
            if lower == "content-length" || lower == "transfer-encoding" {
                // Framing comes from the body; a second opinion would corrupt the stream.
                throw .invalidRequest("header \(name) is set by the client from the body")
            }
            if lower == "expect" { hasExpect = true }
            if lower == "content-type" { hasContentType = true }
            // "Name:" tells libcurl to remove a header; "Name;" sends it with an empty value.
            try append(value.isEmpty ? "\(name);" : "\(name): \(value)")
        }
        if sendsBody && !hasExpect {
            // libcurl waits up to a second for "100 Continue" before sending a body larger
            // than 1 MiB (and on older versions, any body); an empty Expect disables that.
            try append("Expect:")
        }
        if request.method == .post && !hasContentType {
            // Otherwise libcurl labels every POST body application/x-www-form-urlencoded.
            try append("Content-Type:")
        }
    }

    deinit {
        curl_slist_free_all(raw)
    }

    /// Fails rather than silently sending a request without, say, its Authorization header.
    private func append(_ line: String) throws(HTTPClientError) {
        guard let extended = line.withCString({ curl_slist_append(raw, $0) }) else {
            throw .curl(code: Int(CURLE_OUT_OF_MEMORY.rawValue), message: "curl_slist_append failed")
        }
        raw = extended
    }

    /// Rejects what would split or corrupt the header block. The message names the header
    /// but never shows its value, which may be a credential.
    private static func validate(name: String, value: String) throws(HTTPClientError) {
        let nameIsToken = !name.isEmpty && name.utf8.allSatisfy { byte in
            byte > 0x20 && byte < 0x7f && byte != UInt8(ascii: ":")
        }
        guard nameIsToken else {
            throw .invalidRequest("header name \(name.debugDescription) is not a valid token")
        }
        guard !value.utf8.contains(where: { $0 == 0x0d || $0 == 0x0a || $0 == 0x00 }) else {
            throw .invalidRequest("value of header \(name) contains CR, LF or NUL")
        }
    }
}

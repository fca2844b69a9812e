import CCurl

/// libcurl's process-wide initialisation, done exactly once.
///
/// curl_global_init must run before any handle is made and, in older libcurl, not
/// concurrently with anything else; a static `let` is initialised lazily and thread-safely
/// by the Swift runtime, on first use from whichever worker thread gets there first.
enum CurlGlobal {
    private static let initResult: CURLcode = sitefs_curl_global_init()

    /// Initialises libcurl if needed; returns nil on success or the failure to report.
    static func ensureInitialized() -> HTTPClientError? {
        let code = initResult
        if code == CURLE_OK { return nil }
        return .curl(code: Int(code.rawValue), message: "curl_global_init failed: " + CurlErrorText.strerror(code))
    }
}

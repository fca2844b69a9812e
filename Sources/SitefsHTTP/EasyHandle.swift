import CCurl

/// Owns one libcurl easy handle and its connection cache.
///
/// A handle is used by one thread at a time (the pool guarantees it). Keeping it between
/// requests is what keeps connections alive: curl_easy_reset clears the options but keeps
/// open connections and the DNS cache.
final class EasyHandle {
    let raw: UnsafeMutableRawPointer

    init() throws(HTTPClientError) {
        if let failure = CurlGlobal.ensureInitialized() { throw failure }
        guard let raw = curl_easy_init() else {
            throw .curl(code: Int(CURLE_FAILED_INIT.rawValue), message: "curl_easy_init returned NULL")
        }
        self.raw = raw
    }

    deinit {
        curl_easy_cleanup(raw)
    }

    /// Clears every option set for the last request, so nothing (an upload flag, a freed
    /// header list, a dead context pointer) can leak into the next one.
    func reset() {
        curl_easy_reset(raw)
    }

    func set(_ option: CURLoption, _ value: Int) throws(HTTPClientError) {
        try check(sitefs_curl_easy_setopt_long(raw, option, value), option)
    }

    func set(_ option: CURLoption, _ value: Bool) throws(HTTPClientError) {
        try check(sitefs_curl_easy_setopt_long(raw, option, value ? 1 : 0), option)
    }

    func set(_ option: CURLoption, string value: String) throws(HTTPClientError) {
        // libcurl copies string options, so the temporary C string may go away afterwards.
        let code = value.withCString { sitefs_curl_easy_setopt_string(raw, option, $0) }
        try check(code, option)
    }

    func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer?) throws(HTTPClientError) {
        try check(sitefs_curl_easy_setopt_pointer(raw, option, value), option)
    }

    func set(_ option: CURLoption, size value: Int64) throws(HTTPClientError) {
        try check(sitefs_curl_easy_setopt_off_t(raw, option, curl_off_t(value)), option)
    }

    func set(_ option: CURLoption, headers value: UnsafeMutablePointer<curl_slist>?) throws(HTTPClientError) {
        try check(sitefs_curl_easy_setopt_slist(raw, option, value), option)
    }

    func set(_ option: CURLoption, callback: sitefs_curl_data_callback) throws(HTTPClientError) {
        try check(sitefs_curl_easy_setopt_data_callback(raw, option, callback), option)
    }

    func set(_ option: CURLoption, seekCallback: curl_seek_callback) throws(HTTPClientError) {
        try check(sitefs_curl_easy_setopt_seek_callback(raw, option, seekCallback), option)
    }

    func set(_ option: CURLoption, progressCallback: curl_xferinfo_callback) throws(HTTPClientError) {
        try check(sitefs_curl_easy_setopt_xferinfo_callback(raw, option, progressCallback), option)
    }

    /// Runs the configured transfer on the calling thread until it completes or fails.
    func perform() -> CURLcode {
        curl_easy_perform(raw)
    }

    func responseCode() -> Int {
        var value = 0
        guard sitefs_curl_easy_getinfo_long(raw, CURLINFO_RESPONSE_CODE, &value) == CURLE_OK else { return 0 }
        return value
    }

    private func check(_ code: CURLcode, _ option: CURLoption) throws(HTTPClientError) {
        guard code == CURLE_OK else {
            throw .curl(
                code: Int(code.rawValue),
                message: "setting option \(option.rawValue) failed: \(CurlErrorText.strerror(code))"
            )
        }
    }
}

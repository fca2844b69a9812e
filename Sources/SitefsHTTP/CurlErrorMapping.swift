import CCurl

/// Human-readable text for curl result codes.
enum CurlErrorText {
    static func strerror(_ code: CURLcode) -> String {
        String(cString: curl_easy_strerror(code))
    }
}

extension HTTPClientError {
    /// Classifies a failed curl_easy_perform so callers can retry exactly the transient cases.
    ///
    /// `detail` is the handle's error buffer (e.g. "Failed to connect to 127.0.0.1 port 9
    /// after 0 ms: Connection refused"); curl never puts request header values in it.
    static func fromCurl(_ code: CURLcode, detail: String) -> HTTPClientError {
        let generic = CurlErrorText.strerror(code)
        let message = detail.isEmpty ? generic : "\(detail) (\(generic))"
        switch code {
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .cannotConnect(message)
        case CURLE_OPERATION_TIMEDOUT:
            return .timedOut(message)
        case CURLE_PARTIAL_FILE, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING:
            return .connectionReset(message)
        default:
            return .curl(code: Int(code.rawValue), message: message)
        }
    }
}

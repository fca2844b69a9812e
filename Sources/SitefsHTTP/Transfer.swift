import CCurl

/// One request/response exchange on one checked-out easy handle.
///
/// Configures the handle from scratch (the pool reset it), runs the transfer on the calling
/// thread, and turns the outcome into a response or an error. The context and header list
/// stay alive until the handle has been reset, so libcurl never holds a dangling pointer.
struct Transfer {
    let handle: EasyHandle
    let url: String
    let timeouts: HTTPClient.Timeouts
    /// PEM file of the certificate authorities to trust for HTTPS; nil: the system's.
    let caFile: String?

    func run(_ request: HTTPRequest, into sink: ResponseSink) throws(HTTPClientError) -> HTTPResponse {
        if request.method == .head, request.body != .none {
            throw .invalidRequest("a HEAD request cannot carry a body")
        }
        let upload: UploadSource?
        switch request.body {
        case .none: upload = request.method.alwaysSendsBody ? UploadSource(bytes: []) : nil
        case .bytes(let bytes): upload = UploadSource(bytes: bytes)
        case .file(let path): upload = try UploadSource(filePath: path)
        }
        upload?.onProgress = request.onBodyProgress
        let headerList = try HeaderList(for: request, sendsBody: upload != nil)
        let context = TransferContext(receiver: try BodyReceiver(sink: sink), upload: upload, isCancelled: request.isCancelled)

        let userdata = Unmanaged.passRetained(context)
        defer {
            // Reset first, so libcurl drops its pointers to the context, the error buffer and
            // the header list before they are released.
            handle.reset()
            userdata.release()
            withExtendedLifetime(headerList) {}
        }
        try configure(request, headers: headerList, upload: upload, context: context, userdata: userdata.toOpaque())
        let code = handle.perform()

        if let failure = context.failure { throw failure }
        guard code == CURLE_OK else { throw HTTPClientError.fromCurl(code, detail: context.errorDetail) }
        let status = handle.responseCode()
        return HTTPResponse(
            status: status != 0 ? status : context.headerParser.status,
            headers: context.headerParser.headers,
            body: context.receiver.body,
            bodyLength: context.receiver.length
        )
    }

    private func configure(
        _ request: HTTPRequest, headers: HeaderList, upload: UploadSource?, context: TransferContext,
        userdata: UnsafeMutableRawPointer
    ) throws(HTTPClientError) {
        // Worker threads must not get SIGALRM (libcurl's timeout for blocking DNS) or SIGPIPE.
        try handle.set(CURLOPT_NOSIGNAL, true)
        try handle.set(CURLOPT_URL, string: url)
        try handle.set(CURLOPT_PROTOCOLS_STR, string: "http,https")
        // Certificates and host names are always checked (libcurl's defaults, stated here so
        // no later change turns them off); `caFile` only says whom to trust.
        try handle.set(CURLOPT_SSL_VERIFYPEER, true)
        try handle.set(CURLOPT_SSL_VERIFYHOST, 2)
        if let caFile { try handle.set(CURLOPT_CAINFO, string: caFile) }
        try handle.set(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1)
        // The caller's path is already encoded; libcurl must not squash "/../" or the like.
        try handle.set(CURLOPT_PATH_AS_IS, true)
        try handle.set(CURLOPT_FOLLOWLOCATION, false)
        try handle.set(CURLOPT_TCP_KEEPALIVE, true)

        try handle.set(CURLOPT_CONNECTTIMEOUT_MS, timeouts.connect.curlMilliseconds)
        try handle.set(CURLOPT_LOW_SPEED_LIMIT, max(timeouts.lowSpeedLimit, 1))
        try handle.set(CURLOPT_LOW_SPEED_TIME, timeouts.lowSpeedTime.curlSeconds)
        let overall = request.appliesOverallTimeout ? timeouts.overall.map { $0 + request.expectedWait } : nil
        try handle.set(CURLOPT_TIMEOUT_MS, overall?.curlMilliseconds ?? 0)

        try handle.set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(context.errorBuffer))
        try handle.set(CURLOPT_HEADERFUNCTION, callback: curlHeaderCallback)
        try handle.set(CURLOPT_HEADERDATA, pointer: userdata)
        try handle.set(CURLOPT_BUFFERSIZE, 512 << 10)  // received in larger pieces (default 16 KiB)
        try handle.set(CURLOPT_WRITEFUNCTION, callback: curlWriteCallback)
        try handle.set(CURLOPT_WRITEDATA, pointer: userdata)
        try handle.set(CURLOPT_HTTPHEADER, headers: headers.raw)
        if request.isCancelled != nil {
            try handle.set(CURLOPT_XFERINFOFUNCTION, progressCallback: curlProgressCallback)
            try handle.set(CURLOPT_XFERINFODATA, pointer: userdata)
            try handle.set(CURLOPT_NOPROGRESS, false)
        }

        try configureMethod(request.method, upload: upload, userdata: userdata)
    }

    /// Picks the libcurl mode for the method. Bodies always stream through the read
    /// callback with a known size, so libcurl sends Content-Length, never chunked encoding.
    private func configureMethod(
        _ method: HTTPMethod, upload: UploadSource?, userdata: UnsafeMutableRawPointer
    ) throws(HTTPClientError) {
        guard let upload else {
            switch method {
            case .get: try handle.set(CURLOPT_HTTPGET, true)
            case .head: try handle.set(CURLOPT_NOBODY, true)
            default: try handle.set(CURLOPT_CUSTOMREQUEST, string: method.rawValue)
            }
            return
        }
        // Bigger pieces than libcurl's 64 KiB default: fewer callbacks and writes per upload.
        try handle.set(CURLOPT_UPLOAD_BUFFERSIZE, 1 << 20)
        try handle.set(CURLOPT_READFUNCTION, callback: curlReadCallback)
        try handle.set(CURLOPT_READDATA, pointer: userdata)
        try handle.set(CURLOPT_SEEKFUNCTION, seekCallback: curlSeekCallback)
        try handle.set(CURLOPT_SEEKDATA, pointer: userdata)
        if method == .post {
            try handle.set(CURLOPT_POST, true)
            try handle.set(CURLOPT_POSTFIELDSIZE_LARGE, size: upload.size)
        } else {
            // UPLOAD makes a PUT with a body; CUSTOMREQUEST only renames the method.
            try handle.set(CURLOPT_UPLOAD, true)
            try handle.set(CURLOPT_INFILESIZE_LARGE, size: upload.size)
            if method != .put { try handle.set(CURLOPT_CUSTOMREQUEST, string: method.rawValue) }
        }
    }
}

import CCurl

/// Everything libcurl's callbacks need during one transfer, reached through their userdata
/// pointer.
///
/// The client retains it (via `Unmanaged`) only for the duration of curl_easy_perform, and
/// resets the handle before releasing it, so no callback can ever see a dangling pointer.
/// Only the thread running the transfer touches it.
final class TransferContext {
    var headerParser = ResponseHeaderParser()
    let receiver: BodyReceiver
    let upload: UploadSource?
    /// The request's cancellation check (see `HTTPRequest.isCancelled`).
    let isCancelled: (@Sendable () -> Bool)?
    /// The first failure a callback hit. libcurl only learns "the callback refused", so this
    /// is the error the caller sees instead of curl's generic write/read/abort error.
    var failure: HTTPClientError?
    /// CURLOPT_ERRORBUFFER: curl writes a specific message here when a transfer fails.
    let errorBuffer: UnsafeMutablePointer<CChar>

    init(receiver: BodyReceiver, upload: UploadSource?, isCancelled: (@Sendable () -> Bool)?) {
        self.receiver = receiver
        self.upload = upload
        self.isCancelled = isCancelled
        errorBuffer = .allocate(capacity: Int(SITEFS_CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(SITEFS_CURL_ERROR_SIZE))
    }

    deinit {
        errorBuffer.deallocate()
    }

    var errorDetail: String {
        String(cString: errorBuffer)
    }

    /// Recovers the context from a callback's userdata pointer without touching its retain count.
    static func from(_ pointer: UnsafeMutableRawPointer) -> TransferContext {
        Unmanaged<TransferContext>.fromOpaque(pointer).takeUnretainedValue()
    }
}

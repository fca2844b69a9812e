import CCurl
import Foundation

// The C callbacks libcurl calls during curl_easy_perform. They are top-level functions, so
// they capture nothing and convert to C function pointers; all per-request state arrives
// through the userdata pointer, which is an unretained `TransferContext` kept alive by the
// client for the whole transfer.

/// CURLOPT_HEADERFUNCTION: one complete header line per call.
func curlHeaderCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    let length = size * count
    guard let userdata else { return 0 }
    let context = TransferContext.from(userdata)
    context.headerParser.consume(line: UnsafeRawBufferPointer(start: data, count: length))
    return length
}

/// CURLOPT_WRITEFUNCTION: a piece of the response body. Returning fewer bytes than given
/// makes libcurl abort the transfer with CURLE_WRITE_ERROR.
func curlWriteCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    let length = size * count
    guard let userdata else { return 0 }
    let context = TransferContext.from(userdata)
    do {
        try context.receiver.receive(UnsafeRawBufferPointer(start: data, count: length), status: context.headerParser.status,
                                     declaredLength: context.headerParser.headers["Content-Length"].flatMap(Int.init))
        return length
    } catch {
        context.failure = error
        return SITEFS_CURL_WRITEFUNC_ERROR
    }
}

/// CURLOPT_READFUNCTION: fill the buffer with the next piece of the request body.
func curlReadCallback(
    _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    guard let userdata else { return SITEFS_CURL_READFUNC_ABORT }
    let context = TransferContext.from(userdata)
    guard let upload = context.upload else { return 0 }
    do {
        return try upload.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
    } catch {
        context.failure = error
        return SITEFS_CURL_READFUNC_ABORT
    }
}

/// CURLOPT_SEEKFUNCTION: rewind the request body when libcurl must send it again (e.g. a
/// kept-alive connection turned out to be closed). Only SEEK_SET is ever used by libcurl.
func curlSeekCallback(_ userdata: UnsafeMutableRawPointer?, _ offset: curl_off_t, _ origin: Int32) -> Int32 {
    guard let userdata, origin == SEEK_SET else { return SITEFS_CURL_SEEKFUNC_CANTSEEK }
    let context = TransferContext.from(userdata)
    guard let upload = context.upload, upload.seek(to: Int64(offset)) else { return SITEFS_CURL_SEEKFUNC_FAIL }
    return SITEFS_CURL_SEEKFUNC_OK
}

/// CURLOPT_XFERINFOFUNCTION: asks the request's cancellation check; non-zero makes libcurl
/// abort with CURLE_ABORTED_BY_CALLBACK. libcurl calls it at least once a second even when
/// no byte moves, so a stalled transfer is abandoned as promptly as a flowing one.
func curlProgressCallback(
    _ userdata: UnsafeMutableRawPointer?, _ downloadTotal: curl_off_t, _ downloaded: curl_off_t,
    _ uploadTotal: curl_off_t, _ uploaded: curl_off_t
) -> Int32 {
    guard let userdata else { return 0 }
    let context = TransferContext.from(userdata)
    guard let isCancelled = context.isCancelled, isCancelled() else { return 0 }
    if context.failure == nil { context.failure = .cancelled }
    return 1
}

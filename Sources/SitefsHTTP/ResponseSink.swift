/// Where a response body goes.
///
/// Only 2xx bodies reach a file or chunk sink. Any other status is an error document, which
/// goes to `HTTPResponse.body` (up to `errorBodyLimit` bytes, the rest dropped) so a 404's
/// JSON never overwrites part of a cached file.
public enum ResponseSink {
    /// Collect the body in memory, failing with `HTTPClientError.responseTooLarge` once more
    /// than `limit` bytes arrive: a JSON reply that large means something is wrong, and the
    /// limit keeps a misbehaving server from exhausting the daemon's memory.
    case memory(limit: Int = ResponseSink.defaultMemoryLimit)
    /// Write the body to an open descriptor with `pwrite`, starting at `offset`. The caller
    /// keeps ownership of the descriptor. Offsets make ranged downloads into a cache file safe.
    /// With `limit`, the body is bounded (see `DownloadLimit`).
    case fileDescriptor(Int32, offset: Int64, limit: DownloadLimit? = nil)
    /// Open the file before the request is sent (creating it with mode 0600 if needed, never
    /// truncating it) and write the body starting at `offset`.
    case file(path: String, offset: Int64)
    /// Hand each chunk to the caller as it arrives, on the calling thread. The buffer is only
    /// valid during the call. Throwing aborts the transfer with `HTTPClientError.sinkFailed`.
    case chunks((UnsafeRawBufferPointer) throws -> Void)
    /// As `chunks`, with the response's status (200 or 206, say) beside each chunk: a
    /// ranged download can tell a server that sent the range from one that sent everything.
    case statusChunks((Int, UnsafeRawBufferPointer) throws -> Void)

    /// How large a body written to a file may be: at most its Content-Length, which must fit
    /// on the disk with `reserve` bytes to spare, or `promised` bytes when the response has
    /// none (chunked). More fails the transfer with `HTTPClientError.responseTooLarge`, and
    /// no room with a local ENOSPC, so a server cannot fill the disk.
    public struct DownloadLimit: Sendable {
        public var promised: Int64
        public var reserve: Int64

        public init(promised: Int64, reserve: Int64 = DownloadLimit.defaultReserve) {
            self.promised = max(promised, 0)
            self.reserve = max(reserve, 0)
        }

        /// 256 MiB of a disk are left free by downloads: the rest of the system needs room.
        public static let defaultReserve: Int64 = 256 << 20
    }

    /// 16 MiB: far above any listing the API returns, far below a worrying allocation.
    public static let defaultMemoryLimit = 16 * 1024 * 1024
    /// How much of a non-2xx body is kept for the caller to read.
    public static let errorBodyLimit = 64 * 1024
}

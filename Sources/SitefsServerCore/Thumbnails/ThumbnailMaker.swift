import CVips

/// Makes a PNG thumbnail with libvips: the picture scaled to fit in a `box` x `box` square,
/// aspect kept, never enlarged, EXIF orientation applied, metadata stripped. Blocking CPU
/// work: callers run it through `ThumbnailGate`, never on a thread that serves requests.
///
/// libvips is thread-safe; it is started once per process, with only the loaders of
/// `ThumbnailFormat`'s formats allowed (see `sitefs_vips_start` in Sources/CVips/shim.h).
enum ThumbnailMaker {
    /// Pictures of more pixels are refused from their header alone: a compressed file of a
    /// few megabytes can declare a 100000 x 100000 image, which would hold a thumbnail slot
    /// for minutes. 256 megapixels is far above any camera's.
    static let maximumPixels: Int64 = 256 << 20

    /// Why no thumbnail could be made: libvips's own words (for the log, never the client).
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// libvips, started on first use (Swift runs a global's initialiser exactly once).
    private static let started: Result<Void, Failure> = {
        sitefs_vips_start() == 0 ? .success(()) : .failure(Failure(description: "libvips did not start: \(takeError())"))
    }()

    /// The thumbnail of an image or PDF file (a blob), read from disk as libvips needs it.
    static func png(ofFile path: String, box: Int32) throws(Failure) -> [UInt8] {
        try started.get()
        return try collect { out, length in sitefs_vips_thumbnail_file_png(path, box, maximumPixels, out, length) }
    }

    /// The thumbnail of an image in memory (an office document's preview picture).
    static func png(ofImage bytes: [UInt8], box: Int32) throws(Failure) -> [UInt8] {
        try started.get()
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(Failure) -> [UInt8] in
                try collect { out, length in
                    sitefs_vips_thumbnail_buffer_png(buffer.baseAddress, buffer.count, box, maximumPixels, out, length)
                }
            }
        }
        return try result.get()
    }

    /// Runs a wrapper that fills `out` with g_malloc'd bytes, copies them and frees them.
    private static func collect(
        _ call: (UnsafeMutablePointer<UnsafeMutableRawPointer?>, UnsafeMutablePointer<Int>) -> Int32
    ) throws(Failure) -> [UInt8] {
        var out: UnsafeMutableRawPointer?
        var length = 0
        guard call(&out, &length) == 0, let out else {
            throw Failure(description: takeError())
        }
        defer { sitefs_vips_free(out) }
        return Array(UnsafeRawBufferPointer(start: out, count: length))
    }

    private static func takeError() -> String {
        guard let text = sitefs_vips_take_error() else { return "libvips gave no reason" }
        defer { sitefs_vips_free(text) }
        let message = String(cString: text).split(whereSeparator: \.isNewline).joined(separator: "; ")
        return message.isEmpty ? "libvips gave no reason" : message
    }
}

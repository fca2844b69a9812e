import Foundation
import SitefsCrypto

#if canImport(Glibc)
import Glibc
#endif

/// The freedesktop thumbnail cache (Thumbnail Managing Standard), where file managers look
/// for a file's picture before they run a thumbnailer: `CACHE/thumbnails/SIZE/MD5.png`, the
/// MD5 of the file's URI, a PNG whose `Thumb::URI` and `Thumb::MTime` text chunks say which
/// file and which modification time it shows (a thumbnail whose MTime differs from the
/// file's is stale and ignored). The daemon files the server's pictures there, so an
/// online-only file gets a real thumbnail without its content being downloaded.
public struct ThumbnailCache: Sendable {
    /// The standard's sizes: the box a thumbnail fits in, and its folder.
    public enum Size: Int, Sendable, CaseIterable {
        case normal = 128, large = 256, xLarge = 512, xxLarge = 1024

        public var folder: String {
            switch self {
            case .normal: "normal"
            case .large: "large"
            case .xLarge: "x-large"
            case .xxLarge: "xx-large"
            }
        }
    }

    /// `$XDG_CACHE_HOME/thumbnails`.
    public let root: String

    public init(root: String) {
        self.root = root
    }

    /// The file's URI as GLib writes it (`g_filename_to_uri`): every byte outside
    /// `A-Za-z0-9` and `!$&'()*+,-./:=@_~` percent-encoded in upper-case hex. The cache is
    /// keyed by its exact text, so this must match what the file manager computes.
    public static func uri(ofPath path: String) -> String {
        var uri = "file://"
        for byte in path.utf8 {
            if unescaped.contains(byte) {
                uri.append(Character(Unicode.Scalar(byte)))
            } else {
                uri += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        return uri
    }

    private static let unescaped: Set<UInt8> = Set(
        Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!$&'()*+,-./:=@_~".utf8))

    /// Where the thumbnail of `uri` at `size` is kept.
    public func path(of uri: String, size: Size) -> String {
        root + "/" + size.folder + "/" + MD5.hexDigest(uri.utf8) + ".png"
    }

    /// Whether a thumbnail of `uri` for modification time `mtime` (seconds) is there. Only
    /// the file's head is read: the text chunks stand before the image data (this type
    /// writes them right after the header, as GNOME's thumbnail factory does).
    public func hasCurrent(_ uri: String, mtime: Int64, size: Size) -> Bool {
        guard let file = FileHandle(forReadingAtPath: path(of: uri, size: size)) else { return false }
        defer { try? file.close() }
        guard let head = try? file.read(upToCount: Self.headBytes) else { return false }
        let text = Self.textChunks(of: Array(head))
        return text["Thumb::URI"] == uri && text["Thumb::MTime"] == String(mtime)
    }

    /// Files `png` (the server's picture) as the thumbnail of `uri` at modification time
    /// `mtime`: text chunks added, written to a private temporary file and renamed into
    /// place (the standard's way: a reader never sees half a file). Folders 0700, file 0600.
    public func store(_ png: [UInt8], uri: String, mtime: Int64, size: Size) throws {
        guard let tagged = Self.adding([("Thumb::URI", uri), ("Thumb::MTime", String(mtime)), ("Software", "sitefs")], to: png) else {
            throw CocoaError(.fileReadCorruptFile)
        }
        let folder = root + "/" + size.folder
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let target = path(of: uri, size: size)
        let temporary = target + ".sitefs-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(tagged), attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown)
        }
        guard rename(temporary, target) == 0 else {
            unlink(temporary)
            throw CocoaError(.fileWriteUnknown)
        }
    }

    /// Removes the failed-thumbnail records of `uri` (`fail/APPLICATION/MD5.png`, one folder
    /// per thumbnailing program).
    public func forgetFailures(of uri: String) {
        let folder = root + "/fail"
        let name = MD5.hexDigest(uri.utf8) + ".png"
        for application in (try? FileManager.default.contentsOfDirectory(atPath: folder))?.prefix(100) ?? [] {
            unlink(folder + "/" + application + "/" + name)
        }
    }

    // MARK: PNG text chunks

    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    /// Enough of a thumbnail for its text chunks: the URI of the longest path (4,096 bytes,
    /// each escaped to 3 at most) and the rest.
    static let headBytes = 16 << 10

    /// `png` with a `tEXt` chunk per pair right after IHDR; nil when it is not a PNG.
    static func adding(_ pairs: [(String, String)], to png: [UInt8]) -> [UInt8]? {
        // Signature, then IHDR: length (13), type, 13 bytes, CRC.
        guard png.count > 33, png.starts(with: signature), png[12..<16].elementsEqual(Array("IHDR".utf8)) else { return nil }
        var result = Array(png[0..<33])
        for (keyword, text) in pairs {
            let data = Array(keyword.utf8) + [0] + Array(text.utf8)
            let typeAndData = Array("tEXt".utf8) + data
            result += bigEndian(UInt32(data.count)) + typeAndData + bigEndian(CRC32.checksum(typeAndData))
        }
        return result + png[33...]
    }

    /// The `tEXt` chunks of a PNG, up to its first IDAT; malformed input gives what was read.
    static func textChunks(of png: [UInt8]) -> [String: String] {
        guard png.starts(with: signature) else { return [:] }
        var text: [String: String] = [:]
        var offset = 8
        while offset + 8 <= png.count {
            let length = png[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: png[offset + 4..<offset + 8], as: UTF8.self)
            let start = offset + 8
            guard length >= 0, length <= png.count - start - 4, type != "IDAT" else { break }
            if type == "tEXt", let zero = png[start..<start + length].firstIndex(of: 0) {
                text[String(decoding: png[start..<zero], as: UTF8.self)] = String(decoding: png[(zero + 1)..<(start + length)], as: UTF8.self)
            }
            offset = start + length + 4
        }
        return text
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}

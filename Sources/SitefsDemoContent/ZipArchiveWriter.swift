import SitefsCrypto
/// Builds a ZIP archive in memory with STORED (uncompressed) entries only.
///
/// Office documents (ODF, OOXML) are ZIP containers and no ZIP library is available
/// to this package. Demo documents are a few KiB, so skipping DEFLATE costs nothing
/// that matters and keeps the writer small enough to verify by eye. Entries keep the
/// order they are added in, because ODF requires `mimetype` to be the first entry,
/// stored and without an extra field, so that its bytes sit at offset 38 where file
/// type sniffers look for them.
///
/// Not supported, because the demo never needs them: compression, ZIP64 (entries or
/// archives of 4 GiB and more, more than 65 535 entries), encryption and comments.
public struct ZipArchiveWriter: Sendable {
    /// Local headers and file data, in entry order: everything before the central directory.
    private var entryBytes: [UInt8] = []
    /// Central directory records, one per entry, appended as entries are added.
    private var centralDirectory: [UInt8] = []
    private var names: Set<String> = []
    private let timestamp: DOSTimestamp

    /// General purpose flag bit 11: names are UTF-8, so "työmaa.odt" survives unzipping.
    private static let utf8NamesFlag: UInt16 = 1 << 11
    /// 2.0 is the version every unzip tool accepts for plain stored entries.
    private static let versionNeeded: UInt16 = 20
    /// High byte 3 = Unix, so the external attributes below are read as file modes.
    private static let versionMadeBy: UInt16 = 3 << 8 | 20
    /// A regular file with mode 0644, so extracted files are not executable or private.
    private static let externalAttributes: UInt32 = 0o100644 << 16

    public init(timestamp: DOSTimestamp = .demo) {
        self.timestamp = timestamp
    }

    /// The number of entries added so far.
    public var entryCount: Int { names.count }

    /// Appends a file entry. Names use `/` as separator and must be unique, relative,
    /// and short enough for the 16-bit length field; violating that is a programming
    /// error in the caller, not a runtime condition, hence the preconditions.
    public mutating func addFile(named name: String, contents: [UInt8]) {
        let nameBytes = Array(name.utf8)
        precondition(!nameBytes.isEmpty && nameBytes.count <= Int(UInt16.max), "bad ZIP entry name length")
        precondition(!name.hasPrefix("/") && !name.contains("\\"), "ZIP entry names are relative and use /")
        precondition(names.insert(name).inserted, "duplicate ZIP entry name \(name)")
        precondition(names.count < Int(UInt16.max), "too many entries for a non-ZIP64 archive")
        precondition(contents.count < Int(UInt32.max), "entry too large for a non-ZIP64 archive")
        let localHeaderOffset = UInt32(exactly: entryBytes.count)
        precondition(localHeaderOffset != nil, "archive too large for a non-ZIP64 archive")

        let crc = CRC32.checksum(contents)
        let size = UInt32(contents.count)

        // Local file header (APPNOTE 4.3.7).
        entryBytes.appendLittleEndian(UInt32(0x0403_4B50))
        entryBytes.appendLittleEndian(Self.versionNeeded)
        entryBytes.appendLittleEndian(Self.utf8NamesFlag)
        entryBytes.appendLittleEndian(UInt16(0))  // compression method: stored
        entryBytes.appendLittleEndian(timestamp.time)
        entryBytes.appendLittleEndian(timestamp.date)
        entryBytes.appendLittleEndian(crc)
        entryBytes.appendLittleEndian(size)  // compressed size
        entryBytes.appendLittleEndian(size)  // uncompressed size
        entryBytes.appendLittleEndian(UInt16(nameBytes.count))
        entryBytes.appendLittleEndian(UInt16(0))  // extra field length
        entryBytes.append(contentsOf: nameBytes)
        entryBytes.append(contentsOf: contents)

        // Central directory file header (APPNOTE 4.3.12).
        centralDirectory.appendLittleEndian(UInt32(0x0201_4B50))
        centralDirectory.appendLittleEndian(Self.versionMadeBy)
        centralDirectory.appendLittleEndian(Self.versionNeeded)
        centralDirectory.appendLittleEndian(Self.utf8NamesFlag)
        centralDirectory.appendLittleEndian(UInt16(0))  // compression method: stored
        centralDirectory.appendLittleEndian(timestamp.time)
        centralDirectory.appendLittleEndian(timestamp.date)
        centralDirectory.appendLittleEndian(crc)
        centralDirectory.appendLittleEndian(size)
        centralDirectory.appendLittleEndian(size)
        centralDirectory.appendLittleEndian(UInt16(nameBytes.count))
        centralDirectory.appendLittleEndian(UInt16(0))  // extra field length
        centralDirectory.appendLittleEndian(UInt16(0))  // file comment length
        centralDirectory.appendLittleEndian(UInt16(0))  // disk number start
        centralDirectory.appendLittleEndian(UInt16(0))  // internal attributes
        centralDirectory.appendLittleEndian(Self.externalAttributes)
        centralDirectory.appendLittleEndian(localHeaderOffset!)
        centralDirectory.append(contentsOf: nameBytes)
    }

    /// Appends a file entry holding `text` encoded as UTF-8.
    public mutating func addFile(named name: String, text: String) {
        addFile(named: name, contents: Array(text.utf8))
    }

    /// The complete archive: entries, central directory and end-of-central-directory record.
    /// Non-mutating, so a writer can be finished, extended and finished again.
    public func finish() -> [UInt8] {
        let directoryOffset = UInt32(exactly: entryBytes.count)
        let directorySize = UInt32(exactly: centralDirectory.count)
        precondition(directoryOffset != nil && directorySize != nil, "archive too large for a non-ZIP64 archive")
        let count = UInt16(names.count)

        var archive = entryBytes
        archive.reserveCapacity(entryBytes.count + centralDirectory.count + 22)
        archive.append(contentsOf: centralDirectory)
        // End of central directory record (APPNOTE 4.3.16).
        archive.appendLittleEndian(UInt32(0x0605_4B50))
        archive.appendLittleEndian(UInt16(0))  // number of this disk
        archive.appendLittleEndian(UInt16(0))  // disk where the central directory starts
        archive.appendLittleEndian(count)  // entries on this disk
        archive.appendLittleEndian(count)  // entries in total
        archive.appendLittleEndian(directorySize!)
        archive.appendLittleEndian(directoryOffset!)
        archive.appendLittleEndian(UInt16(0))  // comment length
        return archive
    }
}

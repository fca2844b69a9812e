import SitefsCrypto
import SitefsDemoContent
import Testing

@Suite("ZIP archive writer")
struct ZipArchiveWriterTests {
    /// Entries chosen to cover an empty file, every byte value, and a UTF-8 name.
    static let sample: [(name: String, data: [UInt8])] = [
        ("mimetype", Array("application/x-test".utf8)),
        ("empty.txt", []),
        ("binary/all-bytes.bin", (0...255).map { UInt8($0) } + (0...255).reversed().map { UInt8($0) }),
        ("työmaa/päiväkirja.txt", Array("Päivän työt: muottien tarkastus.\n".utf8)),
    ]

    static func sampleArchive() -> [UInt8] {
        var writer = ZipArchiveWriter()
        for entry in sample { writer.addFile(named: entry.name, contents: entry.data) }
        return writer.finish()
    }

    @Test("an archive reads back with names, order, sizes, CRCs and data intact")
    func roundTrip() throws {
        let archive = Self.sampleArchive()
        let reader = try ZipTestReader(archive)
        #expect(reader.entries.map(\.name) == Self.sample.map(\.name))
        for (entry, expected) in zip(reader.entries, Self.sample) {
            #expect(entry.data == expected.data)
            #expect(entry.crc == CRC32.checksum(expected.data))
            #expect(entry.method == 0)
            #expect(entry.flags == 1 << 11, "UTF-8 name flag and nothing else")
            #expect(entry.localExtraLength == 0)
        }
        #expect(reader.entries.first?.localHeaderOffset == 0)
    }

    @Test("UTF-8 names are stored as UTF-8 bytes")
    func utf8Name() throws {
        let reader = try ZipTestReader(Self.sampleArchive())
        let entry = try #require(reader.entries.last)
        let nameBytes = Array(Self.sampleArchive()[(entry.localHeaderOffset + 30)..<(entry.dataOffset)])
        #expect(nameBytes == Array("työmaa/päiväkirja.txt".utf8))
    }

    @Test("the fixed DOS timestamp is written into every header")
    func timestamp() throws {
        let reader = try ZipTestReader(Self.sampleArchive())
        // 2024-05-06 07:00:00 → date (44 << 9 | 5 << 5 | 6), time (7 << 11).
        #expect(DOSTimestamp.demo.date == 22694)
        #expect(DOSTimestamp.demo.time == 14336)
        for entry in reader.entries {
            #expect(entry.date == 22694 && entry.time == 14336)
        }
        let custom = DOSTimestamp(year: 1999, month: 12, day: 31, hour: 23, minute: 59, second: 58)
        #expect(custom.date == UInt16(19 << 9 | 12 << 5 | 31))
        #expect(custom.time == UInt16(23 << 11 | 59 << 5 | 29))
    }

    @Test("an empty archive is just an end record")
    func emptyArchive() throws {
        let archive = ZipArchiveWriter().finish()
        #expect(archive == [0x50, 0x4B, 0x05, 0x06] + Array(repeating: 0, count: 18))
        #expect(try ZipTestReader(archive).entries.isEmpty)
    }

    @Test("the same input gives the same bytes, and finish can be called again after adding")
    func deterministic() throws {
        #expect(Self.sampleArchive() == Self.sampleArchive())
        var writer = ZipArchiveWriter()
        writer.addFile(named: "a.txt", text: "A")
        let first = writer.finish()
        writer.addFile(named: "b.txt", text: "B")
        let second = try ZipTestReader(writer.finish())
        #expect(try ZipTestReader(first).entries.map(\.name) == ["a.txt"])
        #expect(second.entries.map(\.name) == ["a.txt", "b.txt"])
        #expect(writer.entryCount == 2)
    }

    @Test("the end record counts entries and points at the central directory")
    func endRecord() throws {
        let archive = Self.sampleArchive()
        let end = archive.count - 22
        func u16(_ at: Int) -> Int { Int(archive[at]) | Int(archive[at + 1]) << 8 }
        func u32(_ at: Int) -> Int { u16(at) | u16(at + 2) << 16 }
        #expect(u32(end) == 0x0605_4B50)
        #expect(u16(end + 10) == Self.sample.count)
        let directoryOffset = u32(end + 16)
        #expect(u32(directoryOffset) == 0x0201_4B50)
        #expect(directoryOffset + u32(end + 12) == end)
    }
}

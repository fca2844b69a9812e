import Foundation
import SitefsProvider
import SitefsTestSupport
import Testing
@testable import SitefsCore

/// The remote reader's streams: every byte right, in two requests for a whole file, in a
/// few chunks of memory however large the file, and a stream the reader left resumed.
@Suite struct RemoteReaderTests {
    private func reader(size: Int, roomWait: TimeInterval = 30) -> (RemoteReader, InMemoryBackend, [UInt8]) {
        let content = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }
        let backend = InMemoryBackend()
        let site = backend.addSite("Harbour")
        let file = backend.add("film.bin", in: site, kind: .file, content: content)
        let version = (try? backend.item(file).version) ?? ""
        return (RemoteReader(identifier: file, version: version, size: Int64(size), backend: backend, maximumWindow: 16 << 20,
                             roomWait: roomWait), backend, content)
    }

    /// The most a reader may hold: its chunks and one spare.
    private var bound: Int { (RemoteReader.maximumChunks + 1) * RemoteReader.chunkSize }

    @Test(arguments: [128 << 10, 100_000, 1 << 20])
    func aSequentialReadIsRightInTwoRequestsAndBoundedMemory(readSize: Int) throws {
        let (reader, backend, content) = reader(size: 24 << 20)
        var offset = 0
        var most = 0
        while offset < content.count {
            let lease = try reader.lend(offset: Int64(offset), count: readSize)
            #expect(lease.bytes.elementsEqual(content[offset..<min(offset + readSize, content.count)]))
            offset += lease.bytes.count
            lease.end()
            most = max(most, reader.heldBytes)
        }
        reader.close()
        #expect(offset == content.count)
        #expect(most <= bound, "held \(most >> 10) KiB")
        // A short first request, then the rest in one.
        #expect(backend.fetchedRanges == [0...(128 << 10) - 1, Int64(128 << 10)...Int64(content.count - 1)])
    }

    @Test func readsAtEveryPlaceAndAcrossChunksGetTheirBytes() throws {
        let (reader, _, content) = reader(size: 6 << 20)
        let chunk = RemoteReader.chunkSize
        for (offset, count) in [(0, 4096), (chunk - 100, 300), (5 << 20, 1 << 20), (3 * chunk - 1, 2 * chunk + 2), (10, 1),
                                (content.count - 5, 100), (2 << 20, 70_000), (0, content.count)] {
            let lease = try reader.lend(offset: Int64(offset), count: count)
            #expect(lease.bytes.elementsEqual(content[offset..<min(offset + count, content.count)]), "at \(offset)")
            lease.end()
            #expect(reader.heldBytes <= bound)
        }
        // Nothing at or past the end, or before the start.
        for offset in [Int64(content.count), Int64(content.count) + 9, -1] {
            let lease = try reader.lend(offset: offset, count: 10)
            #expect(lease.bytes.isEmpty)
            lease.end()
        }
        reader.close()
    }

    /// The kernel's read-ahead is not aligned with the chunks: a read across a boundary is
    /// lent a piece of each chunk, in order, not copied into memory of its own.
    @Test func aReadAcrossAChunkBoundaryIsLentAPieceOfEachChunk() throws {
        let (reader, _, content) = reader(size: 4 << 20)
        // As `cat` reads: 16, 32 and 64 KiB first, then 128 KiB from 112 KiB on.
        var offset = 0
        var spanning = 0
        for count in [16 << 10, 32 << 10, 64 << 10] + Array(repeating: 128 << 10, count: 31) {
            let lease = try reader.lend(offset: Int64(offset), count: count)
            #expect(lease.count == count && lease.bytes.elementsEqual(content[offset..<(offset + count)]), "at \(offset)")
            let boundaries = (1...8).map { 128 << 10 + $0 * RemoteReader.chunkSize }.filter { offset < $0 && $0 < offset + count }
            #expect(lease.pieces.count == 1 + boundaries.count + (offset < 128 << 10 && offset + count > 128 << 10 ? 1 : 0),
                    "at \(offset)")
            if lease.pieces.count > 1 { spanning += 1 }
            var copied = [UInt8](repeating: 0, count: count)
            #expect(copied.withUnsafeMutableBytes { lease.copy(into: $0) } == count && copied.elementsEqual(content[offset..<(offset + count)]))
            offset += count
            lease.end()
        }
        reader.close()
        #expect(spanning >= 7)
    }

    @Test func aStreamTheReaderLeftIsAskedAgain() throws {
        // The stream fills its chunks and waits; the reader pauses longer than it waits.
        let (reader, backend, content) = reader(size: 8 << 20, roomWait: 0.2)
        let first = try reader.lend(offset: 0, count: 128 << 10)
        first.end()
        let second = try reader.lend(offset: 128 << 10, count: 128 << 10)
        second.end()
        Thread.sleep(forTimeInterval: 0.6)
        var offset = 256 << 10
        while offset < content.count {
            let lease = try reader.lend(offset: Int64(offset), count: 128 << 10)
            #expect(lease.bytes.elementsEqual(content[offset..<min(offset + (128 << 10), content.count)]))
            offset += lease.bytes.count
            lease.end()
        }
        reader.close()
        #expect(backend.fetchedRanges.count == 3)  // the short one, the one left, the one resumed
    }
}

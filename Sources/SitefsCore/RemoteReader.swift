import Foundation
import SitefsProvider

/// Serves a read-only open without a local copy: ranged requests as the reader goes, so
/// `head -c 4096` of a huge file fetches kilobytes while `cat` streams the rest in one
/// request. The version is pinned at open, so a reader keeps seeing the version it opened
/// even if the server gets a newer one meanwhile.
///
/// A read nothing is coming for starts a *stream*: one ranged GET on a thread of its own,
/// its bytes written into *chunks* of memory in order and served as soon as the bytes a read
/// asks for have arrived. A read at a new place asks for a small range
/// (`initialRange`); a read that goes on from where a stream ended (or from a stream it did
/// not start itself) starts one to the end of the file. A stream never holds more than
/// `maximumChunks` chunks: when they are full it waits, inside the transfer, for the reader
/// to pass one (TCP then holds the server back), so a `cat` of any size runs at the speed of
/// one GET in a few megabytes. Reads are lent straight out of the chunks (`lend`), a piece
/// of each chunk a read spans; only a read larger than a chunk is gathered into a buffer.
///
/// The kernel reads ahead on several threads at once and slightly out of order, so the
/// chunk behind the reader is kept, and a read far from every stream (a seek) starts a new
/// one and stops the old.
final class RemoteReader: @unchecked Sendable {
    let identifier: ItemIdentifier
    let version: String
    let size: Int64
    private let backend: any DocumentBackend
    /// The first request at a new place: a reader that reads a header and stops costs this.
    private let initialRange: Int
    /// Bytes in one chunk.
    static let chunkSize = 512 << 10
    /// Chunks held at most (in use, filled ahead, and the one behind the reader): with
    /// `spareStorages`, what one open file may take of memory, whatever it reads.
    static let maximumChunks = 6
    /// Memory of dropped chunks kept for the next ones: fresh memory for each cost a fifth of
    /// the daemon's CPU in `cat` (page faults zeroing pages).
    private static let spareStorages = 1
    /// How long a stream waits for the reader to make room before it gives up (the reader
    /// paused, or went away without closing): a later read starts a new one.
    private let roomWait: TimeInterval

    /// Memory a chunk is written into, reused by later chunks once its chunk is gone.
    private final class Storage: @unchecked Sendable {  // see Chunk for who touches which bytes
        let bytes: UnsafeMutableRawBufferPointer

        init(capacity: Int) {
            bytes = .allocate(byteCount: capacity, alignment: 64)
        }

        deinit { bytes.deallocate() }
    }

    /// Consecutive bytes of one stream. Only the stream's thread writes, and only beyond
    /// `filled`; readers read only below it; `filled` moves under `condition`, so a reader
    /// sees the bytes it covers.
    private final class Chunk: @unchecked Sendable {  // guarded as described above
        let range: ClosedRange<Int64>
        let storage: Storage
        /// The stream that writes it.
        let stream: Stream
        // Guarded by the reader's `condition`:
        var filled = 0
        /// Reads lent out of this chunk right now: its storage is not reused until they end.
        var lends = 0
        var dropped = false
        /// Still being written by its stream.
        var filling = true

        init(range: ClosedRange<Int64>, storage: Storage, stream: Stream) {
            self.range = range
            self.storage = storage
            self.stream = stream
        }

        /// The offset of the first byte not arrived yet (one past the range when full).
        var arrivedEnd: Int64 { range.lowerBound + Int64(filled) }
    }

    /// One ranged request in flight. Guarded by the reader's `condition`.
    private final class Stream: @unchecked Sendable {
        let range: ClosedRange<Int64>
        /// The next byte to arrive.
        var next: Int64
        /// The chunk being written.
        var chunk: Chunk?
        var ended = false
        /// Why it failed; nil when it ended with every byte, or was stopped.
        var error: ProviderError?
        /// Stopped by the reader (a seek elsewhere, the handle closed, no room for too long).
        var stopped = false
        /// The lowest byte a waiting read needs, if any read waits: the stream wakes readers
        /// only once that has arrived, not at every piece.
        var awaited: Int64?
        /// Waiting for the reader to free a chunk.
        var waitingForRoom = false

        init(range: ClosedRange<Int64>) {
            self.range = range
            next = range.lowerBound
        }

        /// Whether `offset` will arrive soon enough to wait for: inside the range, and within
        /// the memory ahead of what has come (further on, a new request is cheaper than
        /// streaming every byte up to it).
        func willCover(_ offset: Int64) -> Bool {
            !ended && !stopped && range.contains(offset) && offset >= next
                && offset - next < Int64(RemoteReader.chunkSize * RemoteReader.maximumChunks)
        }
    }

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var chunks: [Chunk] = []
    private var streams: [Stream] = []
    private var spares: [Storage] = []
    /// Last byte of the latest read: where the reader is.
    private var lastRead: Int64 = 0
    private var closed = false

    /// `maximumWindow`: at most this many bytes in the first request at a new place (the
    /// mount's read-ahead setting); never less than 128 KiB.
    /// `roomWait`: see `write` (30 s; tests shorten it).
    init(identifier: ItemIdentifier, version: String, size: Int64, backend: any DocumentBackend, maximumWindow: Int,
         roomWait: TimeInterval = 30) {
        self.identifier = identifier
        self.version = version
        self.size = size
        self.backend = backend
        initialRange = max(min(maximumWindow, 128 << 10), 4096)
        self.roomWait = roomWait
    }

    /// Bytes of chunk memory held now, spares included (tests: it stays bounded).
    var heldBytes: Int {
        condition.lock()
        defer { condition.unlock() }
        return (chunks.map(\.storage.bytes.count) + spares.map(\.bytes.count)).reduce(0, +)
    }

    /// Reads by copying into `buffer` (see `lend` for the copy-free way).
    func read(offset: Int64, count: Int, into buffer: UnsafeMutableRawBufferPointer) throws(ProviderError) -> Int {
        let lease = try lend(offset: offset, count: count)
        let copied = lease.copy(into: buffer)
        lease.end()
        return copied
    }

    /// The bytes at `offset` (at most `count`, fewer only at the end of the file), once they
    /// have arrived: lent out of the chunks that hold them, a piece from each.
    func lend(offset: Int64, count: Int) throws(ProviderError) -> ReadLease {
        guard offset >= 0, offset < size, count > 0 else { return ReadLease(bytes: UnsafeRawBufferPointer(start: nil, count: 0)) {} }
        let wanted = offset...(offset + min(Int64(count), size - offset) - 1)
        // A read larger than a chunk is gathered into a buffer of its own as its bytes come,
        // so the chunks it has passed can take more (it may be larger than all of them).
        let gathered = wanted.count > Self.chunkSize ? Gathered(wanted) : nil
        defer { gathered?.release() }
        condition.lock()
        defer { condition.unlock() }
        var own: Stream?
        while true {
            let part = (gathered?.position ?? wanted.lowerBound)...wanted.upperBound
            // Where the reader is now, also while it waits: what `trim` keeps is measured from here.
            lastRead = gathered == nil ? wanted.upperBound : part.lowerBound
            wakeStreamsWaitingForRoom()
            let (held, missing) = arrived(part)
            // A read served by a stream it did not start is the file being read on: only then
            // does a short stream go on to the end (`head -c 4096` asks for no more).
            if let last = held.last, last.stream !== own { continueStream(after: last.stream) }
            if let gathered {
                gathered.take(held, upTo: missing ?? wanted.upperBound + 1)
                if missing == nil { return gathered.lease() }
            } else if missing == nil {
                return lease(wanted, from: held)
            }
            guard let missing else { continue }
            if let stream = streams.first(where: { $0.willCover(missing) }) {
                let enough = gathered == nil ? wanted.upperBound : missing.saturatingAdd(Int64(Self.chunkSize) - 1)
                stream.awaited = min(stream.awaited ?? .max, min(enough, wanted.upperBound, stream.range.upperBound))
                condition.wait()
                continue
            }
            // This read's own stream failed before its bytes came: its error is the read's.
            // Reads that were waiting on someone else's stream (or on one stopped) come here
            // and start their own.
            if let own, own.ended, let error = own.error { throw error }
            own = startStream(at: missing, toEnd: continues(at: missing))
        }
    }

    /// The buffer a large read is gathered into, and how far it is filled.
    private final class Gathered {
        let wanted: ClosedRange<Int64>
        private var buffer: UnsafeMutableRawBufferPointer?
        /// The next byte to gather.
        private(set) var position: Int64

        init(_ wanted: ClosedRange<Int64>) {
            self.wanted = wanted
            buffer = .allocate(byteCount: wanted.count, alignment: 16)
            position = wanted.lowerBound
        }

        /// Copies the arrived bytes of `held` from `position` up to `end`.
        func take(_ held: [Chunk], upTo end: Int64) {
            guard let buffer else { return }
            for chunk in held where position < end && chunk.range.contains(position) {
                let start = Int(position - chunk.range.lowerBound)
                let count = Int(min(chunk.arrivedEnd, end) - position)
                guard count > 0 else { continue }
                let at = Int(position - wanted.lowerBound)
                UnsafeMutableRawBufferPointer(rebasing: buffer[at..<(at + count)])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: chunk.storage.bytes[start..<(start + count)]))
                position += Int64(count)
            }
        }

        /// The whole read, freed when the lease ends.
        func lease() -> ReadLease {
            let bytes = buffer!
            buffer = nil
            return ReadLease(bytes: UnsafeRawBufferPointer(bytes)) { bytes.deallocate() }
        }

        /// Frees the buffer unless a lease took it.
        func release() {
            buffer?.deallocate()
            buffer = nil
        }
    }

    /// The handle is closed: streams still running stop at their next piece.
    func close() {
        condition.lock()
        closed = true
        for stream in streams { stream.stopped = true }
        condition.broadcast()
        condition.unlock()
    }

    // MARK: Serving reads (all with `condition` locked)

    /// The chunks holding `wanted` from its start, in order, and its first byte not arrived
    /// yet (nil when all have).
    private func arrived(_ wanted: ClosedRange<Int64>) -> ([Chunk], Int64?) {
        var held: [Chunk] = []
        var position = wanted.lowerBound
        while position <= wanted.upperBound {
            guard let chunk = chunks.first(where: { $0.range.contains(position) && $0.arrivedEnd > position }) else {
                return (held, position)
            }
            held.append(chunk)
            position = chunk.arrivedEnd
        }
        return (held, nil)
    }

    /// `wanted`, all arrived in `held` (as `arrived` gives them: the chunks from its first
    /// byte on, in order, each starting within it), lent as a piece of each: no chunk is
    /// reused until the lease ends.
    private func lease(_ wanted: ClosedRange<Int64>, from held: [Chunk]) -> ReadLease {
        var pieces: [UnsafeRawBufferPointer] = []
        pieces.reserveCapacity(held.count)
        var position = wanted.lowerBound
        for chunk in held {
            let start = Int(position - chunk.range.lowerBound)
            let end = min(chunk.arrivedEnd, wanted.upperBound + 1)
            chunk.lends += 1
            pieces.append(UnsafeRawBufferPointer(rebasing: chunk.storage.bytes[start..<(start + Int(end - position))]))
            position = end
        }
        return ReadLease(pieces: pieces) { [self] in
            condition.lock()
            for chunk in held {
                chunk.lends -= 1
                if chunk.dropped && chunk.lends == 0 { recycle(chunk.storage) }
            }
            condition.unlock()
        }
    }

    /// Whether a stream starting at `offset` should run to the end of the file: the reader
    /// goes on from where a stream ended or is about to (within a chunk after it: the
    /// kernel's read-ahead comes slightly out of order).
    private func continues(at offset: Int64) -> Bool {
        func near(_ range: ClosedRange<Int64>) -> Bool {
            range.upperBound < offset && offset - range.upperBound <= Int64(Self.chunkSize)
        }
        return streams.contains { near($0.range) } || chunks.contains { near($0.range) }
    }

    /// Starts the rest of the file after a short stream, once, unless the reader is gone.
    private func continueStream(after stream: Stream) {
        let next = stream.range.upperBound + 1
        guard !closed, next < size, stream.range.upperBound < size - 1,
              !streams.contains(where: { $0.range.contains(next) && !$0.stopped }),
              !chunks.contains(where: { $0.range.contains(next) }) else { return }
        startStream(at: next, toEnd: true)
    }

    /// Starts a request at `offset`: to the end of the file, or `initialRange` bytes. A
    /// stream that would only compete with it for memory (anywhere else) is stopped.
    @discardableResult
    private func startStream(at offset: Int64, toEnd: Bool) -> Stream {
        let end = toEnd ? size - 1 : min(size, offset.saturatingAdd(Int64(initialRange))) - 1
        for other in streams where !other.range.contains(offset) && other.range.upperBound + 1 != offset { other.stopped = true }
        let stream = Stream(range: offset...end)
        streams.append(stream)
        condition.broadcast()  // stopped ones waiting for room go
        let thread = Thread { [self] in run(stream) }
        thread.name = "sitefs-read"
        thread.start()
        return stream
    }

    // MARK: Streams (their own threads)

    /// Writes the response into chunks as it arrives, publishing each piece (waking readers
    /// only when what one waits for has come). On failure the stream ends with its error for
    /// the read that started it; the bytes that came stay.
    private func run(_ stream: Stream) {
        let receive: @Sendable (UnsafeRawBufferPointer) throws -> Void = { [self] piece in try write(piece, from: stream) }
        var error: ProviderError?
        do throws(ProviderError) {
            let outcome = try backend.fetchContent(of: identifier, version: version, range: stream.range, ifNoneMatch: nil,
                                                   into: .pieces(limit: stream.range.count, receive: receive))
            condition.lock()
            let complete = stream.next == stream.range.upperBound + 1
            condition.unlock()
            guard case .fetched = outcome, complete else { throw .invalidResponse("short range response for \(identifier)") }
        } catch let failure {
            error = failure
        }
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        stream.ended = true
        if !stream.stopped { stream.error = error }
        stream.chunk?.filling = false
        stream.chunk = nil
        streams.removeAll { $0 === stream }
    }

    /// One piece of a stream's body, in order, into its chunks; waits for room when the
    /// stream is `maximumChunks` ahead, at most `roomWait` at a time (the transfer cannot
    /// time out while it waits here, so this is what ends it). Throws to stop the transfer.
    private func write(_ piece: UnsafeRawBufferPointer, from stream: Stream) throws {
        var rest = piece[...]
        while !rest.isEmpty {
            condition.lock()
            guard !closed, !stream.stopped else {
                condition.unlock()
                throw CancellationError()
            }
            guard stream.next + Int64(rest.count) <= stream.range.upperBound + 1 else {
                condition.unlock()
                throw ProviderError.invalidResponse("range overflow")
            }
            if stream.chunk.map({ $0.filled == $0.range.count }) ?? true {
                stream.chunk?.filling = false
                guard let chunk = newChunk(for: stream) else {
                    stream.waitingForRoom = true
                    let room = condition.wait(until: Date().addingTimeInterval(roomWait))
                    stream.waitingForRoom = false
                    if !room { stream.stopped = true }  // the reader paused: a later read asks again
                    condition.unlock()
                    continue
                }
                stream.chunk = chunk
            }
            let chunk = stream.chunk!
            let start = chunk.filled
            let count = min(rest.count, chunk.range.count - start)
            condition.unlock()
            UnsafeMutableRawBufferPointer(rebasing: chunk.storage.bytes[start..<(start + count)])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: rest.prefix(count)))
            condition.lock()
            chunk.filled += count
            stream.next += Int64(count)
            if let awaited = stream.awaited, awaited < stream.next {
                stream.awaited = nil
                condition.broadcast()
            }
            condition.unlock()
            rest = rest.dropFirst(count)
        }
    }

    /// The next chunk of `stream`, in memory a dropped chunk left or new, when fewer than
    /// `maximumChunks` are held once what nobody needs is dropped; nil while the reader has
    /// not passed enough. Call with `condition` locked.
    private func newChunk(for stream: Stream) -> Chunk? {
        trim(forWaitedOn: stream.awaited != nil)
        guard chunks.count < Self.maximumChunks else { return nil }
        let range = stream.next...(min(stream.range.upperBound, stream.next + Int64(Self.chunkSize) - 1))
        let storage = spares.popLast() ?? Storage(capacity: Self.chunkSize)
        let chunk = Chunk(range: range, storage: storage, stream: stream)
        chunks.append(chunk)
        return chunk
    }

    /// Drops the chunks nobody needs, farthest from the reader first, until there is room for
    /// one more: kept are those being written, those lent out, and those from the one behind
    /// the reader to as far ahead as a stream may fill. When a read waits on the stream that
    /// needs the room (`forWaitedOn`), only those written or lent now and the one the reader
    /// is in are kept: the others near the reader are left from earlier streams (a seek back),
    /// and keeping them would leave the read and its stream waiting on each other. Call with
    /// `condition` locked.
    private func trim(forWaitedOn waitedOn: Bool = false) {
        let behind = lastRead - Int64(Self.chunkSize)
        let ahead = lastRead.saturatingAdd(Int64(Self.chunkSize * Self.maximumChunks))
        func needed(_ chunk: Chunk) -> Bool {
            chunk.filling || chunk.lends > 0 || (chunk.range.upperBound >= behind && chunk.range.lowerBound <= ahead)
        }
        func distance(_ chunk: Chunk) -> Int64 {
            chunk.range.contains(lastRead) ? 0 : min(abs(chunk.range.lowerBound - lastRead), abs(chunk.range.upperBound - lastRead))
        }
        while chunks.count >= Self.maximumChunks,
              let farthest = chunks.filter({ !needed($0) }).max(by: { distance($0) < distance($1) }) {
            drop(farthest)
        }
        while waitedOn, chunks.count >= Self.maximumChunks,
              let farthest = chunks.filter({ !$0.filling && $0.lends == 0 && !$0.range.contains(lastRead) })
                  .max(by: { distance($0) < distance($1) }) {
            drop(farthest)
        }
    }

    /// A read moved on: a stream waiting for room may find some now. Call with `condition`
    /// locked.
    private func wakeStreamsWaitingForRoom() {
        if streams.contains(where: \.waitingForRoom) { condition.broadcast() }
    }

    /// Takes a chunk out of use; its memory is reused once no read has it lent. Call with
    /// `condition` locked.
    private func drop(_ chunk: Chunk) {
        chunks.removeAll { $0 === chunk }
        chunk.dropped = true
        if chunk.lends == 0 { recycle(chunk.storage) }
    }

    /// Keeps a chunk's memory for the next chunk, up to `spareStorages`. Call with
    /// `condition` locked.
    private func recycle(_ storage: Storage) {
        if spares.count < Self.spareStorages { spares.append(storage) }
        wakeStreamsWaitingForRoom()
    }
}

extension Int64 {
    /// `self + other`, held at `Int64.max` instead of trapping: offsets near the largest
    /// file size the kernel allows plus a window must not crash the daemon (a listed size of
    /// 2^63 - 1 read with `tail -c 10` would overflow).
    func saturatingAdd(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}

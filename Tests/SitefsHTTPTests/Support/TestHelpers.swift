import Foundation
import SitefsTestSupport
import Testing
@testable import SitefsHTTP

/// Runs `body` against a fresh server and always stops it, failing the test if its threads
/// do not end (a handler that hangs would otherwise go unnoticed).
func withTestServer<T>(_ body: (TestServer) throws -> T) throws -> T {
    let server = try TestServer(routes: TestRoutes.handle)
    defer { #expect(server.stop(), "test server threads did not stop") }
    return try body(server)
}

/// Timeouts small enough that a broken test fails in seconds rather than minutes.
let testTimeouts = HTTPClient.Timeouts(
    connect: .seconds(5), lowSpeedLimit: 1, lowSpeedTime: .seconds(10), overall: .seconds(60)
)

/// A fresh path under the temporary directory, removed by `removeTemporary`.
func temporaryPath(_ name: String) -> String {
    NSTemporaryDirectory() + "sitefs-http-tests-\(UUID().uuidString)-\(name)"
}

func removeTemporary(_ path: String) {
    unlink(path)
}

/// Writes `length` pattern bytes to `path`, in 1 MiB pieces.
func writePatternFile(_ path: String, length: Int) throws {
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard descriptor >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    defer { close(descriptor) }
    var offset = 0
    while offset < length {
        let piece = TestPattern.bytes(at: offset, count: min(1 << 20, length - offset))
        let written = piece.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == piece.count else { throw POSIXError(.EIO) }
        offset += piece.count
    }
}

/// FNV-1a 64 of `length` bytes of the file starting at `offset`.
func checksumOfFile(_ path: String, offset: Int, length: Int) throws -> UInt64 {
    let descriptor = open(path, O_RDONLY)
    guard descriptor >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    defer { close(descriptor) }
    var hash = FNV1a64()
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    var done = 0
    while done < length {
        let count = buffer.withUnsafeMutableBytes {
            pread(descriptor, $0.baseAddress, min($0.count, length - done), off_t(offset + done))
        }
        guard count > 0 else { throw POSIXError(.EIO) }
        buffer.withUnsafeBytes { hash.update(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        done += count
    }
    return hash.value
}

func fileSize(_ path: String) -> Int {
    var info = stat()
    return stat(path, &info) == 0 ? Int(info.st_size) : -1
}

func text(_ bytes: [UInt8]) -> String {
    String(decoding: bytes, as: UTF8.self)
}

/// Runs `work` on `count` plain threads (as FUSE would) and waits at most `timeout`.
/// Returns false if they did not all finish in time.
func runOnThreads(_ count: Int, timeout: TimeInterval, _ work: @escaping @Sendable (Int) -> Void) -> Bool {
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        Thread {
            work(index)
            group.leave()
        }.start()
    }
    return group.wait(timeout: .now() + timeout) == .success
}

/// Seconds taken by `body`, with its result.
func timed<T>(_ body: () throws -> T) rethrows -> (T, Double) {
    let start = ContinuousClock.now
    let result = try body()
    let elapsed = ContinuousClock.now - start
    return (result, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

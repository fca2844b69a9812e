import Foundation

/// A stand-in for systemd's notification socket: a unix datagram socket in a temp folder
/// that `NOTIFY_SOCKET` names, read by the test instead of a service manager.
final class NotifySocket {
    let path: String
    private let descriptor: Int32

    init(in folder: URL) throws {
        path = folder.appendingPathComponent("notify.sock").path
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw POSIXError(.ENAMETOOLONG) }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    }

    deinit { close(descriptor) }

    /// The next datagram, waiting at most `timeout` (zero: only one already there).
    func receive(timeout: Duration) -> String? {
        var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        guard poll(&ready, 1, milliseconds) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }

    /// Datagrams until one holds `line` (as a whole line), or nil after `timeout`.
    func waitFor(_ line: String, timeout: Duration = .seconds(30), seen: inout [String]) -> String? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard let message = receive(timeout: min(deadline - ContinuousClock.now, .milliseconds(200))) else { continue }
            seen.append(message)
            if message.split(separator: "\n").contains(Substring(line)) { return message }
        }
        return nil
    }
}

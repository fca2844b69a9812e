import Glibc

/// The few lines of systemd's notification protocol a `Type=notify` service needs
/// (sd_notify(3)): datagrams such as `READY=1` or `STATUS=...` sent to the unix socket named
/// by `$NOTIFY_SOCKET` (a path, or `@name` for the abstract namespace).
///
/// Outside systemd the variable is unset and every call does nothing. The variable is
/// taken out of the environment when first read, so programs this process starts (a
/// notification helper, fusermount3) cannot talk to the service manager in its name.
public final class ServiceManagerNotifier: Sendable {
    public static let shared = ServiceManagerNotifier(socketPath: takeSocketPathFromEnvironment())

    private let address: sockaddr_un?
    private let addressLength: socklen_t

    public init(socketPath: String?) {
        guard let socketPath, socketPath.hasPrefix("/") || socketPath.hasPrefix("@") else {
            address = nil
            addressLength = 0
            return
        }
        var bytes = Array(socketPath.utf8)
        if bytes[0] == UInt8(ascii: "@") { bytes[0] = 0 }  // the abstract namespace starts with a NUL byte
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else {
            self.address = nil
            addressLength = 0
            return
        }
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            for (index, byte) in bytes.enumerated() { path[index] = byte }
        }
        self.address = address
        addressLength = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (bytes[0] == 0 ? 0 : 1))
    }

    /// Whether a service manager is listening (the daemon runs under `Type=notify`).
    public var isActive: Bool { address != nil }

    /// The mount (or server) is up: systemd finishes starting the unit.
    public func ready(status: String) { send("READY=1\nSTATUS=\(status)") }

    /// A line for `systemctl status`.
    public func status(_ text: String) { send("STATUS=\(text)") }

    /// Shutting down: systemd shows the unit as deactivating.
    public func stopping(status: String) { send("STOPPING=1\nSTATUS=\(status)") }

    /// One datagram; failures are ignored, as sd_notify's callers do (a vanished manager is
    /// no reason to stop serving). Newlines in a status would start a new assignment, so
    /// callers pass single lines.
    public func send(_ message: String) {
        guard var address else { return }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let bytes = Array(message.utf8)
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                sendto(descriptor, bytes, bytes.count, Int32(MSG_NOSIGNAL), socketAddress, addressLength)
            }
        }
    }

    private static func takeSocketPathFromEnvironment() -> String? {
        guard let value = getenv("NOTIFY_SOCKET") else { return nil }
        let path = String(cString: value)
        unsetenv("NOTIFY_SOCKET")
        return path
    }
}

import CLinux
import Foundation
import Glibc
import Logging
import SitefsCore
import Synchronization

/// Tells the file manager's extension when an item's state changes, so its emblem follows
/// within a moment without the extension asking every file again and again.
///
/// A Unix stream socket in the mount's cache folder (private: the folder is 0700, the
/// socket 0600), found through `user.sitefs.events` on the mount root. Each listener gets a
/// JSON line per change (`{"path":"Site/Forms/a.odt","state":"uploading"}`, `state` null:
/// look again). A listener that connects when none was connected first gets every item
/// whose state is not "online-only". The daemon asks the core for changes every
/// `interval` while someone listens, and not at all otherwise. A listener that does not
/// keep up (its socket buffer full) is dropped: it connects again and reads the states
/// afresh. One thread does all of it.
final class StateEventServer: @unchecked Sendable {
    static let interval: Int32 = 250  // milliseconds
    /// Listeners at once (each file manager window's process needs one).
    static let maximumListeners = 32

    let path: String
    private let listener: Int32
    private let logger: Logger
    private let changes: @Sendable (inout ToldStates) -> [StateChange]
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    /// Binds the socket; nil (logged) when it cannot be made, and the mount goes on without.
    init?(path: String, logger: Logger, changes: @escaping @Sendable (inout ToldStates) -> [StateChange]) {
        self.path = path
        self.logger = logger
        self.changes = changes
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else {
            logger.warning("state events: the socket path \(path) is longer than \(capacity - 1) bytes; emblems will not update by themselves")
            return nil
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let socketDescriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socketDescriptor >= 0 else {
            logger.warning("state events: socket: \(String(cString: strerror(errno)))")
            return nil
        }
        unlink(path)  // a dead daemon's
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketDescriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, chmod(path, 0o600) == 0, listen(socketDescriptor, 8) == 0 else {
            logger.warning("state events: cannot listen on \(path): \(String(cString: strerror(errno)))")
            close(socketDescriptor)
            return nil
        }
        listener = socketDescriptor
    }

    func start() {
        let thread = Thread { [self] in
            serve()
            finished.signal()
        }
        thread.name = "sitefs-state-events"
        thread.start()
    }

    /// Ends the thread at once (shutting the listening socket down wakes its `poll`), closes
    /// every connection, removes the socket.
    func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        shutdown(listener, Int32(SHUT_RDWR))
        finished.wait()
        close(listener)
        unlink(path)
    }

    private func serve() {
        var listeners: [Int32] = []
        var told = ToldStates()
        defer { listeners.forEach { close($0) } }
        while !stopping.load(ordering: .sequentiallyConsistent) {
            var watched = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
                + listeners.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            _ = poll(&watched, nfds_t(watched.count), Self.interval)
            if stopping.load(ordering: .sequentiallyConsistent) { break }
            if watched[0].revents & Int16(POLLIN) != 0 {
                let accepted = accept4(listener, nil, nil, Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue))
                if accepted >= 0 {
                    if listeners.count < Self.maximumListeners {
                        if listeners.isEmpty { told = ToldStates() }  // the newcomer hears every state
                        listeners.append(accepted)
                    } else {
                        close(accepted)
                    }
                }
            }
            // A listener says nothing: readable means it hung up (or misbehaves): it goes.
            var gone: Set<Int32> = []
            for entry in watched.dropFirst() where entry.revents != 0 {
                var scratch = [UInt8](repeating: 0, count: 256)
                if recv(entry.fd, &scratch, scratch.count, Int32(MSG_DONTWAIT)) <= 0 || entry.revents & Int16(POLLHUP | POLLERR) != 0 {
                    gone.insert(entry.fd)
                }
            }
            guard !listeners.isEmpty else { continue }
            let news = changes(&told)
            if !news.isEmpty {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                var lines = [UInt8]()
                for change in news {
                    guard let line = try? encoder.encode(change) else { continue }
                    lines += line
                    lines.append(0x0A)
                }
                for fd in listeners where !gone.contains(fd) && !Self.sendAll(lines, to: fd) {
                    logger.debug("state events: a listener that does not keep up was dropped")
                    gone.insert(fd)
                }
            }
            for fd in gone { close(fd) }
            listeners.removeAll { gone.contains($0) }
        }
    }

    /// All of `bytes`, or false (the listener's buffer is full, or it is gone).
    private static func sendAll(_ bytes: [UInt8], to fd: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if sent < 0, errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }
}

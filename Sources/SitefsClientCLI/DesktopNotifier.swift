import Foundation
import Logging
import SitefsCore
import Synchronization

/// Desktop notifications for what the user should learn without running `sitefs status`
/// (a conflict copy, a sign-in to renew): a freedesktop `Notify` call on the session D-Bus,
/// made by `gdbus` (GLib's, on every desktop), else `notify-send`. Without a session bus
/// (a server, a boot-time mount) there is nothing to tell and the log line is all.
///
/// A helper program rather than a D-Bus client of our own: the call is one message, and a
/// program started with posix_spawn (Foundation's `Process`) is safe from a threaded
/// daemon, which a fork is not. Calls run one at a time on their own thread, each given
/// `timeout`; notices arriving meanwhile are folded into one ("3 saves were kept as
/// conflict copies"), so a burst cannot start a burst of processes.
final class DesktopNotifier: Sendable {
    struct Message: Equatable {
        var summary: String
        var body: String
    }

    private let busAddress: String
    private let server: String
    private let user: String
    private let logger: Logger
    private let timeout: TimeInterval = 5
    /// Notices not yet sent, and whether a sender thread is at work. Lock order: a leaf.
    private let queue = Mutex<(waiting: [MountNotice], sending: Bool)>(([], false))
    /// Whether a failed call was logged already (once is enough). Lock order: a leaf.
    private let failureLogged = Atomic(false)

    /// Nil without a session bus: `$DBUS_SESSION_BUS_ADDRESS`, else the bus systemd's user
    /// manager keeps in `$XDG_RUNTIME_DIR/bus`.
    init?(server: String, user: String, environment: [String: String] = ProcessInfo.processInfo.environment, logger: Logger) {
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty {
            busAddress = address
        } else if let runtime = environment["XDG_RUNTIME_DIR"], FileManager.default.fileExists(atPath: runtime + "/bus") {
            busAddress = "unix:path=\(runtime)/bus"
        } else {
            return nil
        }
        self.server = server
        self.user = user
        self.logger = logger
    }

    /// Queues `notice`; returns at once.
    func post(_ notice: MountNotice) {
        let startSender = queue.withLock { state in
            state.waiting.append(notice)
            defer { state.sending = true }
            return !state.sending
        }
        guard startSender else { return }
        Thread.detachNewThread { [self] in
            while let batch = takeBatch() { send(Self.message(for: batch, server: server, user: user)) }
        }
    }

    private func takeBatch() -> [MountNotice]? {
        queue.withLock { state in
            guard !state.waiting.isEmpty else {
                state.sending = false
                return nil
            }
            defer { state.waiting.removeAll() }
            return state.waiting
        }
    }

    /// What the desktop shows for notices that came together.
    static func message(for notices: [MountNotice], server: String, user: String) -> Message {
        let conflicts = notices.compactMap { notice -> (path: String, copy: String)? in
            if case .conflict(let path, let copy, _) = notice { return (path, copy) }
            return nil
        }
        if notices.contains(.signInRequired) {
            var body = "\(server) no longer accepts your sign-in. Run: sitefs login \(server) --user \(user)\n"
                + "Your saves are kept and sent once you have signed in."
            if !conflicts.isEmpty { body += "\n\(conflicts.count) saves were also kept as conflict copies." }
            return Message(summary: "sitefs: sign in again", body: body)
        }
        if conflicts.count == notices.count, conflicts.count > 1 {
            return Message(summary: "sitefs: \(conflicts.count) edits were kept as conflict copies",
                           body: conflicts.prefix(5).map { "\($0.path) → \($0.copy)" }.joined(separator: "\n")
                               + (conflicts.count > 5 ? "\n…" : ""))
        }
        let messages = notices.map(message(for:))
        if messages.count == 1 { return messages[0] }
        return Message(summary: "sitefs: \(messages.count) things happened to your saves",
                       body: messages.prefix(5).map(\.body).joined(separator: "\n") + (messages.count > 5 ? "\n…" : ""))
    }

    /// One notice on its own.
    private static func message(for notice: MountNotice) -> Message {
        switch notice {
        case .conflict(let path, let copy, let holder?):
            return Message(summary: "sitefs: your edit was kept as a conflict copy",
                           body: "\(path) is being edited by \(holder), who holds it locked; your version is beside it as \(copy).")
        case .documentFree(let path, let holder):
            return Message(summary: "sitefs: a document is free to edit",
                           body: "\(holder) closed \(path); you can open it for editing now.")
        case .conflict(let path, let copy, nil):
            return Message(summary: "sitefs: your edit was kept as a conflict copy",
                           body: "\(path) changed on the server while you edited it; your version is beside it as \(copy).")
        case .foldersRemade(let path, let file):
            return Message(summary: "sitefs: a deleted folder was made again for your save",
                           body: "\(path) was deleted on the server while you saved \(file) in it; it was made again with your file in it.")
        case .rescued(let path, let savedAs, let reason):
            return Message(summary: "sitefs: your edit was saved under another name",
                           body: "\(path) could not be saved (\(reason)); your edit is in \(savedAs).")
        case .signInRequired:
            return Message(summary: "sitefs: sign in again", body: "The server no longer accepts your sign-in.")
        case .journalUnwritable(let reason):
            return Message(summary: "sitefs: saves cannot be recorded",
                           body: "Files you save now cannot be kept safe: \(reason). Free space on this computer's disk; what was saved before is kept.")
        }
    }

    private func send(_ message: Message) {
        for attempt in Self.commands(for: message) {
            guard let executable = Self.find(attempt.program) else { continue }
            let outcome = run(executable, attempt.arguments)
            if outcome == nil { return }
            if !failureLogged.exchange(true, ordering: .relaxed) {
                logger.notice("desktop notification not shown (\(attempt.program): \(outcome!)); the log has the notice")
            }
            return
        }
    }

    /// gdbus first, then notify-send: the same call.
    static func commands(for message: Message) -> [(program: String, arguments: [String])] {
        [("gdbus", ["call", "--session", "--dest", "org.freedesktop.Notifications",
                    "--object-path", "/org/freedesktop/Notifications", "--method", "org.freedesktop.Notifications.Notify",
                    "--", variantString("sitefs"), "0", variantString("folder-remote"), variantString(message.summary),
                    variantString(message.body), "@as []", "@a{sv} {}", "int32 10000"]),
         ("notify-send", ["--app-name=sitefs", "--icon=folder-remote", "--", message.summary, message.body])]
    }

    /// A string in GLib's GVariant text format, which gdbus parses its arguments as: quoted,
    /// with backslash escapes (so no text of ours is read as syntax).
    static func variantString(_ text: String) -> String {
        var quoted = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case "\n": quoted += "\\n"
            case "\t": quoted += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7f: quoted += String(format: "\\u%04x", scalar.value)
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "\""
    }

    private static func find(_ program: String) -> URL? {
        for folder in ["/usr/bin", "/bin", "/usr/local/bin"] {
            let path = folder + "/" + program
            if FileManager.default.isExecutableFile(atPath: path) { return URL(fileURLWithPath: path) }
        }
        return nil
    }

    /// Nil when it worked; else why not.
    private func run(_ executable: URL, _ arguments: [String]) -> String? {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = busAddress
        process.environment = environment
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { return "\(error)" }
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
            return "no answer in \(Int(timeout)) s"
        }
        guard process.terminationStatus != 0 else { return nil }
        let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile().prefix(500), as: UTF8.self)
        return said.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? "exit \(process.terminationStatus)" : said
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

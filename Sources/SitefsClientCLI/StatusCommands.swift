import ArgumentParser
import Foundation
import SitefsSync
import SitefsCommandLine

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show a mount's open files, pending uploads and failures.")

    @Argument(help: "The mount point.") var mountpoint: String

    func run() throws {
        let status = try MountStatusReader.read(mountpoint)
        print("open files: \(status.openFiles.count), local copies: \(status.localCopies), known items: \(status.knownItems)")
        for name in status.openFiles { print("  open: \(TerminalText.escaped(name))") }
        print("pending uploads: \(status.uploads.pending)")
        if !status.uploads.progress.isEmpty {
            for upload in status.uploads.progress {
                print("  uploading: \(TerminalText.escaped(upload.name)): \(ByteCount.format(upload.sent)) of \(ByteCount.format(upload.total))")
            }
        } else {
            for name in status.uploads.uploading { print("  uploading: \(TerminalText.escaped(name))") }
        }
        for failure in status.uploads.failed {
            print("  failed: \(TerminalText.escaped(failure.name)): \(TerminalText.escaped(failure.reason))")
        }
        for conflict in status.uploads.conflicts {
            print("  conflict: \(TerminalText.escaped(conflict.name)) changed on the server; your edit is in \(TerminalText.escaped(conflict.savedAs))")
        }
        if status.uploads.signInRequired { print("sign-in required: uploads wait; run `sitefs login`") }
        if !status.uploads.failed.isEmpty { print("after fixing the cause, `sitefs retry \(mountpoint)` queues failed uploads again") }
    }
}

struct Retry: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Queue failed uploads again.")

    @Argument(help: "The mount point.") var mountpoint: String

    func run() throws {
        try MountStatusReader.requestRetry(mountpoint)
        print("failed uploads queued again; `sitefs sync \(mountpoint)` waits for them")
    }
}

struct Sync: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Wait until every saved file is on the server. Exits non-zero if an upload failed or the timeout passed.")

    @Argument(help: "The mount point.") var mountpoint: String
    @Option(help: "Give up after this many seconds.") var timeout: Double = 300

    func run() throws {
        let deadline = Date().addingTimeInterval(timeout)
        let onTerminal = isatty(STDOUT_FILENO) == 1
        defer { if onTerminal { FileHandle.standardOutput.write(Data("\n".utf8)) } }
        var warnedAboutSignIn = false
        try MountStatusReader.requestSync(mountpoint)  // nothing waits out the settle delay
        var settles = true  // false with a daemon that only answers at once: then poll
        while true {
            let settled = settles ? try MountStatusReader.readSettled(mountpoint) : nil
            settles = settled != nil
            let status = try settled ?? MountStatusReader.read(mountpoint)
            if onTerminal { FileHandle.standardOutput.write(Data(Self.progressLine(status.uploads).utf8)) }
            if status.uploads.signInRequired && !warnedAboutSignIn {
                FileHandle.standardError.write(Data("\nuploads wait for a new sign-in: run `sitefs login`\n".utf8))
                warnedAboutSignIn = true
            }
            if !status.uploads.failed.isEmpty {
                let reasons = status.uploads.failed.map { "\(TerminalText.escaped($0.name)): \(TerminalText.escaped($0.reason))" }
                    .joined(separator: "\n  ")
                throw UserFacingError("uploads failed:\n  \(reasons)")
            }
            if status.uploads.pending == 0 { return }
            if Date() > deadline { throw UserFacingError("\(status.uploads.pending) uploads still pending after \(Int(timeout)) s") }
            if !settles { usleep(10_000) }
        }
    }
}

extension Sync {
    /// `\r`-redrawn: a bar over the bytes of the uploads in flight, and what is pending.
    static func progressLine(_ uploads: SyncStatus) -> String {
        let progress = uploads.progress
        let sent = progress.reduce(Int64(0)) { $0 + $1.sent }, total = progress.reduce(Int64(0)) { $0 + $1.total }
        var line = "\r\u{1B}[K\(uploads.pending) pending"
        if total > 0 {
            let width = 24, filled = Int(Double(width) * Double(sent) / Double(total))
            line += " [" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
            line += "\(ByteCount.format(sent)) of \(ByteCount.format(total))"
        }
        let names = uploads.uploading.prefix(3).map(TerminalText.escaped).joined(separator: ", ")
        if !names.isEmpty { line += ": " + names }
        return line
    }
}

/// Sizes for people: 512 B, 3.4 KiB, 12.0 MiB.
enum ByteCount {
    static func format(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes), unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f", value) + " " + units[unit]
    }
}

struct Unmount: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Unmount, after pending uploads reached the server (unless --no-wait).")

    @Argument(help: "The mount point.") var mountpoint: String
    @Flag(name: .customLong("no-wait"), help: "Unmount at once; pending uploads resume on the next mount.") var noWait = false
    @Option(help: "Seconds to wait for pending uploads.") var timeout: Double = 600

    func run() throws {
        if !noWait {
            do {
                try Sync.parse([mountpoint, "--timeout", String(timeout)]).run()
            } catch let failure as MountStatusReader.Failure {
                if case .notMounted = failure { throw UserFacingError(failure.description) }
                // A dead daemon: nothing to wait for; unmount the stale mount below.
            }
        }
        try Unmounting.unmount(mountpoint)
        print("unmounted \(mountpoint)")
    }
}

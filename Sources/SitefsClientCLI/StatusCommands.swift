import ArgumentParser
import Foundation
import SitefsCore
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
                print("  uploading: \(TerminalText.escaped(upload.name)): \(ByteSize.format(upload.sent)) of \(ByteSize.format(upload.total))")
            }
        } else {
            for name in status.uploads.uploading { print("  uploading: \(TerminalText.escaped(name))") }
        }
        for failure in status.uploads.failed {
            print("  failed: \(TerminalText.escaped(failure.name)): \(TerminalText.escaped(failure.reason))")
        }
        for kept in status.uploads.notApplied {
            print("  not applied: \(TerminalText.escaped(kept.name)): \(TerminalText.escaped(kept.reason))")
        }
        for remade in status.uploads.remade {
            print("  made again: \(TerminalText.escaped(remade.path)): \(TerminalText.escaped(remade.reason))")
        }
        for rescue in status.uploads.rescued {
            print("  rescued: \(TerminalText.escaped(rescue.name)): \(TerminalText.escaped(rescue.reason)); your edit is in \(TerminalText.escaped(rescue.savedAs))")
        }
        for conflict in status.uploads.conflicts {
            let versus = conflict.conflictsWith.map { " (\(TerminalText.escaped($0.description)))" } ?? ""
            print("  conflict: \(TerminalText.escaped(conflict.name)) changed on the server\(versus); your edit is in \(TerminalText.escaped(conflict.savedAs))")
        }
        if let since = status.offlineSince {
            print("offline since \(since): the server is unreachable; saves wait, online-only files cannot be opened")
        }
        for held in status.locksHeld ?? [] {
            print("locked here: \(TerminalText.escaped(held.name)) since \(held.since) (others open it read-only)")
        }
        for seen in status.locksSeen ?? [] {
            let device = seen.device.isEmpty ? "" : " on \(TerminalText.escaped(seen.device))"
            print("locked by \(TerminalText.escaped(seen.holder))\(device): \(TerminalText.escaped(seen.path)) since \(seen.since)")
        }
        if let pins = status.pins, !pins.pinned.isEmpty {
            var line = "pinned: \(pins.localFiles) of \(pins.files) files local (\(ByteSize.format(pins.localBytes)) of \(ByteSize.format(pins.bytes)))"
            if let budget = pins.budget { line += ", cache budget \(ByteSize.format(budget))" }
            print(line)
            for path in pins.pinned { print("  pinned: \(TerminalText.escaped(path))") }
            if let downloading = pins.downloading { print("  downloading: \(TerminalText.escaped(downloading))") }
            if let problem = pins.problem { print("  not local: \(TerminalText.escaped(problem))") }
        }
        if let problem = status.uploads.journalProblem {
            print("journal: \(TerminalText.escaped(problem)); free space on the cache folder's disk (or make it writable)")
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
    @Flag(help: "Then also wait until every pinned file is local and current.") var pinned = false

    func run() throws {
        let deadline = Date().addingTimeInterval(timeout)
        try waitForUploads(until: deadline)
        if pinned { try waitForPins(until: deadline) }
    }

    /// Until every save and rename reached the server; throws `UserFacingError` saying why
    /// not (a failure, the timeout, or `stop` answering true: `sitefs unmount`'s second Ctrl-C).
    func waitForUploads(until deadline: Date, stop: () -> Bool = { false }) throws {
        let onTerminal = isatty(STDOUT_FILENO) == 1
        defer { if onTerminal { FileHandle.standardOutput.write(Data("\n".utf8)) } }
        var warnedAboutSignIn = false
        try MountStatusReader.requestSync(mountpoint)  // nothing waits out the settle delay
        var settles = true  // false with a daemon that only answers at once: then poll
        while true {
            let settled = settles ? try MountStatusReader.readSettled(mountpoint) : nil
            settles = settled != nil
            let status = try settled ?? MountStatusReader.read(mountpoint)
            if onTerminal {
                FileHandle.standardOutput.write(Data(Self.progressLine(status.uploads, offlineSince: status.offlineSince).utf8))
            }
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
            if stop() { throw UserFacingError("interrupted with \(status.uploads.pending) uploads pending") }
            if Date() > deadline {
                var message = "\(status.uploads.pending) uploads still pending after \(Int(timeout)) s"
                if let since = status.offlineSince { message += " (the server is unreachable since \(since))" }
                throw UserFacingError(message)
            }
            if !settles { usleep(10_000) }
        }
    }

    /// Until the daemon's pin keeper has nothing left to do and every pinned file is local.
    /// Offline, it keeps waiting (the server may come back) until the timeout.
    private func waitForPins(until deadline: Date) throws {
        let onTerminal = isatty(STDOUT_FILENO) == 1
        while true {
            let status = try MountStatusReader.readPinsSettled(mountpoint)
            guard let pins = status.pins else { throw UserFacingError("the daemon of \(mountpoint) predates pins; remount to update it") }
            if onTerminal { FileHandle.standardOutput.write(Data(Self.progressLine(pins).utf8)) }
            if pins.settled && pins.localFiles == pins.files { return }
            if Date() > deadline {
                var message = "\(pins.files - pins.localFiles) pinned files are not local after \(Int(timeout)) s"
                if let since = status.offlineSince { message += " (offline since \(since))" }
                if let problem = pins.problem { message += ": \(TerminalText.escaped(problem))" }
                throw UserFacingError(message)
            }
        }
    }
}

extension Sync {
    /// `\r`-redrawn: a bar over the bytes of the uploads in flight, and what is pending.
    static func progressLine(_ uploads: SyncStatus, offlineSince: String? = nil) -> String {
        let progress = uploads.progress
        let sent = progress.reduce(Int64(0)) { $0 + $1.sent }, total = progress.reduce(Int64(0)) { $0 + $1.total }
        var line = "\r\u{1B}[K\(uploads.pending) pending"
        if total > 0 {
            let width = 24, filled = Int(Double(width) * Double(sent) / Double(total))
            line += " [" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
            line += "\(ByteSize.format(sent)) of \(ByteSize.format(total))"
        }
        let names = uploads.uploading.prefix(3).map(TerminalText.escaped).joined(separator: ", ")
        if !names.isEmpty { line += ": " + names }
        if let offlineSince { line += " (server unreachable since \(offlineSince))" }
        return line
    }

    /// `\r`-redrawn: pinned files local of all, in bytes.
    static func progressLine(_ pins: PinStatus) -> String {
        var line = "\r\u{1B}[Kpinned: \(pins.localFiles) of \(pins.files) files local, "
        line += "\(ByteSize.format(pins.localBytes)) of \(ByteSize.format(pins.bytes))"
        if let downloading = pins.downloading { line += ": " + TerminalText.escaped(downloading) }
        return line
    }
}

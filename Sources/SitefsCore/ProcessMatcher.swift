import Foundation
import Synchronization

/// Tells which program a process (or thread) that sends a FUSE request runs, and whether it
/// is one of a set: the background readers (`BackgroundReaders`), the file managers
/// (`FileManagers`). A program is named by the file name of its `argv[0]`, at its full
/// length (the kernel's `comm` is cut at 15 bytes and names threads). Each question reads
/// two small `/proc` files (the start time tells a reused pid apart); the verdicts are kept by
/// pid and start time. Asked only where it matters: a read-only open of content that is not
/// local, and a listing when thumbnails are filed.
public final class ProcessMatcher: Sendable {
    /// What a process is, as far as matching cares; read from `/proc`.
    public struct ProcessDescription: Sendable, Equatable {
        /// `argv`, as the process left it.
        public var arguments: [String]
        /// When it started (clock ticks since boot): a pid reused by a later process is
        /// another entry.
        public var startTime: UInt64
        public init(arguments: [String], startTime: UInt64) {
            self.arguments = arguments
            self.startTime = startTime
        }
    }

    /// KDE's worker processes: with `kioThumbnailWorkers`, one counts while it runs the
    /// thumbnail worker (Dolphin's previews), and only then.
    static let kioWorkers: Set<String> = ["kioworker", "kioslave5", "kioslave", "kioworker6"]

    let programs: Set<String>
    let kioThumbnailWorkers: Bool
    let describe: @Sendable (Int32) -> ProcessDescription?
    /// Verdicts by pid, checked against the start time; emptied when full. A leaf lock.
    private let verdicts = Mutex<[Int32: (startTime: UInt64, matches: Bool)]>([:])
    static let verdictLimit = 1_024

    /// `programs`: file names of the programs matched; `describe`: how a pid is looked up
    /// (`/proc` unless a test says otherwise).
    public init(programs: Set<String>, kioThumbnailWorkers: Bool = false,
                describe: @escaping @Sendable (Int32) -> ProcessDescription? = ProcessMatcher.procDescription) {
        self.programs = programs
        self.kioThumbnailWorkers = kioThumbnailWorkers
        self.describe = describe
    }

    /// Matches nothing.
    public static let none = ProcessMatcher(programs: [], describe: { _ in nil })

    /// The name of the program of the process (or thread) `pid` when it is one of the set,
    /// nil otherwise (and when it cannot be told: a process already gone).
    public func matchingProgram(pid: Int32) -> String? {
        guard pid > 0, !programs.isEmpty || kioThumbnailWorkers, let process = describe(pid) else { return nil }
        if let known = verdicts.withLock({ $0[pid] }), known.startTime == process.startTime {
            return known.matches ? program(of: process) : nil
        }
        let matches = classify(process)
        verdicts.withLock { verdicts in
            if verdicts.count >= Self.verdictLimit { verdicts.removeAll(keepingCapacity: true) }
            verdicts[pid] = (process.startTime, matches)
        }
        return matches ? program(of: process) : nil
    }

    func classify(_ process: ProcessDescription) -> Bool {
        guard let first = process.arguments.first else { return false }
        let name = Self.fileName(of: first)
        if programs.contains(name) { return true }
        if kioThumbnailWorkers, Self.kioWorkers.contains(name) {
            // `kioworker /usr/lib/.../kf6/kio/thumbnail.so thumbnail local:/run/...`
            return process.arguments.dropFirst().prefix(3).contains { Self.fileName(of: $0).hasPrefix("thumbnail") }
        }
        return false
    }

    private func program(of process: ProcessDescription) -> String {
        process.arguments.first.map(Self.fileName(of:)) ?? "?"
    }

    static func fileName(of path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    /// `/proc/PID/cmdline` and the start time from `/proc/PID/stat`. The kernel gives a
    /// FUSE request the caller's thread id, which `/proc` answers for like a process id.
    @Sendable public static func procDescription(pid: Int32) -> ProcessDescription? {
        guard let commandLine = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"),
              let stat = FileManager.default.contents(atPath: "/proc/\(pid)/stat") else { return nil }
        let arguments = commandLine.prefix(64 << 10).split(separator: 0, omittingEmptySubsequences: false)
            .prefix(8).map { String(decoding: $0, as: UTF8.self) }
        // The name in parentheses may hold spaces and parentheses: fields count from the last ")".
        let text = String(decoding: stat.prefix(4_096), as: UTF8.self)
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After ")": state is field 3 of stat(5), so starttime (field 22) is the 20th here.
        guard fields.count > 19, let start = UInt64(fields[19]) else { return nil }
        return ProcessDescription(arguments: arguments, startTime: start)
    }
}

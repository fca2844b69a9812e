import Foundation
import Synchronization

/// Programs that read files on a person's behalf without being asked to: thumbnailers,
/// desktop search indexers, `updatedb`. They must not turn placeholders into downloads
/// (a folder of 500 plans opened in a file manager would otherwise be downloaded whole
/// just to draw its thumbnails), so the core refuses them the content of a file that is
/// not on this device yet (`open` fails with EWOULDBLOCK) and serves them what is local.
///
/// Why the daemon decides, not the file manager: GLib counts a mount as remote (and its
/// "thumbnails for local files only" setting as off for it) only for nfs, cifs, smb and
/// `fuse.sshfs`, KDE and Tracker have rules of their own, and a `fuse.sitefs` mount that
/// claimed another type would mislead every other tool. Every such reader goes through the
/// kernel, which names the asking process in each FUSE request.
///
/// A process is recognised by its program's file name (`argv[0]`, its full length: the
/// kernel's `comm` is cut at 15 bytes and names threads): the thumbnailers the desktop has
/// registered (the `Exec` programs of `*.thumbnailer` files in the freedesktop thumbnailer
/// folders) and `knownPrograms`. KDE's previews run in a general-purpose `kioworker`,
/// which counts only while it runs the thumbnail worker.
public final class BackgroundReaders: Sendable {
    /// Indexers and thumbnailers that are not registered as `*.thumbnailer` files.
    public static let knownPrograms: Set<String> = [
        // GNOME's Tracker / LocalSearch (3.x and the renamed 3.8+).
        "tracker-extract", "tracker-extract-3", "tracker-miner-fs", "tracker-miner-fs-3",
        "localsearch-3", "localsearch-extractor-3",
        // KDE's Baloo.
        "baloo_file", "baloo_file_extractor",
        // XFCE's thumbnail service thumbnails in its own process.
        "tumblerd",
        // mlocate / plocate (root cannot enter a mount without --allow-other, others can).
        "updatedb", "updatedb.plocate", "updatedb.mlocate", "plocate-build",
        // Thumbnailers commonly installed without a registration file in the default folders.
        "gdk-pixbuf-thumbnailer", "gnome-thumbnail-font", "totem-video-thumbnailer", "evince-thumbnailer",
        "papers-thumbnailer", "atril-thumbnailer", "xreader-thumbnailer", "gsf-office-thumbnailer",
        "ffmpegthumbnailer", "folks-thumbnailer",
    ]

    /// KDE's worker processes, which count only with the thumbnail worker loaded.
    static let kioWorkers: Set<String> = ["kioworker", "kioslave5", "kioslave", "kioworker6"]

    /// Where the freedesktop thumbnailer specification puts registration files: the
    /// `thumbnailers` folder of `$XDG_DATA_HOME` and of each `$XDG_DATA_DIRS` entry.
    public static func thumbnailerFolders(environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        let home = environment["HOME"] ?? NSHomeDirectory()
        let dataHome = environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.local/share"
        let dataDirs = (environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share")
            .split(separator: ":").map(String.init)
        return ([dataHome] + dataDirs).map { $0 + "/thumbnailers" }
    }

    /// The program names of the registered thumbnailers: the first word of each `Exec=`
    /// (and `TryExec=`) line, by file name. Unreadable folders and files are skipped.
    public static func registeredThumbnailers(in folders: [String]) -> Set<String> {
        var programs: Set<String> = []
        for folder in folders {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { continue }
            for name in names.prefix(1_000) where name.hasSuffix(".thumbnailer") {
                guard let text = try? String(contentsOfFile: folder + "/" + name, encoding: .utf8) else { continue }
                for line in text.split(separator: "\n").prefix(200) {
                    let trimmed = line.trimmingCharacters(in: .whitespaces)
                    guard trimmed.hasPrefix("Exec=") || trimmed.hasPrefix("TryExec=") else { continue }
                    let command = trimmed.drop(while: { $0 != "=" }).dropFirst()
                    if let program = command.split(separator: " ").first {
                        programs.insert(Self.fileName(of: String(program)))
                    }
                }
            }
        }
        return programs
    }

    /// What a process is, as far as this rule cares; read from `/proc`.
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

    let programs: Set<String>
    let describe: @Sendable (Int32) -> ProcessDescription?
    /// Verdicts by pid, checked against the start time; emptied when full (each verdict
    /// costs two small `/proc` reads, once per process).
    private let verdicts = Mutex<[Int32: (startTime: UInt64, isBackground: Bool)]>([:])
    static let verdictLimit = 1_024

    /// `programs`: file names of the programs refused; `describe`: how a pid is looked up
    /// (`/proc` unless a test says otherwise).
    public init(programs: Set<String>, describe: @escaping @Sendable (Int32) -> ProcessDescription? = BackgroundReaders.procDescription) {
        self.programs = programs
        self.describe = describe
    }

    /// The desktop's thumbnailers and the known indexers.
    public static func standard() -> BackgroundReaders {
        BackgroundReaders(programs: knownPrograms.union(registeredThumbnailers(in: thumbnailerFolders())))
    }

    /// None: every process may download (tests of other things, `--allow-background-reads`).
    public static let none = BackgroundReaders(programs: [], describe: { _ in nil })

    /// The name of the program of the process (or thread) `pid` when it is a background
    /// reader, nil otherwise (and when it cannot be told: a process already gone).
    public func backgroundProgram(pid: Int32) -> String? {
        guard pid > 0, !programs.isEmpty, let process = describe(pid) else { return nil }
        if let known = verdicts.withLock({ $0[pid] }), known.startTime == process.startTime {
            return known.isBackground ? program(of: process) : nil
        }
        let isBackground = classify(process)
        verdicts.withLock { verdicts in
            if verdicts.count >= Self.verdictLimit { verdicts.removeAll(keepingCapacity: true) }
            verdicts[pid] = (process.startTime, isBackground)
        }
        return isBackground ? program(of: process) : nil
    }

    func classify(_ process: ProcessDescription) -> Bool {
        guard let first = process.arguments.first else { return false }
        let name = Self.fileName(of: first)
        if programs.contains(name) { return true }
        if Self.kioWorkers.contains(name) {
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

import ArgumentParser
import Foundation
import Logging
import SitefsCore
import SitefsCrypto
import SitefsFUSE
import SitefsHTTP
import SitefsHTTPBackend
import SitefsProvider

struct Mount: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Mount a server's sites at MOUNTPOINT. Returns once the mount is live (or says why not).")

    @Argument(help: "The server, as given to login.") var url: String
    @Argument(help: "An empty folder to mount on.") var mountpoint: String
    @Flag(help: "Stay in the foreground (Ctrl-C unmounts). Under systemd (Type=notify) it says when the mount is live.") var foreground = false
    @Option(name: .customLong("cache-dir"), help: "Metadata and content cache (default: $XDG_CACHE_HOME/sitefs/<mount id>).")
    var cacheDirectory: String?
    @Option(name: .customLong("page-size"), help: "Items per server page when listing folders.") var pageSize = 200
    @Flag(name: .customLong("read-only"), help: "Refuse every change, whatever the grants allow.") var readOnly = false
    @Flag(name: .customLong("allow-other"), help: "Let other users see the mount (needs user_allow_other in /etc/fuse.conf).")
    var allowOther = false
    @Option(name: .customLong("file-group"),
            help: "Show every item as this group's (a name or number you belong to); with --allow-other its members get the group's permission bits (default: your own group).")
    var fileGroup: String?
    @Option(name: .customLong("log-file"), help: "Log here (default: CACHE_DIR/sitefs.log in the background, stderr in the foreground).")
    var logFile: String?
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.") var logLevel = "info"
    @Option(name: .customLong("poll-interval"), help: "Seconds between change-feed polls, where the server does not hold them (--change-wait 0, WebDAV).") var pollInterval: Double = 3
    /// On by default: sitefs-server sends a few spaces every 2 s while it holds the request,
    /// so a held request notices a silent or vanished server as fast as any other (the usual
    /// low-speed limit), and a closed connection at once. WebDAV servers have no change
    /// feed; with them the option does nothing.
    @Option(name: .customLong("change-wait"),
            help: "Seconds sitefs-server may hold a change-feed request until something changes (at most 25): edits made elsewhere show within a moment. 0: poll every --poll-interval instead.")
    var changeWait: Double = 25
    @Option(name: .customLong("cache-ttl"), help: "Seconds listings and metadata are trusted between change-feed updates.")
    var cacheTTL: Double = 60
    @Option(name: .customLong("io-timeout"), help: "Seconds a stalled or unreachable server is waited for before EIO.")
    var ioTimeout: Double = 10
    @Option(name: .customLong("uploads"), help: "Files uploaded in parallel.") var uploadParallelism = 4
    @Option(name: .customLong("write-back-delay"),
            help: "Seconds a file renamed to a backup name (NAME~), or a new editor's temp file (lu*.tmp), is left alone before it is sent, so vim's, Emacs's and a busy LibreOffice's saves fold into one version; other saves and renames go at once.")
    var writeBackDelay: Double = 2
    @Option(name: .customLong("new-file-delay"),
            help: "Seconds a new file is left alone before it is uploaded, so an editor's temp file renamed over a document becomes a new version of it (at most --write-back-delay).")
    var newFileDelay: Double = 0.25
    @Option(name: .customLong("cache-size"),
            help: "The most pinned content may take on disk, e.g. 500M or 20G (default: no limit); pinning past it is refused.")
    var cacheSize: CacheSize?
    @Option(name: .customLong("stop-timeout"),
            help: "Seconds pending uploads are waited for when the mount is stopped by a signal (systemd's stop); the rest stay queued for the next mount.")
    var stopTimeout: Double = 30
    @Option(name: .customLong("lock-timeout"),
            help: "Seconds a lock for editing taken here lasts unless refreshed (it is, while the document is open); what a crashed mount's locks outlive it by (5...3600).")
    var lockTimeout: Double = 300
    @Flag(name: .customLong("lock-writers"), inversion: .prefixedNo,
          help: "Lock a server file on the server while a program has it open for writing (LibreOffice's lock files always lock).")
    var lockWriters = true
    @Option(name: .customLong("device-name"), help: "This computer's name in the locks it takes (default: the host name).")
    var deviceName: String?
    @Option(name: .customLong("display-name"),
            help: "Your name as others see it in your locks on a WebDAV server (default: the user signed in; sitefs-server uses the account's).")
    var displayName: String?
    @Flag(name: .customLong("allow-background-downloads"),
          help: "Let thumbnailers and indexers download files that are only on the server (by default they get only what is on this device).")
    var allowBackgroundDownloads = false
    @Option(help: "What the server speaks (sitefs or webdav): must be what it was signed in as.") var backend: BackendKind?
    @OptionGroup var transport: TransportOptions
    @Option(name: .customShort("o"), help: ArgumentHelp(
        "Options in mount(8)'s form: every flag above as key=value or key, underscores for dashes "
            + "(-o cache_dir=/var/cache/x,page_size=100,read_only); ro, noexec, nosuid, nodev, noatime and sync go to the kernel mount; "
            + "rw, user, noauto, _netdev, nofail and x-* are mount(8)'s and ignored.",
        valueName: "options"))
    var mountOptionList: [String] = []
    /// What `-o` gave for the kernel mount itself (noexec, nosuid, ...), comma-separated.
    @Option(name: .customLong("kernel-flags"), help: .hidden) var kernelFlags: String?
    @Flag(name: .customLong("daemon-child"), help: .hidden) var daemonChild = false

    func validate() throws {
        guard (1...1000).contains(pageSize) else { throw ValidationError("--page-size must be 1...1000") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
        guard pollInterval > 0, cacheTTL >= 0, ioTimeout > 0, uploadParallelism > 0, writeBackDelay >= 0, stopTimeout >= 0, changeWait >= 0 else {
            throw ValidationError("intervals, timeouts and --uploads must be positive")
        }
        guard (0...86_400).contains(writeBackDelay), (0...86_400).contains(newFileDelay) else {
            throw ValidationError("--write-back-delay and --new-file-delay must be 0...86400 seconds")
        }
        // `SitefsCommand.main` turns every -o into flags before parsing; one left here came
        // some other way (an -o list after `--`, say).
        guard (5...3600).contains(lockTimeout) else { throw ValidationError("--lock-timeout must be 5...3600 seconds") }
        for (flag, value) in [("--device-name", deviceName), ("--display-name", displayName)] {
            if let value, value.isEmpty || value.utf8.count > 200 || value.contains(where: { $0.isNewline }) {
                throw ValidationError("\(flag) must be one line of 1...200 bytes")
            }
        }
        guard mountOptionList.isEmpty else { throw ValidationError("-o must come before any --") }
        for flag in kernelFlagList where !MountOptionList.kernelFlags.contains(flag) {
            throw ValidationError("\(flag) is not a mount flag sitefs passes on")
        }
    }

    func run() throws {
        let server = CredentialStore.normalize(url)
        let target = URL(fileURLWithPath: mountpoint).standardizedFileURL.path
        if !daemonChild { try TransportSecurity.check(server, allowInsecureHTTP: transport.allowInsecureHTTP) }
        guard let credentials = CredentialStore.standard.entry(for: server) else {
            throw UserFacingError("not signed in to \(server): run `sitefs login \(server) --user NAME`")
        }
        if let backend, backend != credentials.kind {
            throw UserFacingError("\(server) was signed in to as a \(credentials.kind.rawValue) server: run "
                                  + "`sitefs login \(server) --user \(credentials.user) --backend \(backend.rawValue)` first")
        }
        let caFile = try TransportSecurity.caFile(for: server, given: transport.caFile, stored: credentials.caFile)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: target, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw UserFacingError("mount point \(target) is not an existing folder")
        }
        guard !MountTable.isMountPoint(URL(fileURLWithPath: target).standardizedFileURL.path) else { throw UserFacingError("mount point \(target) is busy: something is mounted there") }
        try MountPreflight.check(mountpoint: target, allowOther: allowOther)
        if let fileGroup { _ = try FileGroup.resolve(fileGroup) }
        let cache = cacheDirectory ?? Self.defaultCacheDirectory(server: server, user: credentials.user, mountpoint: target)
        if daemonChild || foreground {
            try MountDaemon(options: self, server: server, mountpoint: target, cacheDirectory: cache, caFile: caFile).run()
        } else {
            try spawnDaemon(server: server, mountpoint: target, cacheDirectory: cache, caFile: caFile)
        }
    }

    /// Starts a fresh process for the daemon (never fork once threads exist) and waits for
    /// it to say the mount is live, or why it is not.
    private func spawnDaemon(server: String, mountpoint: String, cacheDirectory: String, caFile: String?) throws {
        let log = logFile ?? URL(fileURLWithPath: cacheDirectory).appendingPathComponent("sitefs.log").path
        try FileManager.default.createDirectory(atPath: cacheDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var arguments = ["mount", server, mountpoint, "--daemon-child", "--cache-dir", cacheDirectory, "--log-file", log,
                         "--page-size", String(pageSize), "--log-level", logLevel, "--poll-interval", String(pollInterval),
                         "--cache-ttl", String(cacheTTL), "--io-timeout", String(ioTimeout), "--uploads", String(uploadParallelism),
                         "--write-back-delay", String(writeBackDelay), "--new-file-delay", String(newFileDelay), "--stop-timeout", String(stopTimeout), "--change-wait", String(changeWait)]
        if let cacheSize { arguments += ["--cache-size", String(cacheSize.bytes)] }
        arguments += ["--lock-timeout", String(lockTimeout)]
        if !lockWriters { arguments.append("--no-lock-writers") }
        if let deviceName { arguments += ["--device-name", deviceName] }
        if let displayName { arguments += ["--display-name", displayName] }
        if readOnly { arguments.append("--read-only") }
        if allowOther { arguments.append("--allow-other") }
        if let fileGroup { arguments += ["--file-group", fileGroup] }
        if allowBackgroundDownloads { arguments.append("--allow-background-downloads") }
        if let kernelFlags { arguments += ["--kernel-flags", kernelFlags] }
        if let caFile { arguments += ["--ca-file", caFile] }
        process.arguments = arguments
        let ready = Pipe()
        process.standardOutput = ready
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let answer = Self.readLine(ready.fileHandleForReading, timeout: 60)
        if answer == "mounted" {
            print("mounted \(server) at \(mountpoint) (log: \(log))")
            return
        }
        if process.isRunning { process.terminate() }
        if let answer, answer.hasPrefix("error: ") { throw UserFacingError(String(answer.dropFirst(7))) }
        throw UserFacingError("the sitefs daemon did not start; see \(log)")
    }

    /// `--kernel-flags` as a list.
    var kernelFlagList: [String] { (kernelFlags ?? "").split(separator: ",").map(String.init) }

    static func defaultCacheDirectory(server: String, user: String, mountpoint: String) -> String {
        let id = Hex.encode(Array(SHA256.hash(Array("\(server)\n\(user)\n\(mountpoint)".utf8)).prefix(8)))
        return UserDirectories.cache.appendingPathComponent("sitefs").appendingPathComponent(id).path
    }

    static func readLine(_ handle: FileHandle, timeout: TimeInterval) -> String? {
        var collected = [UInt8]()
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            var descriptor = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 200) >= 0 else { return nil }
            guard descriptor.revents != 0 else { continue }
            var byte: UInt8 = 0
            guard read(handle.fileDescriptor, &byte, 1) == 1 else { return nil }
            if byte == UInt8(ascii: "\n") { return String(decoding: collected, as: UTF8.self) }
            collected.append(byte)
        }
        return nil
    }
}

/// `--cache-size`: bytes, with an optional K, M, G or T (powers of 1024).
struct CacheSize: ExpressibleByArgument {
    let bytes: Int64

    init?(argument: String) {
        let text = argument.trimmingCharacters(in: .whitespaces).uppercased()
        let units: [Character: Int64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40]
        var digits = Substring(text)
        var multiplier: Int64 = 1
        if text.hasSuffix("IB") { digits = digits.dropLast(2) } else if text.hasSuffix("B") { digits = digits.dropLast() }
        if let last = digits.last, let unit = units[last] {
            multiplier = unit
            digits = digits.dropLast()
        }
        guard let number = Int64(digits), number > 0 else { return nil }
        let (product, overflow) = number.multipliedReportingOverflow(by: multiplier)
        guard !overflow else { return nil }
        bytes = product
    }
}

import Foundation
import Logging
import SitefsCommandLine
import SitefsCore
import SitefsFUSE
import SitefsHTTP
import SitefsHTTPBackend
import SitefsProvider
import SitefsWebDAVBackend
import Synchronization

/// The mount process itself: checks the server, builds the layers, runs the FUSE session
/// until unmounted, then gives pending uploads a chance to finish.
struct MountDaemon {
    let options: Mount
    let server: String
    let mountpoint: String
    let cacheDirectory: String
    /// The certificate authorities trusted for https (nil: the system's).
    let caFile: String?

    func run() throws {
        do {
            try mountAndServe()
        } catch {
            // The parent `sitefs mount` waits for one line: tell it why, whatever failed.
            if options.daemonChild { announce("error: \(error)") }
            throw error
        }
    }

    private func mountAndServe() throws {
        if options.daemonChild { setsid() }  // leave the terminal's session: Ctrl-C there is not for us
        try makeCachePrivate()
        var logStart: off_t = 0
        if let logFile = options.logFile { logStart = try redirectStandardError(to: logFile) }
        LoggingSystem.bootstrap { EscapingLogHandler(StreamLogHandler.standardError(label: $0)) }
        var logger = Logger(label: "sitefs")
        logger.logLevel = Logger.Level(rawValue: options.logLevel) ?? .info

        let timeouts = HTTPClient.Timeouts(connect: .seconds(options.ioTimeout), lowSpeedLimit: 1,
                                           lowSpeedTime: .seconds(max(options.ioTimeout, 1)), overall: .seconds(options.ioTimeout * 3))
        // Read once: the sign-in's user names conflict copies and the notifications' advice.
        let signedIn = CredentialStore.standard.entry(for: server)
        let backend = try makeBackend(kind: signedIn?.kind ?? .sitefs, timeouts: timeouts, logger: logger)
        try probe(backend, logger: logger)
        var configuration = FilesystemConfiguration(
            pageSize: options.pageSize, kernelCacheTimeout: 5, metadataMaxAge: .milliseconds(Int64(options.cacheTTL * 1000)),
            changePollInterval: .milliseconds(Int64(options.pollInterval * 1000)), uid: getuid(), gid: try options.fileGroup.map(FileGroup.resolve) ?? getgid(),
            readOnly: options.readOnly, writeBackDelay: .milliseconds(Int64(options.writeBackDelay * 1000)),
            newFileDelay: .milliseconds(Int64(options.newFileDelay * 1000)),
            namespaceWait: .milliseconds(Int64(options.ioTimeout * 1000)), cacheSizeLimit: options.cacheSize?.bytes,
            changeWait: .milliseconds(Int64(min(options.changeWait, 3600) * 1000)))
        // A save no folder on the server takes is copied here, where its owner finds it.
        configuration.rescueDirectory = UserDirectories.data.appendingPathComponent("sitefs/rescued").path
        configuration.backgroundReaders = options.allowBackgroundDownloads ? .none : BackgroundReaders.standard()
        configuration.lockTimeout = .milliseconds(Int64(options.lockTimeout * 1000))
        if let device = options.deviceName { configuration.deviceName = device }
        configuration.holderName = options.displayName
        configuration.lockWriters = options.lockWriters
        // The file manager's emblems follow state changes through this socket.
        let stateSource = StateSource()
        let stateEvents = StateEventServer(path: URL(fileURLWithPath: cacheDirectory).appendingPathComponent("events.sock").path,
                                           logger: logger, changes: { stateSource.changes(since: &$0) })
        configuration.stateEventSocket = stateEvents?.path
        // The server's pictures of online-only files, where file managers look for thumbnails.
        configuration.thumbnails = ThumbnailSettings(cache: ThumbnailCache(root: UserDirectories.cache.appendingPathComponent("thumbnails").path),
                                                     mountpoint: mountpoint)
        let filesystem = try SitefsFilesystem(backend: backend, configuration: configuration,
                                              cacheDirectory: URL(fileURLWithPath: cacheDirectory),
                                              uploadParallelism: options.uploadParallelism,
                                              userName: signedIn?.user ?? "sitefs",
                                              logger: logger)
        let serviceManager = ServiceManagerNotifier.shared
        filesystem.onMounted = { [daemonChild = options.daemonChild, logger, server, mountpoint] in
            logger.info("mounted \(server) at \(mountpoint)")
            if daemonChild { announce("mounted") }
            // The kernel has the mount and its first request was answered: live.
            serviceManager.ready(status: "Mounted \(server) at \(mountpoint)")
        }
        stateSource.filesystem.withLock { $0 = filesystem }
        stateEvents?.start()
        let notifier = DesktopNotifier(server: server, user: signedIn?.user ?? "NAME", logger: logger)
        filesystem.onNotice = { notice in notifier?.post(notice) }
        let session = FUSEMount(
            operations: filesystem, mountpoint: mountpoint,
            // SIGINT/SIGTERM/SIGHUP end the session cleanly (unmount), then pending uploads finish.
            options: MountOptions(fsName: "sitefs", subtype: "sitefs", readOnly: options.readOnly, allowOther: options.allowOther,
                                  handleSignals: true, kernelFlags: options.kernelFlagList))
        let ending: FUSEMount.Ending
        do {
            ending = try session.run()
        } catch {
            stateEvents?.stop()
            // fusermount3 (a user's mount) says why on stderr, which is the log file here.
            let reasons = options.logFile.map { Self.fusermountMessages(in: $0, from: logStart) } ?? []
            throw UserFacingError(([String(describing: error)] + reasons).joined(separator: ": "))
        }
        logger.info("unmounted \(mountpoint)")
        stateEvents?.stop()  // nothing is shown of a mount that is gone
        let pending = filesystem.uploadStatus.pending
        serviceManager.stopping(status: pending > 0 ? "Unmounted; sending \(pending) pending uploads" : "Unmounted")
        if filesystem.leavesUploadsQueued {
            // `sitefs unmount` gave up waiting (or was told not to wait): nothing more is sent.
            if pending > 0 { logger.notice("\(pending) pending uploads stay queued in \(cacheDirectory); the next mount sends them") }
            return
        }
        // A signal stops the process (Ctrl-C, systemd's stop, which kills what outlasts its
        // own timeout): a bounded wait. A plain unmount leaves the daemon time to finish.
        let wait: Double = if case .signal = ending { options.stopTimeout } else { 600 }
        if pending > 0 {
            logger.notice("waiting at most \(Int(wait)) s for \(pending) pending uploads")
        }
        if filesystem.waitForUploads(timeout: .milliseconds(Int64(wait * 1000))) {
            filesystem.recordCleanShutdown()
        } else {
            let left = filesystem.uploadStatus.pending
            logger.notice("\(left) pending uploads stay queued in \(cacheDirectory); the next mount sends them")
        }
    }

    /// The server's backend, as signed in: the project's API, or WebDAV with its identity
    /// table in the cache folder (identities must outlive the mount: the journal and the
    /// metadata cache refer to them).
    private func makeBackend(kind: BackendKind, timeouts: HTTPClient.Timeouts, logger: Logger) throws -> any DocumentBackend {
        switch kind {
        case .sitefs:
            return HTTPDocumentBackend(baseURL: server, tokens: CredentialFileTokens(store: .standard, server: server),
                                       timeouts: timeouts, caFile: caFile)
        case .webdav:
            guard let location = WebDAVLocation(server) else { throw UserFacingError("\(server) is not a usable WebDAV URL") }
            let identities = try IdentityTable(path: URL(fileURLWithPath: cacheDirectory).appendingPathComponent("webdav-identities.sqlite").path)
            return WebDAVDocumentBackend(location: location, credentials: CredentialFileAuthorization(store: .standard, server: server),
                                         identities: identities, timeouts: timeouts, caFile: caFile, logger: logger)
        }
    }

    /// Checks sign-in and reachability before mounting, so `sitefs mount` can say why not.
    /// A busy or flaky server (5xx, 429, a reset) gets two more tries before that counts. An
    /// unreachable one is no reason not to mount a cache used before: that mount starts offline.
    private func probe(_ backend: any DocumentBackend, logger: Logger) throws {
        var attempt = 0
        while true {
            do throws(ProviderError) {
                _ = try backend.sites(after: nil, limit: 1)
                return
            } catch {
                attempt += 1
                if error.isTransient, attempt < 3 {
                    Thread.sleep(forTimeInterval: 0.5 * Double(attempt))
                    continue
                }
                switch error {
                case .notAuthenticated:
                    throw UserFacingError("the sign-in to \(server) has expired: run `sitefs login \(server) --user NAME`")
                case .unreachable(let detail):
                    // Mounted before on this cache: start offline with what it knows (pinned
                    // files, listings, queued changes); the mount finds the server once it is back.
                    if FileManager.default.fileExists(atPath: URL(fileURLWithPath: cacheDirectory)
                        .appendingPathComponent("metadata.sqlite").path) {
                        logger.warning("server \(server) is unreachable (\(detail)); mounting offline from the cache")
                        return
                    }
                    throw UserFacingError("server \(server) is unreachable: \(detail)")
                default:
                    throw UserFacingError("server \(server) refused: \(error)")
                }
            }
        }
    }

    /// The cache (item names, contents, the journal) and the log are the user's alone,
    /// whatever the umask, and whatever an existing cache folder was left with: the folder is
    /// made 0700 and files an earlier run left readable (the databases and their -wal/-shm
    /// files) 0600, and everything this process creates is private (umask 077).
    private func makeCachePrivate() throws {
        umask(0o077)
        try FileManager.default.createDirectory(atPath: cacheDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        chmod(cacheDirectory, 0o700)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: cacheDirectory)) ?? [] {
            let path = URL(fileURLWithPath: cacheDirectory).appendingPathComponent(name).path
            var info = stat()
            if lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_mode & 0o077 != 0 { chmod(path, 0o600) }
        }
    }

    /// Sends stderr to the log file (private, even if it existed with a looser mode) and
    /// returns where this run's part of it starts.
    private func redirectStandardError(to path: String) throws -> off_t {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw UserFacingError("cannot open log file \(path): \(String(cString: strerror(errno)))") }
        fchmod(descriptor, 0o600)
        let start = lseek(descriptor, 0, SEEK_END)
        dup2(descriptor, STDERR_FILENO)
        close(descriptor)
        return max(start, 0)
    }

    /// What fusermount3 wrote to the log since `offset` (its refusals name the cause:
    /// `user_allow_other`, the mount point's permissions). At most 4 KiB are read.
    static func fusermountMessages(in path: String, from offset: off_t) -> [String] {
        guard let handle = FileHandle(forReadingAtPath: path) else { return [] }
        defer { try? handle.close() }
        guard (try? handle.seek(toOffset: UInt64(offset))) != nil, let data = try? handle.read(upToCount: 4096) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n")
            .filter { $0.hasPrefix("fusermount") }
            .map { String($0) }
    }
}

/// Tells the parent `sitefs mount` how the start went (one line on stdout), then detaches
/// stdout so a later write cannot hit a closed pipe.
private func announce(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
    let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
    if null >= 0 {
        dup2(null, STDOUT_FILENO)
        close(null)
    }
}

/// The filesystem the state event server asks, set once it exists.
private final class StateSource: Sendable {
    let filesystem = Mutex<SitefsFilesystem?>(nil)

    func changes(since told: inout ToldStates) -> [StateChange] {
        guard let filesystem = filesystem.withLock({ $0 }) else { return [] }
        return filesystem.stateChanges(since: &told)
    }
}

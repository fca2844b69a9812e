import ArgumentParser
import Foundation
import Hummingbird
import Logging
import SitefsCommandLine
import SitefsServerCore

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve API v1 over HTTP. Prints 'listening on http://HOST:PORT' once ready.")

    @OptionGroup var options: DataOptions
    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on; 0 picks a free one.") var port = 8080
    @Flag(help: "Seed user demo (password demo) and two sample sites, if absent.") var demo = false
    @Option(name: .customLong("token-ttl"), help: "Seconds a session token stays valid.") var tokenLifetime: Int64 = 7 * 24 * 3600
    @Option(name: .customLong("max-upload"), help: "Largest accepted upload in bytes.") var maximumUpload: Int64 = 16 << 30
    @Option(name: .customLong("connection-timeout"),
            help: "Seconds an idle connection, a request head still arriving or a stalled request body is kept open.")
    var connectionTimeout: Int = 60
    @Option(name: .customLong("max-connections"), help: "Connections served at once; more wait.") var maximumConnections = 256
    @Option(name: .customLong("tls-cert"), help: "Serve HTTPS with this certificate chain (PEM); needs --tls-key.")
    var tlsCertificate: String?
    @Option(name: .customLong("tls-key"), help: "The private key (PEM) of --tls-cert.") var tlsKey: String?
    @Option(name: .customLong("lock-sweep-interval"),
            help: "Seconds between removals of expired locks (each shows in the change feed as the file changing).")
    var lockSweepInterval = 5

    /// A token lifetime of 0 or less would make sessions that never work, and a huge one
    /// (10^14 seconds) would overflow the expiry computed at sign-in: both are refused.
    static let tokenLifetimes: ClosedRange<Int64> = 60...(10 * 365 * 24 * 3600)
    static let uploadLimits: ClosedRange<Int64> = 1...(1 << 50)

    func validate() throws {
        guard Self.tokenLifetimes.contains(tokenLifetime) else {
            throw ValidationError("--token-ttl must be \(Self.tokenLifetimes.lowerBound) to \(Self.tokenLifetimes.upperBound) seconds (10 years)")
        }
        guard Self.uploadLimits.contains(maximumUpload) else {
            throw ValidationError("--max-upload must be 1 to \(Self.uploadLimits.upperBound) bytes")
        }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        guard (1...3600).contains(connectionTimeout) else { throw ValidationError("--connection-timeout must be 1 to 3600 seconds") }
        guard (1...100_000).contains(maximumConnections) else { throw ValidationError("--max-connections must be 1 to 100000") }
        guard (1...3600).contains(lockSweepInterval) else { throw ValidationError("--lock-sweep-interval must be 1 to 3600 seconds") }
        guard !host.isEmpty else { throw ValidationError("--host must name an address") }
        guard (tlsCertificate == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        for path in [tlsCertificate, tlsKey].compactMap({ $0 }) where !FileManager.default.isReadableFile(atPath: path) {
            throw ValidationError("cannot read \(path)")
        }
    }

    func run() async throws {
        LoggingSystem.bootstrap { EscapingLogHandler(StreamLogHandler.standardError(label: $0)) }
        let logger = Logger(label: "sitefs-server")
        let (folder, database) = try options.storage()
        let configuration = ServerConfiguration(
            dataDirectory: folder, database: database, databaseConnections: options.databaseConnections, host: host, port: port,
            tokenLifetimeSeconds: tokenLifetime, maximumUploadBytes: maximumUpload,
            connectionTimeout: .seconds(connectionTimeout), maximumConnections: maximumConnections,
            tls: tlsCertificate.map { ServerConfiguration.TLSFiles(certificateChain: $0, privateKey: tlsKey!) })
        if configuration.tls == nil, !LoopbackHost.contains(host) {
            logger.warning("serving plain HTTP on \(host): passwords, tokens and documents travel unencrypted; use --tls-cert and --tls-key, or a TLS proxy in front")
        }
        let storage = try ServerStorage(configuration: configuration)
        if demo {
            let created = try await DemoSeeder(storage: storage).seed()
            if !created.isEmpty { logger.info("demo: seeded \(created.joined(separator: ", ")); sign in as demo / demo") }
        }
        let scheme = configuration.scheme
        let app = try DocumentServer.application(storage: storage, configuration: configuration, logger: logger) { host, port in
            // The first line on stdout, exactly: scripts and tests wait for it.
            FileHandle.standardOutput.write(Data("listening on \(scheme)://\(host):\(port)\n".utf8))
            // Under systemd's Type=notify: the unit is started once requests are accepted.
            ServiceManagerNotifier.shared.ready(status: "Listening on \(scheme)://\(host):\(port)")
        }
        let collector = Task.detached {
            while !Task.isCancelled {
                do {
                    let report = try await storage.collectUnreferencedBlobs()
                    if report.removed > 0 { logger.info("removed \(report.removed) blobs no version refers to") }
                    if report.thumbnailsRemoved > 0 { logger.info("removed \(report.thumbnailsRemoved) thumbnails of blobs that are gone") }
                } catch {
                    logger.warning("blob garbage collection failed (tried again in an hour): \(error)")
                }
                try? await Task.sleep(for: .seconds(3600))
            }
        }
        // An expired lock blocks nobody already (every check compares with the clock); the
        // sweep removes it and tells the change feed, so clients stop showing it.
        let sweepInterval = lockSweepInterval
        let sweeper = Task.detached {
            while !Task.isCancelled {
                do {
                    let swept = try await storage.documents.sweepExpiredLocks()
                    if swept > 0 { logger.info("removed \(swept) expired locks") }
                } catch {
                    logger.warning("removing expired locks failed (tried again in \(sweepInterval) s): \(error)")
                }
                try? await Task.sleep(for: .seconds(sweepInterval))
            }
        }
        // Reads the text of stored versions into the search index, off the requests' path.
        let indexer = Task.detached { await storage.searchIndexer.run() }
        try await app.runService()
        indexer.cancel()
        sweeper.cancel()
        collector.cancel()
        storage.close()
    }
}

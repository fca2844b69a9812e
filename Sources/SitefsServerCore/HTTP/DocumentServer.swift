import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL

/// Builds the HTTP application: routes of API v1 over a data directory.
public enum DocumentServer {
    public static func router(storage: ServerStorage, logger: Logger) -> Router<ServerRequestContext> {
        let router = Router(context: ServerRequestContext.self)
        router.add(middleware: RequestLogMiddleware(logger: logger))
        router.add(middleware: ErrorMiddleware(logger: logger))

        let sessions = SessionRoutes(accounts: storage.accounts)
        let thumbnails = Thumbnails(documents: storage.documents, cache: ThumbnailCache(blobs: storage.blobs),
                                    gate: .shared, logger: logger)
        let items = ItemRoutes(documents: storage.documents, thumbnails: thumbnails)
        let content = ContentRoutes(documents: storage.documents, thumbnails: thumbnails)
        let thumbnailRoutes = ThumbnailRoutes(thumbnails: thumbnails)
        let locks = LockRoutes(documents: storage.documents)
        let search = SearchRoutes(documents: storage.documents)

        let v1 = router.group("v1")
        v1.post("session", use: sessions.signIn)

        let signedIn = v1.group().add(middleware: AuthenticationMiddleware(accounts: storage.accounts))
        signedIn.delete("session", use: sessions.signOut)
        signedIn.get("sites", use: items.sites)
        signedIn.get("changes", use: items.changes)
        signedIn.get("search", use: search.search)
        signedIn.get("items/:id", use: items.item)
        signedIn.patch("items/:id", use: items.update)
        signedIn.delete("items/:id", use: items.delete)
        signedIn.get("items/:id/children", use: items.children)
        signedIn.post("items/:id/children", use: items.create)
        signedIn.get("items/:id/versions", use: items.versions)
        signedIn.post("items/:id/versions/:etag/restore", use: items.restore)
        signedIn.get("items/:id/content", use: content.download)
        signedIn.put("items/:id/content", use: content.upload)
        signedIn.get("items/:id/thumbnail", use: thumbnailRoutes.thumbnail)
        signedIn.put("items/:id/lock", use: locks.take)
        signedIn.delete("items/:id/lock", use: locks.release)
        return router
    }

    /// The application, listening where `configuration` says, over HTTPS when it names a
    /// certificate and key (which must load, or this throws). `onListening` gets the bound
    /// address once the socket is open (with `--port 0`, the port the kernel picked).
    public static func application(
        storage: ServerStorage, configuration: ServerConfiguration, logger: Logger,
        onListening: @escaping @Sendable (_ host: String, _ port: Int) async -> Void = { _, _ in }
    ) throws -> some ApplicationProtocol {
        let host = configuration.host
        let timeout = configuration.connectionTimeout
        // Slow and idle connections are closed, and their number is capped: otherwise idle
        // connections can use up the descriptor limit (600 of them under a limit of 512 do)
        // and sign-in times out.
        let http1 = HTTP1Channel.Configuration(additionalChannelHandlers: [BodyStallHandler(timeout: timeout)],
                                               idleTimeout: TimeAmount(timeout))
        var server = HTTPServerBuilder.http1(configuration: http1)
        if let tls = configuration.tls {
            let chain = try NIOSSLCertificate.fromPEMFile(tls.certificateChain).map { NIOSSLCertificateSource.certificate($0) }
            let key = try NIOSSLPrivateKey(file: tls.privateKey, format: .pem)
            var tlsConfiguration = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
            tlsConfiguration.minimumTLSVersion = .tlsv12
            server = try .tls(server, tlsConfiguration: tlsConfiguration)
        }
        return Application(
            router: router(storage: storage, logger: logger),
            server: server,
            configuration: .init(address: .hostname(host, port: configuration.port), serverName: "sitefs-server",
                                 availableConnectionsDelegate: MaximumAvailableConnections(configuration.maximumConnections)),
            onServerRunning: { channel in await onListening(host, channel.localAddress?.port ?? configuration.port) },
            logger: logger)
    }
}

import Foundation
import SitefsAPI

/// Everything a running document server is configured with.
public struct ServerConfiguration: Sendable {
    /// Holds `blobs/` (with their thumbnails in `blobs/thumbnails/`), its staging folder `tmp/`,
    /// and `metadata.sqlite` (users, sites, items, versions, change feed) unless `database`
    /// names a PostgreSQL database. With PostgreSQL, every instance is given the same folder (a
    /// shared filesystem when they run on several machines).
    public var dataDirectory: URL
    /// The metadata in PostgreSQL instead of SQLite (`--database`); nil: SQLite.
    public var database: PostgresLocation?
    /// Connections (and threads) each instance keeps to PostgreSQL.
    public var databaseConnections: Int
    public var host: String
    /// 0 picks a free port.
    public var port: Int
    /// How long a session token stays valid after sign-in.
    public var tokenLifetimeSeconds: Int64
    /// Largest accepted upload; bigger bodies get 413 while streaming.
    public var maximumUploadBytes: Int64
    /// PBKDF2 rounds for new password hashes (existing hashes carry their own count).
    public var passwordIterations: Int
    /// A connection with no request under way (idle, or a request head still arriving) is
    /// closed after this; so is one whose request body stops arriving for this long.
    public var connectionTimeout: Duration
    /// Connections served at once; more wait in the listen backlog.
    public var maximumConnections: Int
    /// Serve HTTPS with this certificate chain and key (PEM files); nil: plain HTTP.
    public var tls: TLSFiles?
    /// The wall clock sessions and locks are stamped and expired by; tests pass one they
    /// move by hand.
    public var now: @Sendable () -> Timestamp

    public struct TLSFiles: Sendable {
        public var certificateChain: String
        public var privateKey: String

        public init(certificateChain: String, privateKey: String) {
            self.certificateChain = certificateChain
            self.privateKey = privateKey
        }
    }

    /// "http" or "https", as the server is reached.
    public var scheme: String { tls == nil ? "http" : "https" }

    public init(
        dataDirectory: URL,
        database: PostgresLocation? = nil,
        databaseConnections: Int = 8,
        host: String = "127.0.0.1",
        port: Int = 8080,
        tokenLifetimeSeconds: Int64 = 7 * 24 * 3600,
        maximumUploadBytes: Int64 = 16 << 30,
        passwordIterations: Int = 210_000,
        connectionTimeout: Duration = .seconds(60),
        maximumConnections: Int = 256,
        tls: TLSFiles? = nil,
        now: @escaping @Sendable () -> Timestamp = { Timestamp.now() }
    ) {
        self.dataDirectory = dataDirectory
        self.database = database
        self.databaseConnections = databaseConnections
        self.host = host
        self.port = port
        self.tokenLifetimeSeconds = tokenLifetimeSeconds
        self.maximumUploadBytes = maximumUploadBytes
        self.passwordIterations = passwordIterations
        self.connectionTimeout = connectionTimeout
        self.maximumConnections = maximumConnections
        self.tls = tls
        self.now = now
    }
}

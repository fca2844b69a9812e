import Foundation

/// A real WebDAV server nobody here wrote: Apache 2.4's mod_dav_fs (Debian's apache2),
/// serving a directory of the test's as the collection `/dav/` on 127.0.0.1, optionally
/// behind HTTP Basic. `/usr/sbin/apache2` runs in the foreground on a configuration of its
/// own; its logs, pid file, mutexes and lock database live in a directory beside `root`,
/// so nothing of the system's Apache (its config, apache2ctl, systemd) is involved.
///
/// Apache refuses to serve as root: started by root (CI), it serves as www-data. `root`
/// and everything in it are then handed to www-data, and so is whatever the disk helpers
/// of `WebDAVTestServer` make later, so the server can replace and delete what the test
/// made, as a real server can with files that are all its own. The test, being root, still
/// reads and changes everything. Started by anyone else, Apache serves as that user and
/// nothing changes hands. Either way the folders above `root` must be searchable by the
/// server's account (a temporary directory's are).
public final class ApacheDAVServer: WebDAVTestServer, @unchecked Sendable {
    /// `http://127.0.0.1:PORT/dav/`: the collection's URL.
    public let baseURL: String
    /// `http://127.0.0.1:PORT`.
    public let origin: String
    public let collectionPath = "/dav/"
    public let root: URL
    /// www-data when the test runs as root, else nil.
    public let diskOwner: TestAccount?
    private let directory: URL
    private let process: Process

    public static let executable = URL(fileURLWithPath: "/usr/sbin/apache2")
    private static let modulesDirectory = "/usr/lib/apache2/modules"

    /// Starts Apache on an unused port and waits until it serves `root`.
    public init(root: URL, credentials: BasicCredentials? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: ApacheDAVServer.executable.path) else {
            throw ProcessFailure("Apache is not installed (apt-get install apache2)")
        }
        let directory = root.deletingLastPathComponent().appendingPathComponent("apache-\(UUID().uuidString)")
        let owner = try geteuid() == 0 ? TestAccount.named("www-data") : nil
        let locks = directory.appendingPathComponent("locks")
        try FileManager.default.createDirectory(at: locks, withIntermediateDirectories: true)
        let htpasswd = directory.appendingPathComponent("htpasswd")
        try credentials?.writeHtpasswd(to: htpasswd)
        // The workers open the lock database and the password file, as the server's account.
        try owner?.takeTree(locks)
        if credentials != nil { try owner?.takeTree(htpasswd) }
        try owner?.takeTree(root)
        let console = directory.appendingPathComponent("console.log")
        let errorLog = directory.appendingPathComponent("error.log")
        let (process, port) = try WebServerDaemon.launch("Apache", root: root, credentials: credentials,
                                                         log: { WebServerDaemon.text(of: console) + WebServerDaemon.text(of: errorLog) }) { port in
            let configuration = directory.appendingPathComponent("httpd.conf")
            try ApacheDAVServer.configuration(port: port, root: root, directory: directory, owner: owner,
                                              htpasswd: credentials == nil ? nil : htpasswd).write(to: configuration, atomically: true, encoding: .utf8)
            _ = FileManager.default.createFile(atPath: console.path, contents: nil)
            let process = Process()
            process.executableURL = ApacheDAVServer.executable
            process.arguments = ["-f", configuration.path, "-DFOREGROUND"]
            // Only what Apache says before it opens its error log (a bad configuration).
            let log = try FileHandle(forWritingTo: console)
            process.standardOutput = log
            process.standardError = log
            try process.run()
            return (process, "http://127.0.0.1:\(port)/dav/")
        }
        self.root = root
        self.directory = directory
        self.process = process
        diskOwner = owner
        origin = "http://127.0.0.1:\(port)"
        baseURL = "http://127.0.0.1:\(port)/dav/"
    }

    /// What Apache said on its console and in its error log so far.
    public var log: String {
        WebServerDaemon.text(of: directory.appendingPathComponent("console.log"))
            + WebServerDaemon.text(of: directory.appendingPathComponent("error.log"))
    }

    /// One line per request: client, user, request line, status, bytes.
    public var accessLog: String { WebServerDaemon.text(of: directory.appendingPathComponent("access.log")) }

    /// SIGTERM, then SIGKILL to Apache and its workers after 10 s.
    public func stop() { WebServerDaemon.stop(process) }

    deinit { stop() }

    /// Only the modules the collection needs: the event MPM, mod_dav with its filesystem
    /// provider (and lock database), mod_alias for the `/dav` prefix, mod_mime for the
    /// content types a real server sends, and mod_auth_basic with a password file when
    /// sign-in is asked for. mod_log_config and mod_unixd are built in.
    private static func configuration(port: UInt16, root: URL, directory: URL, owner: TestAccount?, htpasswd: URL?) -> String {
        let modules = ["mpm_event", "authz_core", "authn_core", "alias", "mime", "dav", "dav_fs"]
            + (htpasswd == nil ? [] : ["auth_basic", "authn_file", "authz_user"])
        let access = htpasswd.map { ["AuthType Basic", "AuthName \"sitefs test\"", "AuthBasicProvider file",
                                     "AuthUserFile \"\($0.path)\"", "Require valid-user"] } ?? ["Require all granted"]
        return (modules.map { "LoadModule \($0)_module \(Self.modulesDirectory)/mod_\($0).so" } + [
            "ServerRoot \"\(directory.path)\"",
            "ServerName 127.0.0.1",
            "Listen 127.0.0.1:\(port)",
            "PidFile \"\(directory.path)/httpd.pid\"",
            "DefaultRuntimeDir \"\(directory.path)\"",
            "Mutex file:\(directory.path) default",
            "ErrorLog \"\(directory.path)/error.log\"",
            "LogLevel info",
            "CustomLog \"\(directory.path)/access.log\" \"%h %u \\\"%r\\\" %>s %b\"",
            "TypesConfig /etc/mime.types",
            // A small fixed pool: one worker process, a second only under load.
            "StartServers 1", "ServerLimit 2", "ThreadsPerChild 16", "MaxRequestWorkers 32",
            "MinSpareThreads 1", "MaxSpareThreads 32",
        ] + (owner.map { ["User #\($0.uid)", "Group #\($0.gid)"] } ?? []) + [
            "DavLockDB \"\(directory.path)/locks/DavLock\"",
            "Alias /dav \"\(root.path)\"",
            "<Directory \"\(root.path)\">",
            "    Dav On",
            "    Options None",
            "    AllowOverride None",
        ] + access.map { "    " + $0 } + [
            "</Directory>",
        ]).joined(separator: "\n") + "\n"
    }
}

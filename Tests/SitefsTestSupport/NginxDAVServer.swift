import Foundation

/// A real WebDAV server nobody here wrote: nginx's dav module with the dav-ext module for
/// PROPFIND and OPTIONS (Debian's nginx and libnginx-mod-http-dav-ext), serving a directory
/// of the test's as the collection `/dav/` on 127.0.0.1, optionally behind HTTP Basic.
/// `/usr/sbin/nginx` runs in the foreground on a configuration of its own; its logs, pid
/// file and request-body temp folders live in a directory beside `root`.
///
/// Started by root (CI), nginx runs its worker as root too (`user root root`), so the files
/// it writes and the files the test writes have one owner and nothing changes hands: nginx,
/// unlike Apache, allows that. Started by anyone else, it serves as that user.
public final class NginxDAVServer: WebDAVTestServer, @unchecked Sendable {
    /// `http://127.0.0.1:PORT/dav/`: the collection's URL.
    public let baseURL: String
    /// `http://127.0.0.1:PORT`.
    public let origin: String
    public let collectionPath = "/dav/"
    public let root: URL
    /// nginx serves as the test's own user.
    public var diskOwner: TestAccount? { nil }
    private let directory: URL
    private let process: Process

    public static let executable = URL(fileURLWithPath: "/usr/sbin/nginx")
    private static let davExtModule = "/usr/lib/nginx/modules/ngx_http_dav_ext_module.so"

    /// Starts nginx on an unused port and waits until it serves `root`. With `locks`, dav-ext
    /// keeps WebDAV locks (LOCK, UNLOCK, `lockdiscovery`; its OPTIONS then says `DAV: 2`,
    /// else `DAV: 1`) in a shared zone, granting each lock `lockTimeout` whatever the client
    /// asks (dav-ext's default is a minute).
    public init(root: URL, credentials: BasicCredentials? = nil, locks: Bool = true, lockTimeout: Duration = .seconds(60)) throws {
        guard FileManager.default.isExecutableFile(atPath: NginxDAVServer.executable.path),
              FileManager.default.fileExists(atPath: NginxDAVServer.davExtModule) else {
            throw ProcessFailure("nginx or its dav-ext module is not installed (apt-get install nginx libnginx-mod-http-dav-ext)")
        }
        let directory = root.deletingLastPathComponent().appendingPathComponent("nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let htpasswd = directory.appendingPathComponent("htpasswd")
        try credentials?.writeHtpasswd(to: htpasswd)
        let console = directory.appendingPathComponent("console.log")
        let errorLog = directory.appendingPathComponent("error.log")
        let (process, port) = try WebServerDaemon.launch("nginx", root: root, credentials: credentials,
                                                         log: { WebServerDaemon.text(of: console) + WebServerDaemon.text(of: errorLog) }) { port in
            let configuration = directory.appendingPathComponent("nginx.conf")
            try NginxDAVServer.configuration(port: port, root: root, directory: directory,
                                             htpasswd: credentials == nil ? nil : htpasswd,
                                             lockTimeout: locks ? lockTimeout : nil).write(to: configuration, atomically: true, encoding: .utf8)
            _ = FileManager.default.createFile(atPath: console.path, contents: nil)
            let process = Process()
            process.executableURL = NginxDAVServer.executable
            // -e: the error log from the start, not the one nginx was built with (which may be
            // a system path an ordinary user cannot open).
            process.arguments = ["-p", directory.path, "-c", configuration.path, "-e", errorLog.path, "-g", "daemon off;"]
            let log = try FileHandle(forWritingTo: console)
            process.standardOutput = log
            process.standardError = log
            try process.run()
            return (process, "http://127.0.0.1:\(port)/dav/")
        }
        self.root = root
        self.directory = directory
        self.process = process
        origin = "http://127.0.0.1:\(port)"
        baseURL = "http://127.0.0.1:\(port)/dav/"
    }

    /// What nginx said on its console and in its error log so far.
    public var log: String {
        WebServerDaemon.text(of: directory.appendingPathComponent("console.log"))
            + WebServerDaemon.text(of: directory.appendingPathComponent("error.log"))
    }

    /// One line per request, in nginx's combined format.
    public var accessLog: String { WebServerDaemon.text(of: directory.appendingPathComponent("access.log")) }

    /// SIGTERM (nginx's fast shutdown), then SIGKILL to nginx and its worker after 10 s.
    public func stop() { WebServerDaemon.stop(process) }

    deinit { stop() }

    /// One worker; every path nginx writes (pid, logs, request-body and proxy temp folders,
    /// built to be under /var/lib/nginx) in `directory`; no body size limit (the default
    /// 1 MB would refuse large PUTs); files created readable by all, as on a real server;
    /// `create_full_put_path off`, so a PUT into a missing folder fails as WebDAV says; with a
    /// `lockTimeout`, a lock zone (1 MiB: thousands of locks) and LOCK and UNLOCK.
    private static func configuration(port: UInt16, root: URL, directory: URL, htpasswd: URL?, lockTimeout: Duration?) -> String {
        let access = htpasswd.map { ["auth_basic \"sitefs test\";", "auth_basic_user_file \"\($0.path)\";"] } ?? []
        let temporary = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map { "\($0)_temp_path \"\(directory.path)/\($0)\";" }
        return ([
            "load_module \(davExtModule);",
        ] + (geteuid() == 0 ? ["user root root;"] : []) + [
            "worker_processes 1;",
            "pid \"\(directory.path)/nginx.pid\";",
            "error_log \"\(directory.path)/error.log\" info;",
            "events { worker_connections 256; }",
            "http {",
            "    access_log \"\(directory.path)/access.log\";",
        ] + temporary.map { "    " + $0 } + [
            "    client_max_body_size 0;",
        ] + (lockTimeout.map { ["    dav_ext_lock_zone zone=sitefs:1m timeout=\($0.components.seconds)s;"] } ?? []) + [
            "    server {",
            "        listen 127.0.0.1:\(port);",
            "        server_name 127.0.0.1;",
            "        location /dav/ {",
            "            alias \"\(root.path)/\";",
            "            dav_methods PUT DELETE MKCOL COPY MOVE;",
        ] + (lockTimeout == nil ? ["            dav_ext_methods PROPFIND OPTIONS;"]
             : ["            dav_ext_methods PROPFIND OPTIONS LOCK UNLOCK;", "            dav_ext_lock zone=sitefs;"]) + [
            "            create_full_put_path off;",
            "            dav_access user:rw group:r all:r;",
        ] + access.map { "            " + $0 } + [
            "        }",
            "    }",
            "}",
        ]).joined(separator: "\n") + "\n"
    }
}

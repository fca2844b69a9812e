import Foundation

/// Where a PostgreSQL database is and how to sign in to it: `--database URL` plus the
/// password from where libpq users keep it.
///
/// The URL is `postgres://USER@HOST:PORT/DATABASE?sslmode=MODE`, or with `?host=/run/dir`
/// (or an empty host) a Unix socket in that folder, as libpq reads it. A password in the
/// URL is refused: the URL is an argument, and arguments are visible to every user in
/// `ps`. The password comes from `--database-password-file`, else `PGPASSWORD`, else the
/// `.pgpass` file (`PGPASSFILE` or `~/.pgpass`, ignored unless private, as libpq does).
public struct PostgresLocation: Sendable, CustomStringConvertible {
    public enum Endpoint: Sendable, Equatable {
        case tcp(host: String, port: Int)
        /// The socket file itself (`DIR/.s.PGSQL.PORT`).
        case socket(path: String)
    }

    /// libpq's `sslmode`, the values that mean something here.
    public enum TLSMode: String, Sendable {
        /// Plain TCP.
        case disable
        /// TLS when the server offers it, certificate not checked (libpq's default).
        case prefer
        /// TLS or no connection, certificate not checked.
        case require
        /// TLS with the certificate checked against the system's roots and the host name.
        case verifyFull = "verify-full"
    }

    public var endpoint: Endpoint
    public var user: String
    public var database: String
    public var password: String?
    public var tls: TLSMode

    public init(endpoint: Endpoint, user: String, database: String, password: String? = nil, tls: TLSMode = .prefer) {
        self.endpoint = endpoint
        self.user = user
        self.database = database
        self.password = password
        self.tls = tls
    }

    /// The URL without any secret, for logs and messages.
    public var description: String {
        switch endpoint {
        case .tcp(let host, let port):
            let shownHost = host.contains(":") ? "[\(host)]" : host
            return "postgres://\(user)@\(shownHost):\(port)/\(database)"
        case .socket(let path):
            return "postgres://\(user)@/\(database)?socket=\(path)"
        }
    }

    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    /// Reads `--database URL`, then finds the password (see the type's comment).
    public static func parse(
        _ text: String, passwordFile: String? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        homeDirectory: String = NSHomeDirectory(), currentUser: String = NSUserName()
    ) throws -> PostgresLocation {
        guard let components = URLComponents(string: text),
              let scheme = components.scheme?.lowercased(), ["postgres", "postgresql"].contains(scheme)
        else { throw Invalid(description: "--database must be a postgres://USER@HOST:PORT/DATABASE URL") }
        guard components.password == nil else {
            throw Invalid(description: "--database must not carry a password (arguments are visible to every user); put it in PGPASSWORD, ~/.pgpass or --database-password-file")
        }
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] { query[item.name] = item.value ?? "" }
        let known: Set<String> = ["host", "port", "sslmode", "user", "dbname"]
        if let unknown = query.keys.sorted().first(where: { !known.contains($0) }) {
            throw Invalid(description: "--database: unknown parameter '\(unknown)' (known: \(known.sorted().joined(separator: ", ")))")
        }
        let user = query["user"] ?? components.user.flatMap { $0.removingPercentEncoding } ?? environment["PGUSER"] ?? currentUser
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let database = query["dbname"] ?? (path.isEmpty ? nil : path.removingPercentEncoding) ?? user
        let portText = query["port"] ?? components.port.map(String.init) ?? environment["PGPORT"] ?? "5432"
        guard let port = Int(portText), (1...65535).contains(port) else {
            throw Invalid(description: "--database: port '\(portText)' is not 1-65535")
        }
        let host = query["host"] ?? components.host.flatMap { $0.removingPercentEncoding }.flatMap { $0.isEmpty ? nil : $0 }
            ?? "/var/run/postgresql"
        let endpoint: Endpoint = host.hasPrefix("/")
            ? .socket(path: (host as NSString).appendingPathComponent(".s.PGSQL.\(port)"))
            : .tcp(host: host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port: port)
        let modeText = query["sslmode"] ?? environment["PGSSLMODE"] ?? "prefer"
        guard let tls = TLSMode(rawValue: modeText) else {
            throw Invalid(description: "--database: sslmode must be disable, prefer, require or verify-full, not '\(modeText)'")
        }
        var location = PostgresLocation(endpoint: endpoint, user: user, database: database, tls: tls)
        location.password = try password(for: location, file: passwordFile, environment: environment, homeDirectory: homeDirectory)
        return location
    }

    private static func password(
        for location: PostgresLocation, file: String?, environment: [String: String], homeDirectory: String
    ) throws -> String? {
        if let file {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw Invalid(description: "cannot read the database password file \(file)")
            }
            return text.trimmingCharacters(in: .newlines)
        }
        if let password = environment["PGPASSWORD"] { return password }
        let passFile = environment["PGPASSFILE"] ?? (homeDirectory as NSString).appendingPathComponent(".pgpass")
        return PasswordFile.lookUp(in: passFile, for: location)
    }
}

/// libpq's password file: `host:port:database:user:password` lines, `*` matching anything,
/// `\:` and `\\` escaped. Ignored when other users may read it, as libpq ignores it.
enum PasswordFile {
    static func lookUp(in path: String, for location: PostgresLocation) -> String? {
        var status = stat()
        guard stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG, status.st_mode & 0o077 == 0,
              let text = try? String(contentsOfFile: path, encoding: .utf8)
        else { return nil }
        let (host, port): (String, String) = switch location.endpoint {
        case .tcp(let host, let port): (host, String(port))
        // A socket connection matches `localhost`, and its port is the socket name's.
        case .socket(let path): ("localhost", String(path.split(separator: ".").last ?? "5432"))
        }
        let wanted = [host, port, location.database, location.user]
        for line in text.split(whereSeparator: \.isNewline) where !line.hasPrefix("#") {
            let fields = split(String(line))
            guard fields.count == 5 else { continue }
            if zip(fields.prefix(4), wanted).allSatisfy({ $0 == "*" || $0 == $1 }) { return fields[4] }
        }
        return nil
    }

    /// Splits one line at unescaped colons, undoing `\:` and `\\`.
    static func split(_ line: String) -> [String] {
        var fields: [String] = [""]
        var escaped = false
        for character in line {
            if escaped {
                fields[fields.count - 1].append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == ":" && fields.count < 5 {
                fields.append("")
            } else {
                fields[fields.count - 1].append(character)
            }
        }
        return fields
    }
}

import Foundation

/// The user name and password a test web server asks for (HTTP Basic), for tests of signing in.
public struct BasicCredentials: Sendable {
    public let user: String
    public let password: String

    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    /// Writes an htpasswd file with `htpasswd` (apache2-utils, which apache2 depends on): in
    /// Apache's MD5 scheme (apr1), which Apache and nginx both read whatever libc's crypt()
    /// supports. The password goes through stdin, not argv.
    func writeHtpasswd(to file: URL) throws {
        let made = try run(URL(fileURLWithPath: "/usr/bin/htpasswd"), ["-i", "-c", "-m", file.path, user], stdin: password)
        guard made.status == 0 else { throw ProcessFailure("htpasswd failed (\(made.status)): \(made.err)") }
    }

    /// The same credentials as curl's `user` option, for a config read from stdin (`-K -`).
    var curlConfig: String {
        let quoted = "\(user):\(password)".replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return "user = \"\(quoted)\"\n"
    }
}

import ArgumentParser
import Foundation
import SitefsCommandLine

/// How `login` and `mount` reach a server: whom to trust for https, and whether plain http
/// may leave this machine.
struct TransportOptions: ParsableArguments {
    @Option(name: .customLong("ca-file"),
            help: "PEM file of the certificate authorities to trust for https (default: the one given at login, $SSL_CERT_FILE, or the system's).")
    var caFile: String?
    @Flag(name: .customLong("allow-insecure-http"),
          help: "Allow plain http to another machine: the password, the session token and every document travel unencrypted.")
    var allowInsecureHTTP = false
}

/// Plain http is for this machine only (the demo, a test server, a tunnel): to any other
/// host it would carry the password and the documents in clear, so it is refused unless the
/// user says otherwise, and then warned about.
enum TransportSecurity {
    static func check(_ server: String, allowInsecureHTTP: Bool) throws {
        guard let url = URL(string: server), let scheme = url.scheme?.lowercased() else {
            throw UserFacingError("\(server) is not a server URL (http://HOST:PORT or https://HOST:PORT)")
        }
        switch scheme {
        case "https":
            return
        case "http":
            guard !LoopbackHost.contains(url.host ?? "") else { return }
            guard allowInsecureHTTP else {
                throw UserFacingError("refusing plain http to \(url.host ?? server): the password and the documents would travel "
                                      + "unencrypted; use https, or pass --allow-insecure-http if this network is trusted")
            }
            FileHandle.standardError.write(Data("warning: plain http to \(url.host ?? server): the password and the documents travel unencrypted\n".utf8))
        default:
            throw UserFacingError("\(server): only http and https servers are supported")
        }
    }

    /// The certificate authorities to trust for an https `server`: given now, else given at
    /// login, else `SSL_CERT_FILE`, else nil (the system's). Made absolute, and checked to be
    /// readable. Plain http needs none, so nothing there can fail on one.
    static func caFile(for server: String, given: String?, stored: String?) throws -> String? {
        guard URL(string: server)?.scheme?.lowercased() == "https" else { return nil }
        let environment = ProcessInfo.processInfo.environment["SSL_CERT_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        guard let path = given ?? stored ?? environment else { return nil }
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        guard FileManager.default.isReadableFile(atPath: absolute) else {
            throw UserFacingError("cannot read the certificate authority file \(absolute)")
        }
        return absolute
    }
}

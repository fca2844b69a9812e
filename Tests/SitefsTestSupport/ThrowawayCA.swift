import Foundation

/// A certificate authority made for one test with the `openssl` command, and the server
/// certificates it issues: valid, for the wrong host, or expired. Keys are P-256, made fresh,
/// and live in the test's own folder.
public struct ThrowawayCA: Sendable {
    public let directory: URL
    /// The CA's certificate (PEM): what a client is told to trust.
    public let certificate: String

    public struct Issued: Sendable {
        public let certificate: String
        public let key: String
    }

    public init(in directory: URL) throws {
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        certificate = directory.appendingPathComponent("ca.pem").path
        try Self.openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                          "-keyout", path("ca.key"), "-out", certificate, "-days", "2", "-subj", "/CN=sitefs test CA",
                          "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        try Data().write(to: directory.appendingPathComponent("index.txt"))
        try Data("01\n".utf8).write(to: directory.appendingPathComponent("serial"))
        try """
            [ ca ]
            default_ca = test
            [ test ]
            database = \(path("index.txt"))
            new_certs_dir = \(directory.path)
            serial = \(path("serial"))
            default_md = sha256
            policy = anything
            unique_subject = no
            [ anything ]
            commonName = supplied
            """.write(toFile: path("ca.cnf"), atomically: true, encoding: .utf8)
    }

    /// A server certificate for `hosts` (subjectAltName entries: `IP:127.0.0.1`,
    /// `DNS:localhost`), valid from now for two days, or `expired` (valid in January 2020).
    public func issue(_ name: String, hosts: [String] = ["IP:127.0.0.1", "DNS:localhost"], expired: Bool = false) throws -> Issued {
        let key = path("\(name).key"), request = path("\(name).csr"), certificate = path("\(name).pem"), extensions = path("\(name).ext")
        try "subjectAltName=\(hosts.joined(separator: ","))\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
            .write(toFile: extensions, atomically: true, encoding: .utf8)
        try Self.openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", request,
                          "-subj", "/CN=\(name)"])
        let validity = expired ? ["-startdate", "20200101000000Z", "-enddate", "20200102000000Z"] : ["-days", "2"]
        try Self.openssl(["ca", "-batch", "-config", path("ca.cnf"), "-cert", self.certificate, "-keyfile", path("ca.key"),
                          "-in", request, "-out", certificate, "-extfile", extensions, "-notext"] + validity)
        return Issued(certificate: certificate, key: key)
    }

    /// A certificate for 127.0.0.1 signed by its own key: no CA vouches for it.
    public func selfSigned(_ name: String) throws -> Issued {
        let key = path("\(name).key"), certificate = path("\(name).pem")
        try Self.openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
                          "-out", certificate, "-days", "2", "-subj", "/CN=\(name)", "-addext", "subjectAltName=IP:127.0.0.1"])
        return Issued(certificate: certificate, key: key)
    }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    private static func openssl(_ arguments: [String]) throws {
        let result = try run(URL(fileURLWithPath: "/usr/bin/openssl"), arguments, timeout: 60)
        guard result.status == 0 else { throw ProcessFailure("openssl \(arguments.prefix(2).joined(separator: " ")): \(result.err)") }
    }
}

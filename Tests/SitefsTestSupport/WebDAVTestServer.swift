import Foundation

/// A real WebDAV server nobody here wrote (WsgiDAV, Apache's mod_dav, nginx), serving a
/// directory of the test's on 127.0.0.1 as one collection. The test plays "another client
/// changed the server" by changing the directory through the disk helpers below, and checks
/// the directory to check what a client did.
///
/// No `baseURL` here: WsgiDAV's has always meant its origin, Apache's and nginx's mean the
/// collection's URL; `origin` and `collectionPath` say the same for all three.
public protocol WebDAVTestServer: Sendable {
    /// `http://127.0.0.1:PORT`: the origin hrefs are checked against.
    var origin: String { get }
    /// Where the collection is served: starts and ends with `/` (`/`, `/dav/`).
    var collectionPath: String { get }
    /// The directory served as the collection.
    var root: URL { get }
    /// The account the server writes files as, when it is not the test process's own (Apache
    /// started by root serves as www-data); nil when the server writes as the test's user.
    var diskOwner: TestAccount? { get }
    /// What the server logged so far.
    var log: String { get }
    func stop()
}

/// The disk helpers: a path is relative to `root`, components separated by `/`. When the
/// server writes as another account, what the helpers create is handed to that account,
/// since a server that cannot replace or delete a file the test made would fail the test
/// for a reason no real server has (its files are its own).
extension WebDAVTestServer {
    /// `origin + collectionPath`, ending in `/`.
    public var collectionURL: String { origin + collectionPath }

    /// Where `path` is on the server's disk.
    public func onDisk(_ path: String) -> URL {
        path.isEmpty ? root : root.appendingPathComponent(path)
    }

    /// Writes a file in place (the parent must exist), as another client saving it would.
    public func writeFile(_ path: String, _ contents: Data) throws {
        try contents.write(to: onDisk(path))
        try handOver(path)
    }

    public func writeFile(_ path: String, _ text: String) throws {
        try writeFile(path, Data(text.utf8))
    }

    /// Makes a folder and whatever parents it lacks.
    public func makeFolder(_ path: String) throws {
        var made = ""
        for component in path.split(separator: "/") {
            made = made.isEmpty ? String(component) : "\(made)/\(component)"
            guard !FileManager.default.fileExists(atPath: onDisk(made).path) else { continue }
            try FileManager.default.createDirectory(at: onDisk(made), withIntermediateDirectories: false)
            try handOver(made)
        }
    }

    /// Renames within the server's disk (rename(2): the file keeps its inode and times).
    public func rename(_ path: String, to newPath: String) throws {
        guard Glibc.rename(onDisk(path).path, onDisk(newPath).path) == 0 else {
            throw ProcessFailure("cannot rename \(path) to \(newPath): \(String(cString: strerror(errno)))")
        }
    }

    /// Removes a file or a whole folder.
    public func remove(_ path: String) throws {
        try FileManager.default.removeItem(at: onDisk(path))
    }

    public func read(_ path: String) throws -> Data {
        try Data(contentsOf: onDisk(path))
    }

    public func exists(_ path: String) -> Bool {
        FileManager.default.fileExists(atPath: onDisk(path).path)
    }

    /// Gives `path` and everything under it to the account the server writes as (nothing to
    /// do when that is the test's own), for what a test made on the disk by other means.
    public func handOver(_ path: String = "") throws {
        try diskOwner?.takeTree(onDisk(path))
    }
}

extension TestAccount {
    /// Makes this account the owner of `top` and everything under it (chown only: modes stay).
    func takeTree(_ top: URL) throws {
        var paths = [top.path]
        if let below = FileManager.default.enumerator(atPath: top.path) {
            while let relative = below.nextObject() as? String { paths.append(top.appendingPathComponent(relative).path) }
        }
        for path in paths {
            guard lchown(path, uid, gid) == 0 else {
                throw ProcessFailure("cannot give \(path) to \(name): \(String(cString: strerror(errno)))")
            }
        }
    }
}

import Foundation
import SitefsTestSupport
import Testing

/// A real mount (`ScenarioMount`, sitefs-server or a WebDAV server) and a local folder beside
/// it, for running the same shell steps in both: what a tool does on the local disk is what it
/// must do on the mount (issue 35: git, autotools, tar, rsync, cp on the mount as on a disk).
///
/// Steps run as this process's user (root on CI) with an environment of their own: a home
/// and a TMPDIR in the test's folder, git's identity and dates fixed (so commits made in
/// either place have the same ids), no system or global git configuration.
final class ShellToolsBench: @unchecked Sendable {
    let mount: ScenarioMount
    /// The local twin of `onMount`, on the machine's disk.
    let local: URL
    /// A folder of the test's on the mount ("Riverside/<name>").
    let onMount: URL
    /// Scratch on the local disk (archives, bare repositories).
    let scratch: URL
    let environment: [String: String]

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    static let support = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support")

    init(_ backend: ScenarioBackend, name: String) throws {
        mount = try ScenarioMount(backend)
        do {
            local = mount.root.appendingPathComponent("local/\(name)")
            scratch = mount.root.appendingPathComponent("scratch")
            let home = mount.root.appendingPathComponent("tools-home"), tmp = mount.root.appendingPathComponent("tools-tmp")
            for folder in [local, scratch, home, tmp] {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            }
            onMount = mount.mountpoint.appendingPathComponent("Riverside/\(name)")
            try FileManager.default.createDirectory(at: onMount, withIntermediateDirectories: false)
            let when = "2026-01-02T03:04:05+00:00"
            environment = ["PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": home.path, "TMPDIR": tmp.path,
                           "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
                           "GIT_AUTHOR_NAME": "Anna", "GIT_AUTHOR_EMAIL": "anna@example.org", "GIT_COMMITTER_NAME": "Anna",
                           "GIT_COMMITTER_EMAIL": "anna@example.org", "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when]
        } catch {
            mount.tearDown()
            throw error
        }
    }

    func tearDown() { mount.tearDown() }

    /// `sh -c script` in `folder`, `set -e` and `-x` (stderr shows the step that failed): one
    /// command a line, as `set -e` does not stop at a failure on the left of `&&`.
    @discardableResult
    func shell(_ script: String, in folder: URL, timeout: TimeInterval = 120) throws -> ProcessOutcome {
        try run(URL(fileURLWithPath: "/bin/sh"), ["-exc", script], timeout: timeout, environment: environment,
                inheritEnvironment: false, directory: folder)
    }

    /// The same steps in the local folder, which must succeed (else the test itself is
    /// wrong), then on the mount; both outcomes.
    func both(_ script: String, timeout: TimeInterval = 120, sourceLocation: SourceLocation = #_sourceLocation) throws
        -> (local: ProcessOutcome, mount: ProcessOutcome) {
        let here = try shell(script, in: local, timeout: timeout)
        try #require(here.status == 0, "the steps fail on the local disk: \(here.err.suffix(3000))", sourceLocation: sourceLocation)
        let there = try shell(script, in: onMount, timeout: timeout)
        #expect(there.status == 0, "on the mount (\(mount.server.backend)): \(there.err.suffix(3000))\nlog: \(mount.daemonLog.suffix(2000))",
                sourceLocation: sourceLocation)
        return (here, there)
    }

    /// Every entry under `relative` in both folders, one line each, sorted: path, type,
    /// permission bits, link target, and size and mtime of regular files (`find -printf`).
    func listing(_ relative: String) throws -> (local: String, mount: String) {
        let script = "cd '\(relative)' && find . -mindepth 1 \\( -type f -printf '%p %y %m %s %Ts\\n' \\) -o \\( -printf '%p %y %m %l\\n' \\) | LC_ALL=C sort"
        let here = try shell(script, in: local), there = try shell(script, in: onMount)
        #expect(there.status == 0, "find on the mount: \(there.err)")
        return (here.out, there.out)
    }

    /// `diff -r --no-dereference` of `relative` between the folders: empty when the trees
    /// have the same names, types, contents and link targets.
    func diff(_ relative: String, excluding excluded: [String] = []) throws -> ProcessOutcome {
        try run(URL(fileURLWithPath: "/usr/bin/diff"),
                ["-r", "--no-dereference"] + excluded.map { "--exclude=\($0)" } + [local.appendingPathComponent(relative).path, onMount.appendingPathComponent(relative).path],
                timeout: 120, environment: environment, inheritEnvironment: false)
    }
}

/// What the tree tests unpack and copy: files with modes (0755 script, 0600 file, 0644),
/// a 0700 folder, links to files and folders with relative and absolute targets, a dangling
/// one, a link inside a linked folder; made on the local disk, as a tar archive.
enum ModesAndLinksTree {
    static let script = """
        mkdir -p tree/bin tree/private tree/docs/deep
        printf '#!/bin/sh\\necho "tool ran"\\n' > tree/bin/tool.sh && chmod 0755 tree/bin/tool.sh
        printf 'secret\\n' > tree/private/key && chmod 0600 tree/private/key
        chmod 0700 tree/private
        printf 'read me\\n' > tree/docs/readme.txt && chmod 0644 tree/docs/readme.txt
        printf 'deep\\n' > tree/docs/deep/note.txt && chmod 0640 tree/docs/deep/note.txt
        ln -s ../docs/readme.txt tree/bin/readme
        ln -s docs tree/docs-link
        ln -s deep/note.txt tree/docs/note
        ln -s /etc/hostname tree/hostname
        ln -s /usr/share tree/share
        ln -s no/such/file tree/dangling
        touch -d '2020-05-06 07:08:09' tree/docs/readme.txt tree/bin/tool.sh
        tar cf tree.tar tree
        """
}

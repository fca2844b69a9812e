import Foundation

/// A home of its own for a desktop program a test runs (LibreOffice, Files and what they
/// start): `HOME`, the XDG folders and a private `XDG_RUNTIME_DIR`, all inside the test's
/// folder. Without it such programs write into the real home of whoever runs the tests:
/// dconf's state and GNOME's caches under `~/.cache`, settings under `~/.config`, and the
/// document portal's FUSE mount at `~/.cache/doc` when no runtime folder is set.
public struct PrivateHome: Sendable {
    public let home: URL
    /// `XDG_RUNTIME_DIR`, 0700 as the XDG base directory spec asks.
    public let runtime: URL

    /// Makes `folder/home` (with its `.cache`, `.config` and `.local/share`) and
    /// `folder/runtime`.
    public init(in folder: URL) throws {
        home = folder.appendingPathComponent("home")
        runtime = folder.appendingPathComponent("runtime")
        for sub in [".cache", ".config", ".local/share"] {
            try FileManager.default.createDirectory(at: home.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// What a program started in it sees, on top of the test process's environment.
    public var environment: [String: String] {
        ["HOME": home.path, "XDG_RUNTIME_DIR": runtime.path,
         "XDG_CACHE_HOME": home.appendingPathComponent(".cache").path,
         "XDG_CONFIG_HOME": home.appendingPathComponent(".config").path,
         "XDG_DATA_HOME": home.appendingPathComponent(".local/share").path]
    }
}

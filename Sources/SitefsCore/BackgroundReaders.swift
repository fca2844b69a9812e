import Foundation

/// Programs that read files on a person's behalf without being asked to: thumbnailers,
/// desktop search indexers, `updatedb`. They must not turn placeholders into downloads
/// (a folder of 500 plans opened in a file manager would otherwise be downloaded whole
/// just to draw its thumbnails), so the core refuses them the content of a file that is
/// not on this device yet (`open` fails with EWOULDBLOCK) and serves them what is local.
///
/// Why the daemon decides, not the file manager: GLib counts a mount as remote (and its
/// "thumbnails for local files only" setting as off for it) only for nfs, cifs, smb and
/// `fuse.sshfs`, KDE and Tracker have rules of their own, and a `fuse.sitefs` mount that
/// claimed another type would mislead every other tool. Every such reader goes through the
/// kernel, which names the asking process in each FUSE request.
///
/// A process is recognised by its program's file name (`argv[0]`, its full length: the
/// kernel's `comm` is cut at 15 bytes and names threads): the thumbnailers the desktop has
/// registered (the `Exec` programs of `*.thumbnailer` files in the freedesktop thumbnailer
/// folders) and `knownPrograms`. KDE's previews run in a general-purpose `kioworker`,
/// which counts only while it runs the thumbnail worker.
public enum BackgroundReaders {
    /// Indexers and thumbnailers that are not registered as `*.thumbnailer` files.
    public static let knownPrograms: Set<String> = [
        // GNOME's Tracker / LocalSearch (3.x and the renamed 3.8+).
        "tracker-extract", "tracker-extract-3", "tracker-miner-fs", "tracker-miner-fs-3",
        "localsearch-3", "localsearch-extractor-3",
        // KDE's Baloo.
        "baloo_file", "baloo_file_extractor",
        // XFCE's thumbnail service thumbnails in its own process.
        "tumblerd",
        // mlocate / plocate (root cannot enter a mount without --allow-other, others can).
        "updatedb", "updatedb.plocate", "updatedb.mlocate", "plocate-build",
        // Thumbnailers commonly installed without a registration file in the default folders.
        "gdk-pixbuf-thumbnailer", "gnome-thumbnail-font", "totem-video-thumbnailer", "evince-thumbnailer",
        "papers-thumbnailer", "atril-thumbnailer", "xreader-thumbnailer", "gsf-office-thumbnailer",
        "ffmpegthumbnailer", "folks-thumbnailer",
    ]

    /// Where the freedesktop thumbnailer specification puts registration files: the
    /// `thumbnailers` folder of `$XDG_DATA_HOME` and of each `$XDG_DATA_DIRS` entry.
    public static func thumbnailerFolders(environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        let home = environment["HOME"] ?? NSHomeDirectory()
        let dataHome = environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.local/share"
        let dataDirs = (environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share")
            .split(separator: ":").map(String.init)
        return ([dataHome] + dataDirs).map { $0 + "/thumbnailers" }
    }

    /// The program names of the registered thumbnailers: the first word of each `Exec=`
    /// (and `TryExec=`) line, by file name. Unreadable folders and files are skipped.
    public static func registeredThumbnailers(in folders: [String]) -> Set<String> {
        var programs: Set<String> = []
        for folder in folders {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { continue }
            for name in names.prefix(1_000) where name.hasSuffix(".thumbnailer") {
                guard let text = try? String(contentsOfFile: folder + "/" + name, encoding: .utf8) else { continue }
                for line in text.split(separator: "\n").prefix(200) {
                    let trimmed = line.trimmingCharacters(in: .whitespaces)
                    guard trimmed.hasPrefix("Exec=") || trimmed.hasPrefix("TryExec=") else { continue }
                    let command = trimmed.drop(while: { $0 != "=" }).dropFirst()
                    if let program = command.split(separator: " ").first {
                        programs.insert(ProcessMatcher.fileName(of: String(program)))
                    }
                }
            }
        }
        return programs
    }

    /// The desktop's thumbnailers and the known indexers.
    public static func standard() -> ProcessMatcher {
        ProcessMatcher(programs: knownPrograms.union(registeredThumbnailers(in: thumbnailerFolders())), kioThumbnailWorkers: true)
    }
}

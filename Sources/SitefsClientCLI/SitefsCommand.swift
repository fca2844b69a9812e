import ArgumentParser

/// `sitefs`: mount a sitefs document server as a folder tree.
@main
struct SitefsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sitefs",
        abstract: "Edit the documents on a sitefs server in place, through a FUSE mount.",
        discussion: """
            `sitefs URL MOUNTPOINT -o OPTIONS` is `sitefs mount`, as mount(8) runs it for \
            `mount -t fuse.sitefs URL MOUNTPOINT` and for an /etc/fstab line such as \
            `URL /home/anna/sites fuse.sitefs _netdev,user,noauto 0 0`.
            """,
        subcommands: [Login.self, Logout.self, Mount.self, Unmount.self, Status.self, Sync.self, Retry.self, Pin.self, Unpin.self, Evict.self,
                      Search.self, Versions.self, Restore.self, Info.self])

    /// Rewrites the mount(8) form (`sitefs URL MOUNTPOINT -o LIST`) into `sitefs mount`'s
    /// flags before parsing (see `MountOptionList`).
    static func main() {
        let names = Set(configuration.subcommands.map { $0._commandName } + ["help"])
        do {
            main(try MountOptionList.rewrite(Array(CommandLine.arguments.dropFirst()), subcommands: names))
        } catch {
            exit(withError: error)
        }
    }
}

/// Failures the user can act on: printed as they are, exit status 1.
struct UserFacingError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

import ArgumentParser

/// `sitefs`: mount a sitefs document server as a folder tree.
@main
struct SitefsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sitefs",
        abstract: "Edit the documents on a sitefs server in place, through a FUSE mount.",
        subcommands: [Login.self, Logout.self, Mount.self, Unmount.self, Status.self, Sync.self, Retry.self, Pin.self, Unpin.self])
}

/// Failures the user can act on: printed as they are, exit status 1.
struct UserFacingError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

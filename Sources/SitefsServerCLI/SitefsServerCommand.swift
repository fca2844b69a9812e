import ArgumentParser

/// `sitefs-server`: the reference site-document server and its administration commands.
@main
struct SitefsServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sitefs-server",
        abstract: "The sitefs reference document server (API v1).",
        subcommands: [Serve.self, UserCommand.self, SiteCommand.self, Grant.self])
}

/// Options every command shares.
struct DataOptions: ParsableArguments {
    @Option(name: .long, help: "The server's data directory (metadata.sqlite and blobs/).")
    var data: String
}

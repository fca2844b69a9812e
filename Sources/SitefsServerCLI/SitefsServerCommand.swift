import ArgumentParser
import Foundation
import SitefsServerCore

/// `sitefs-server`: the reference site-document server and its administration commands.
@main
struct SitefsServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sitefs-server",
        abstract: "The sitefs reference document server (API v1).",
        subcommands: [Serve.self, Migrate.self, UserCommand.self, SiteCommand.self, Grant.self, LockCommand.self,
                      IndexCommand.self, BenchSeedCommand.self])
}

/// Where the server's state is; every command takes the same options. Either `--data DIR`
/// (SQLite and blobs in one folder, the embedded default) or `--database URL --blobs DIR`
/// (PostgreSQL, shared by several instances, and the blob folder they share).
struct DataOptions: ParsableArguments {
    @Option(name: .long, help: "The server's data folder: metadata.sqlite and blobs/.")
    var data: String?
    @Option(name: .long, help: ArgumentHelp(
        "Keep the metadata in PostgreSQL instead: postgres://USER@HOST:PORT/DATABASE[?sslmode=...] or ?host=/socket/dir.",
        discussion: "The password comes from --database-password-file, PGPASSWORD or ~/.pgpass, never from the URL."))
    var database: String?
    @Option(name: .long, help: "With --database: the blob folder every instance uses (a shared filesystem across machines).")
    var blobs: String?
    @Option(name: .customLong("database-password-file"), help: "A file holding the PostgreSQL password.")
    var databasePasswordFile: String?
    @Option(name: .customLong("database-connections"), help: "Connections each instance keeps to PostgreSQL.")
    var databaseConnections = 8

    func validate() throws {
        switch (data, database) {
        case (nil, nil): throw ValidationError("give --data DIR, or --database URL with --blobs DIR")
        case (.some, .some): throw ValidationError("--data and --database exclude each other (with --database, blobs go in --blobs)")
        case (.some, nil) where blobs != nil: throw ValidationError("--blobs goes with --database; --data holds its own blobs")
        case (nil, .some) where blobs == nil: throw ValidationError("--database needs --blobs DIR, the blob folder every instance shares")
        default: break
        }
        guard databasePasswordFile == nil || database != nil else {
            throw ValidationError("--database-password-file goes with --database")
        }
        guard (1...200).contains(databaseConnections) else { throw ValidationError("--database-connections must be 1 to 200") }
    }

    /// The storage part of a configuration (the data or blob folder, and the database).
    func storage() throws -> (folder: URL, database: PostgresLocation?) {
        let folder = URL(fileURLWithPath: data ?? blobs ?? ".")
        guard let database else { return (folder, nil) }
        do {
            return (folder, try PostgresLocation.parse(database, passwordFile: databasePasswordFile))
        } catch let invalid as PostgresLocation.Invalid {
            throw ValidationError(invalid.description)
        }
    }

    /// A configuration with these storage options and defaults for the rest (admin commands).
    func configuration() throws -> ServerConfiguration {
        let (folder, database) = try storage()
        return ServerConfiguration(dataDirectory: folder, database: database, databaseConnections: min(databaseConnections, 2))
    }
}

/// `sitefs-server migrate`: brings the database's schema up to this version and exits
/// (`serve` does the same at start; this is for running it as its own deployment step).
struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply the schema migrations this version has to the database (serve also does, at start).")

    @OptionGroup var options: DataOptions

    func run() async throws {
        try await AdminContext.with(options) { _ in }
        print("the schema of \(options.database ?? options.data ?? "") is up to date")
    }
}

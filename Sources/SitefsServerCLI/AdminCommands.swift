import ArgumentParser
import Foundation
import SitefsCommandLine
import SitefsServerCore

struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "user", abstract: "Manage users.", subcommands: [Add.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a user. The password is read from standard input (asked twice on a terminal), never from arguments.")

        @Argument(help: "User name: letters, digits, . _ @ -") var name: String
        @OptionGroup var options: DataOptions

        func run() async throws {
            let password = try PasswordInput.read()
            try await AdminContext.with(options) { try await $0.accounts.addUser(named: name, password: password) }
            print("added user \(name)")
        }
    }
}

struct SiteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "site", abstract: "Manage sites.", subcommands: [Add.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a site, optionally importing a local folder tree into it.")

        @Argument(help: "Site name (shown as a folder at the root of every mount).") var name: String
        @OptionGroup var options: DataOptions
        @Option(name: .customLong("import"), help: "A local folder whose contents become the site's contents.")
        var importFolder: String?

        func run() async throws {
            try await AdminContext.with(options) { try await add(to: $0) }
        }

        private func add(to storage: ServerStorage) async throws {
            let caller = Caller.administrator("admin")
            // Refuse a bad import folder before the site exists.
            if let importFolder {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: importFolder, isDirectory: &isDirectory), isDirectory.boolValue else {
                    throw ValidationError("'\(importFolder)' is not a folder")
                }
            }
            let site = try await storage.documents.createSite(named: name, by: caller)
            print("added site \(name) (id \(site.id))")
            if let importFolder {
                let report = try await FolderImporter(documents: storage.documents, caller: caller)
                    .importTree(at: URL(fileURLWithPath: importFolder), into: site.id)
                print("imported \(report.folders) folders, \(report.files) files, \(report.bytes) bytes")
                for path in report.skipped { print("skipped (not a regular file or folder): \(path)") }
            }
        }
    }
}

struct Grant: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Let a user see a site (read-write unless --read-only).")

    @Argument var user: String
    @Argument var site: String
    @OptionGroup var options: DataOptions
    @Flag(name: .customLong("read-only"), help: "The user may read but not change anything in the site.") var readOnly = false

    func run() async throws {
        try await AdminContext.with(options) { try await $0.accounts.grant(user: user, site: site, readOnly: readOnly) }
        print("granted \(user) \(readOnly ? "read-only" : "read-write") access to \(site)")
    }
}

/// Opens the storage for an admin command (safe while servers run: SQLite WAL, or
/// PostgreSQL's own transactions).
enum AdminContext {
    /// Opens the storage, runs `body` and closes it again (PostgreSQL: its connections).
    static func with<T>(_ options: DataOptions, _ body: (ServerStorage) async throws -> T) async throws -> T {
        let storage = try ServerStorage(configuration: try options.configuration())
        do {
            let result = try await body(storage)
            storage.close()
            return result
        } catch {
            storage.close()
            throw error
        }
    }
}

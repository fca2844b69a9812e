import ArgumentParser
import Foundation
import SitefsCommandLine
import SitefsServerCore

struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "user", abstract: "Manage users.", subcommands: [Add.self, SetDisplayName.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a user. The password is read from standard input (asked twice on a terminal), never from arguments.")

        @Argument(help: "User name: letters, digits, . _ @ -") var name: String
        @Option(name: .customLong("display-name"), help: "The name other people read, e.g. as a lock's holder (\"Anna Berger\").")
        var displayName: String?
        @OptionGroup var options: DataOptions

        func run() async throws {
            if let displayName { try AccountStore.validateDisplayName(displayName) }
            let password = try PasswordInput.read()
            try await AdminContext.with(options) {
                try await $0.accounts.addUser(named: name, password: password, displayName: displayName)
            }
            print("added user \(name)")
        }
    }

    struct SetDisplayName: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "set", abstract: "Change a user's display name.")

        @Argument(help: "User name.") var name: String
        @Option(name: .customLong("display-name"), help: "The name other people read, e.g. as a lock's holder.")
        var displayName: String?
        @Flag(name: .customLong("clear-display-name"), help: "Remove the display name: the user name shows instead.")
        var clear = false
        @OptionGroup var options: DataOptions

        func validate() throws {
            guard (displayName == nil) != !clear else { throw ValidationError("give --display-name NAME or --clear-display-name") }
        }

        func run() async throws {
            try await AdminContext.with(options) { try await $0.accounts.setDisplayName(of: name, to: clear ? nil : displayName) }
            print(clear ? "cleared the display name of \(name)" : "set the display name of \(name)")
        }
    }
}

struct LockCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lock", abstract: "See and break locks for editing.", subcommands: [List.self, Break.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List live locks: site, path, holder, device, application, since, expires (tab-separated).")

        @OptionGroup var options: DataOptions

        func run() async throws {
            let locks = try await AdminContext.with(options) { try await $0.documents.liveLocks() }
            for listing in locks {
                let lock = listing.lock
                let holder = lock.holderName == lock.holder ? lock.holder : "\(lock.holderName) (\(lock.holder))"
                let fields = [listing.site, listing.path, holder, lock.device, lock.application,
                              lock.createdAt.rfc3339, lock.expiresAt.rfc3339]
                print(fields.map { TerminalText.escaped($0) }.joined(separator: "\t"))
            }
        }
    }

    struct Break: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Break the lock on a file, whoever holds it: their next write without it goes through, and others may lock it.")

        @Argument(help: "The site's name.") var site: String
        @Argument(help: "The file's path in the site, e.g. 'Plans/Level 1/plan.odt'.") var path: String
        @OptionGroup var options: DataOptions

        func run() async throws {
            let broken = try await AdminContext.with(options) {
                try await $0.documents.breakLock(site: site, path: path, by: .administrator("admin"))
            }
            if let broken {
                print(TerminalText.escaped("broke the lock of \(broken.holderName) on \(path) (held since \(broken.createdAt.rfc3339))"))
            } else {
                print(TerminalText.escaped("\(path) was not locked"))
            }
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

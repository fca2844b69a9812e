import ArgumentParser
import Foundation
import SitefsServerCore

/// `sitefs-server index rebuild|status`: the search index of document text.
struct IndexCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "index", abstract: "See and rebuild the search index of document text.",
        subcommands: [Rebuild.self, Status.self])

    struct Rebuild: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Queue every current file (of one site, or all) to have its text read again by the running servers.")

        @Option(name: .customLong("site"), help: "Only this site's files.") var site: String?
        @OptionGroup var options: DataOptions

        func run() async throws {
            let queued = try await AdminContext.with(options) { try await $0.documents.rebuildSearchIndex(site: site) }
            print("queued \(queued) files for indexing")
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the files waiting to be indexed, indexed, and whose text could not be read.")

        @OptionGroup var options: DataOptions

        func run() async throws {
            let status = try await AdminContext.with(options) { try await $0.documents.searchIndexStatus() }
            print("pending \(status.pending)")
            print("indexed \(status.indexed)")
            print("failed \(status.failed)")
        }
    }
}

/// `sitefs-server bench-seed`: fills a site with synthetic indexed documents straight into
/// the store, for `scripts/bench` (search latency over 10,000 and 100,000 documents) only;
/// hidden from the help.
struct BenchSeedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-seed", abstract: "Seed synthetic indexed documents (benchmarks only).", shouldDisplay: false)

    @Option(help: "The site to create and fill.") var site: String
    @Option(help: "Documents to make.") var documents: Int
    @Option(help: "A user to create (password: the same as the name) and grant the site.") var user: String?
    @OptionGroup var options: DataOptions

    func validate() throws {
        guard (1...2_000_000).contains(documents) else { throw ValidationError("--documents must be 1 to 2000000") }
    }

    func run() async throws {
        let started = ContinuousClock.now
        try await AdminContext.with(options) { storage in
            try await SearchBenchSeeder(storage: storage).seed(site: site, documents: documents)
            if let user {
                try await storage.accounts.addUser(named: user, password: user)
                try await storage.accounts.grant(user: user, site: site, readOnly: false)
            }
        }
        print("seeded \(documents) documents in \(ContinuousClock.now - started)")
    }
}

import GRDB
import Testing
@testable import SitefsServerCore

/// The search worker's claim reads the queue in claiming order (schema v6), whatever its
/// length: SQLite's plan for the claim walks `search_jobs_in_order` and sorts nothing (a
/// temporary B-tree would mean reading every queued job for each claim).
@Suite struct SearchQueueOrderTests {
    @Test func aClaimReadsTheQueueInItsOrderWithoutSortingIt() throws {
        let queue = try DatabaseQueue()
        try SQLiteSchema.migrator.migrate(queue)
        let plan = try queue.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + SearchJobs.claimSQL(.sqlite), arguments: [0, SearchJobs.batch])
                .map { row -> String in row["detail"] }
        }
        #expect(plan.contains { $0.contains("USING INDEX search_jobs_in_order") }, "\(plan)")
        #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "\(plan)")
    }
}

import GRDB
import Testing
@testable import SitefsServerCore

/// The search worker's claim reads the queue in claiming order (schema v6), whatever its
/// length: SQLite's plan for the claim walks `search_jobs_in_order` and sorts nothing. With
/// v5's index it read every queued job and sorted them (a temporary B-tree), 15 ms a claim
/// with 100,000 files queued, while every write of the server waited.
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

import SitefsAPI
import Foundation
import Logging

/// The background worker that reads the text of stored versions (`DocumentText.extract`)
/// and writes it to the search index.
///
/// It works off `search_jobs`, which the writes that store versions fill in their own
/// transactions (`SearchJobs.enqueue`), so it never holds up a request: an upload answers
/// when its version is committed, and its text becomes searchable when the worker gets to
/// it (names are searchable at once). Jobs are claimed for a lease in short write
/// transactions, and the reading happens outside any transaction, so any number of
/// instances on one PostgreSQL share the queue, each job done once, and a job of a worker
/// that died is taken up by another when its lease ends. A result for a version that is no
/// longer current (the file changed or went meanwhile) is dropped.
///
/// It wakes when a commit here (or, on PostgreSQL, on another instance) extended the change
/// feed, which every stored version does, and otherwise looks every `idleLook`, for jobs
/// queued where no signal reaches (an admin command on SQLite).
public final class SearchIndexer: Sendable {
    let documents: DocumentStore
    let limits: ExtractionLimits
    let logger: Logger
    /// How long an idle worker waits for a commit before it looks anyway.
    static let idleLook: Duration = .seconds(5)

    init(documents: DocumentStore, limits: ExtractionLimits = ExtractionLimits(), logger: Logger) {
        self.documents = documents
        self.limits = limits
        self.logger = logger
    }

    /// Runs until the task is cancelled (`serve`). Each round claims at most one batch.
    public func run() async {
        while !Task.isCancelled {
            let seen = documents.metadata.commits.count
            let worked: Bool
            do {
                worked = try await runBatch()
            } catch {
                logger.warning("search indexing failed (tried again in \(Self.idleLook)): \(error)")
                worked = false
            }
            if !worked {
                await documents.metadata.commits.wait(after: seen, on: nil, until: .now + Self.idleLook)
            }
        }
    }

    /// Claims one batch and indexes it; returns whether there was anything to claim.
    @discardableResult
    func runBatch() async throws -> Bool {
        let engine = documents.metadata.database.engine
        let now = documents.clock().microseconds
        let claimed = try await documents.metadata.write { db in
            try SearchJobs.claim(db, engine: engine, at: now)
        }
        for job in claimed {
            await index(job)
        }
        return !claimed.isEmpty
    }

    /// Reads one version's text and stores it; a failure of the server's own hands the job
    /// back (retried, up to `SearchJobs.maximumAttempts`).
    private func index(_ job: SearchJobs.Claimed) async {
        let extracted = await DocumentText.extract(fileAt: documents.blobs.path(of: job.blob), name: job.name, limits: limits)
        let result = Self.indexed(extracted)
        let now = documents.clock().microseconds
        do {
            try await documents.metadata.write { db in
                try SearchJobs.complete(db, job: job, with: result, at: now)
            }
        } catch {
            logger.warning("search index of item \(job.itemID) not stored (attempt \(job.attempts)): \(error)")
            _ = try? await documents.metadata.write { db in
                try SearchJobs.giveBack(db, job: job, reason: "\(error)", at: now)
            }
        }
    }

    /// What is stored for an extraction: the text (no NUL, which PostgreSQL's text cannot
    /// hold) and its index words.
    static func indexed(_ extracted: ExtractedText) -> SearchJobs.Indexed {
        let text = extracted.text.contains("\u{0}") ? extracted.text.replacingOccurrences(of: "\u{0}", with: " ") : extracted.text
        let (words, wordsTruncated) = SearchFolding.indexWords(of: text)
        switch extracted.outcome {
        case .complete:
            return .init(outcome: wordsTruncated ? "truncated" : "complete", detail: wordsTruncated ? "word limit" : nil,
                         text: text, words: words)
        case .truncated(let why):
            return .init(outcome: "truncated", detail: String(why.prefix(500)), text: text, words: words)
        case .unsupportedType:
            return .init(outcome: "unsupported", detail: nil, text: "", words: "")
        case .failed(let why):
            return .init(outcome: "failed", detail: String(why.prefix(500)), text: text, words: words)
        }
    }

    /// Indexes in this task until no job is left, including jobs another worker of this
    /// process (or another instance) holds: those are waited for, a commit at a time, until
    /// `deadline`. For tests and `index rebuild --wait`; returns whether the queue is empty.
    public func waitUntilIndexed(deadline: ContinuousClock.Instant = .now + .seconds(60)) async throws -> Bool {
        while ContinuousClock.now < deadline {
            let seen = documents.metadata.commits.count
            if try await runBatch() { continue }
            if try await pendingJobs() == 0 { return true }
            // Claimed elsewhere: its worker's commit (or the next look) ends this wait.
            await documents.metadata.commits.wait(after: seen, on: nil, until: min(deadline, .now + .milliseconds(200)))
        }
        return try await pendingJobs() == 0
    }

    private func pendingJobs() async throws -> Int64 {
        try await documents.metadata.read { db in try db.int(sql: "SELECT count(*) FROM search_jobs") ?? 0 }
    }
}

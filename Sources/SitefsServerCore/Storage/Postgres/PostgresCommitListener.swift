import Logging
import PostgresNIO
import Synchronization

/// Hears other instances' commits: one connection that LISTENs on the store's channel
/// (every write transaction that extends the change feed NOTIFYs it with the sites it
/// touched, delivered by PostgreSQL at commit) and calls `onCommit` with those sites for
/// each notification, which wakes this instance's long-polls on them.
///
/// When the connection breaks it is made again every second; `onCommit(nil)` (any site) is
/// called on each (re)connection, since notifications sent meanwhile were lost.
final class PostgresCommitListener: Sendable {
    /// Lock order: a leaf.
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(location: PostgresLocation, limits: PostgresSession.Limits, logger: Logger,
         onCommit: @escaping @Sendable (Set<Int64>?) -> Void) {
        let loop = Task.detached {
            var reported = false
            while !Task.isCancelled {
                do {
                    let connection = try await PostgresConnection.connect(
                        configuration: try PostgresSession.configuration(for: location, limits: limits), id: -1, logger: logger)
                    // Closed on every path: the library insists on it before a connection goes.
                    do {
                        try await withTaskCancellationHandler {
                            try await connection.listen(on: PostgresMetadataDatabase.commitChannel) { notifications in
                                if reported { logger.info("listening for other instances' commits again") }
                                reported = false
                                onCommit(nil)
                                for try await notification in notifications {
                                    onCommit(CommitPayload.decode(notification.payload))
                                }
                            }
                        } onCancel: {
                            let _: EventLoopFuture<Void> = connection.close()
                        }
                        try? await connection.close()
                    } catch {
                        try? await connection.close()
                        throw error
                    }
                } catch {
                    if !Task.isCancelled && !reported {
                        logger.warning("not hearing other instances' commits (long-polls wait out their time until this is back): \(PostgresFailure.describe(error))")
                        reported = true
                    }
                }
                try? await Task.sleep(for: .seconds(1))
            }
        }
        task.withLock { $0 = loop }
    }

    func stop() {
        task.withLock { $0 }?.cancel()
    }
}

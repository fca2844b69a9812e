import Logging
import Synchronization

/// A LogHandler that keeps the messages it is given, for tests of what a component logs.
public struct LogRecorder: LogHandler {
    private let store = Store()
    public var logLevel: Logger.Level = .trace
    public var metadata: Logger.Metadata = [:]

    public init() {}

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public var messages: [String] { store.messages.withLock { $0 } }

    public func log(event: LogEvent) {
        store.messages.withLock { $0.append(event.message.description) }
    }

    private final class Store: Sendable {
        let messages = Mutex<[String]>([])
    }
}

extension HTTPClient {
    /// How long the client waits before giving up, so a dead server makes a FUSE call fail
    /// with EIO instead of hanging the process that touched the file.
    public struct Timeouts: Sendable, Equatable {
        /// Limit on establishing the TCP (and TLS) connection.
        public var connect: Duration
        /// A transfer slower than `lowSpeedLimit` bytes per second for `lowSpeedTime` is
        /// aborted as timed out. This catches a stalled connection whatever the body size.
        /// It also runs while the server computes its answer, so `lowSpeedTime` must exceed
        /// the server's longest think time (e.g. verifying a large upload). libcurl measures
        /// speed over a sliding window of about five seconds, so a transfer that stalls after
        /// some data fails up to five seconds later than `lowSpeedTime` alone suggests.
        public var lowSpeedLimit: Int
        /// Whole seconds are used (libcurl's resolution); rounded up, at least one second.
        public var lowSpeedTime: Duration
        /// Limit on the whole exchange, or nil for none. Requests can opt out with
        /// `HTTPRequest.appliesOverallTimeout` when their size makes any deadline wrong.
        public var overall: Duration?

        public init(
            connect: Duration = .seconds(10), lowSpeedLimit: Int = 1, lowSpeedTime: Duration = .seconds(30),
            overall: Duration? = .seconds(60)
        ) {
            self.connect = connect
            self.lowSpeedLimit = lowSpeedLimit
            self.lowSpeedTime = lowSpeedTime
            self.overall = overall
        }

        public static let `default` = Timeouts()
    }
}

extension Duration {
    /// Whole milliseconds, rounded up so a tiny positive duration never becomes "no limit"
    /// (libcurl reads 0 as infinite).
    var curlMilliseconds: Int {
        let (seconds, attoseconds) = components
        let millis = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int(max(millis, 1))
    }

    /// Whole seconds, rounded up, at least one.
    var curlSeconds: Int {
        let (seconds, attoseconds) = components
        return Int(max(seconds + (attoseconds > 0 ? 1 : 0), 1))
    }
}

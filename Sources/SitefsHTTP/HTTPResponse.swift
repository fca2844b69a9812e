/// The final response to a request (interim 1xx responses are dropped).
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    /// The body when it went to memory: always for `.memory` sinks, and for any non-2xx
    /// response (capped at `ResponseSink.errorBodyLimit`), so the caller can read the
    /// server's error document without it landing in a download file.
    public var body: [UInt8]
    /// How many body bytes arrived, whichever sink they went to. For a file sink this is
    /// how far the download extended the file from its start offset.
    public var bodyLength: Int64

    public init(status: Int, headers: HTTPHeaders, body: [UInt8], bodyLength: Int64) {
        self.status = status
        self.headers = headers
        self.body = body
        self.bodyLength = bodyLength
    }

    /// True for 2xx statuses.
    public var isSuccess: Bool { (200..<300).contains(status) }
}

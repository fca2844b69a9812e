import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SitefsAPI
import Testing

/// A thin typed layer over Hummingbird's test client: signs in, sends the bearer token,
/// decodes JSON, and fails the test with the body when a status is unexpected.
struct APIClient: Sendable {
    let client: any TestClientProtocol
    var token: String?

    init(_ client: any TestClientProtocol, token: String? = nil) {
        self.client = client
        self.token = token
    }

    static func signedIn(_ client: any TestClientProtocol, user: String, password: String = "secret") async throws -> APIClient {
        let response = try await APIClient(client).send(.post, "/v1/session", json: SessionRequest(username: user, password: password))
        try response.expect(.created)
        return APIClient(client, token: try response.decode(SessionGrant.self).token)
    }

    func send(_ method: HTTPRequest.Method, _ uri: String, headers: HTTPFields = [:], body: [UInt8]? = nil) async throws -> TestResponse {
        var headers = headers
        if let token, headers[.authorization] == nil { headers[.authorization] = "Bearer \(token)" }
        return try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(bytes: $0) })
    }

    func send(_ method: HTTPRequest.Method, _ uri: String, headers: HTTPFields = [:], json: some Encodable) async throws -> TestResponse {
        var headers = headers
        headers[.contentType] = "application/json"
        return try await send(method, uri, headers: headers, body: Array(try JSONEncoder().encode(json)))
    }

    // MARK: Typed shortcuts that expect success

    func item(_ id: String) async throws -> Item {
        try await send(.get, "/v1/items/\(id)").expect(.ok).decode(Item.self)
    }

    func children(_ id: String, limit: Int? = nil, cursor: String? = nil) async throws -> ItemPage {
        try await send(.get, "/v1/items/\(id)/children" + Self.query(["limit": limit.map(String.init), "cursor": cursor]))
            .expect(.ok).decode(ItemPage.self)
    }

    /// Every child, following cursors to the end.
    func allChildren(_ id: String, limit: Int = 200) async throws -> [Item] {
        var items: [Item] = []
        var cursor: String?
        repeat {
            let page = try await children(id, limit: limit, cursor: cursor)
            items += page.items
            cursor = page.nextCursor
        } while cursor != nil
        return items
    }

    func createFolder(_ name: String, in parent: String) async throws -> Item {
        try await send(.post, "/v1/items/\(parent)/children", json: NewFolder(name: name)).expect(.created).decode(Item.self)
    }

    func createFile(_ name: String, in parent: String, contents: [UInt8]) async throws -> Item {
        try await send(.post, "/v1/items/\(parent)/children" + Self.query(["name": name]), body: contents)
            .expect(.created).decode(Item.self)
    }

    func createFile(_ name: String, in parent: String, text: String) async throws -> Item {
        try await createFile(name, in: parent, contents: Array(text.utf8))
    }

    func content(_ id: String, headers: HTTPFields = [:]) async throws -> [UInt8] {
        try await send(.get, "/v1/items/\(id)/content", headers: headers).expect(.ok).bytes
    }

    func patch(_ id: String, _ patch: ItemPatch, ifMatch: String? = nil) async throws -> TestResponse {
        var headers: HTTPFields = [:]
        if let ifMatch { headers[.ifMatch] = "\"\(ifMatch)\"" }
        return try await send(.patch, "/v1/items/\(id)", headers: headers, json: patch)
    }

    func put(_ id: String, contents: [UInt8], ifMatch: String?) async throws -> TestResponse {
        var headers: HTTPFields = [:]
        if let ifMatch { headers[.ifMatch] = "\"\(ifMatch)\"" }
        return try await send(.put, "/v1/items/\(id)/content", headers: headers, body: contents)
    }

    static func query(_ parameters: [String: String?]) -> String {
        let pairs = parameters.sorted { $0.key < $1.key }.compactMap { key, value in
            value.map { "\(key)=\(percentEncode($0))" }
        }
        return pairs.isEmpty ? "" : "?" + pairs.joined(separator: "&")
    }

    static func percentEncode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(Character(Unicode.Scalar(byte)))
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }
}

extension TestResponse {
    var bytes: [UInt8] { Array(body.readableBytesView) }
    var text: String { String(buffer: body) }

    /// Fails the test (with the body, which says why) unless the status is `status`.
    @discardableResult
    func expect(_ status: HTTPResponse.Status, sourceLocation: SourceLocation = #_sourceLocation) throws -> TestResponse {
        try #require(self.status == status, "expected \(status.code), got \(self.status.code): \(text)", sourceLocation: sourceLocation)
        return self
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(body.readableBytesView))
    }

    /// The error code of an API error body.
    var errorCode: String? { try? decode(ErrorResponse.self).error.code }
}

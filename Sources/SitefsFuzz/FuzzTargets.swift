import Foundation
import SitefsAPI
import SitefsHTTP
import SitefsHTTPBackend
import SitefsWebDAV

/// One function per parser; each must return (or throw its own error) for any input.
enum FuzzTargets {
    static let names = ["json-page", "json-changes", "json-search", "rfc3339", "headers", "item-name", "multistatus"]

    static func run(_ target: String, on bytes: [UInt8]) {
        switch target {
        case "json-page": BackendFuzzing.validatePage(bytes)
        case "json-changes": _ = try? JSONDecoder().decode(ChangePage.self, from: Data(bytes))
        case "json-search": BackendFuzzing.validateSearchPage(bytes)
        case "rfc3339": _ = Timestamp(rfc3339: String(decoding: bytes, as: UTF8.self))
        case "headers": HTTPFuzzing.parseResponseHeaders(bytes)
        case "item-name": _ = try? ItemName.validate(utf8: bytes)
        case "multistatus": WebDAVFuzzing.parseMultistatus(bytes)
        default: break
        }
    }
}

/// libFuzzer's entry point by its C name, which its archive refers to.
@_cdecl("LLVMFuzzerTestOneInput")
public func llvmFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTargets.run(target, on: data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    return 0
}

enum WebDAVFuzzing {
    /// A multistatus body fed in two pieces (where the pieces meet is part of the input),
    /// and every href it yields checked against a base.
    static func parseMultistatus(_ bytes: [UInt8]) {
        let parser = MultistatusParser(limits: .init(depth: 32, textBytes: 4096, responses: 10_000)) { response in
            _ = DAVHref.components(of: response.href, below: "/dav/files/anna/", origin: "https://dav.example")
        }
        let split = bytes.first.map { Int($0) % (bytes.count + 1) } ?? 0
        do {
            try parser.feed(Array(bytes[..<split]))
            try parser.feed(Array(bytes[split...]))
            try parser.finish()
        } catch {}
    }
}

import SitefsAPI
import SitefsHTTP
import SitefsProvider

extension HTTPDocumentBackend {
    /// The largest thumbnail accepted: a 1024×1024 PNG is well under it.
    static let maximumThumbnailBytes = 8 << 20
    static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// `GET /v1/items/{id}/thumbnail?size=N&version=V`: a PNG, or nil on any 404 (the type
    /// has none, or a server that predates thumbnails). 412: the file moved on.
    public func thumbnail(of file: ItemIdentifier, version: String, size: Int) throws(ProviderError) -> [UInt8]? {
        guard (1...1024).contains(size) else { throw .invalidResponse("thumbnail size \(size) outside 1...1024") }
        let path = Self.itemPath(file, "thumbnail") + Self.query(["size": String(size), "version": version])
        let response = try send(HTTPRequest(method: .get, path: path), into: .memory(limit: Self.maximumThumbnailBytes))
        switch response.status {
        case 200:
            guard response.body.starts(with: Self.pngSignature) else { throw .invalidResponse("a thumbnail that is not a PNG") }
            return response.body
        case 404:
            return nil
        default:
            throw Self.error(for: response)
        }
    }
}

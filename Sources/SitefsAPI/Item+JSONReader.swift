/// A response the client reads with `JSONReader` instead of `JSONDecoder` (the hot ones).
/// It must read the same values as its `Decodable` conformance and refuse what that refuses
/// (JSONReaderTests compares the two); it also refuses malformed values in unknown fields,
/// which Foundation's scanner lets pass.
public protocol JSONReadable: Decodable {
    init(json reader: inout JSONReader) throws(JSONReader.Error)
}

extension JSONReadable {
    /// Reads one whole JSON document of this type.
    public init(jsonBytes: [UInt8]) throws(JSONReader.Error) {
        self = try JSONReader.read(jsonBytes) { (reader: inout JSONReader) throws(JSONReader.Error) in try Self(json: &reader) }
    }
}

extension Item: JSONReadable {
    public init(json reader: inout JSONReader) throws(JSONReader.Error) {
        var id: String?, parentID: String?, siteID: String?, name: String?, kind: ItemKind?, size: Int64?
        var contentType: String?, createdAt: Timestamp?, modifiedAt: Timestamp?, createdBy: String?, modifiedBy: String?
        var etag: String?, capabilities: [Capability]?, lock: ItemLock?, mode: Int?, symlinkTarget: String?
        try reader.readObject { (reader: inout JSONReader, key: String) throws(JSONReader.Error) in
            switch key {
            case "id": id = try reader.readString()
            case "parent_id": parentID = reader.readNull() ? nil : try reader.readString()
            case "site_id": siteID = try reader.readString()
            case "name": name = try reader.readString()
            case "kind":
                let text = try reader.readString()
                guard let value = ItemKind(rawValue: text) else { throw reader.error("unknown kind \(text.prefix(32).debugDescription)") }
                kind = value
            case "size": size = try reader.readInt64()
            case "content_type": contentType = reader.readNull() ? nil : try reader.readString()
            case "created_at": createdAt = try Self.timestamp(&reader)
            case "modified_at": modifiedAt = try Self.timestamp(&reader)
            case "created_by": createdBy = try reader.readString()
            case "modified_by": modifiedBy = try reader.readString()
            case "etag": etag = try reader.readString()
            case "capabilities":
                // Capabilities a newer server adds are ignored rather than failing the item.
                var list: [Capability] = []
                try reader.readArray { (reader: inout JSONReader) throws(JSONReader.Error) in
                    if let capability = Capability(rawValue: try reader.readString()) { list.append(capability) }
                }
                capabilities = list
            case "lock": lock = reader.readNull() ? nil : try ItemLock(json: &reader)
            case "mode":
                if !reader.readNull() {
                    let value = try reader.readInt64()
                    guard let exact = Int(exactly: value) else { throw reader.error("mode out of range") }
                    mode = exact
                }
            case "symlink_target": symlinkTarget = reader.readNull() ? nil : try reader.readString()
            default: try reader.skipValue()
            }
        }
        guard let id, let siteID, let name, let kind, let size, let createdAt, let modifiedAt, let createdBy, let modifiedBy,
              let etag, let capabilities else { throw reader.error("an item without one of its required keys") }
        self.init(id: id, parentID: parentID, siteID: siteID, name: name, kind: kind, size: size, contentType: contentType,
                  createdAt: createdAt, modifiedAt: modifiedAt, createdBy: createdBy, modifiedBy: modifiedBy, etag: etag,
                  capabilities: capabilities, lock: lock, mode: mode, symlinkTarget: symlinkTarget)
    }

    static func timestamp(_ reader: inout JSONReader) throws(JSONReader.Error) -> Timestamp {
        let text = try reader.readString()
        guard let value = Timestamp(rfc3339: text) else { throw reader.error("not an RFC 3339 timestamp: \(text.prefix(64))") }
        return value
    }
}

extension ItemLock: JSONReadable {
    public init(json reader: inout JSONReader) throws(JSONReader.Error) {
        var id: String?, holder: String?, holderName: String?, device: String?, application: String?
        var createdAt: Timestamp?, expiresAt: Timestamp?
        try reader.readObject { (reader: inout JSONReader, key: String) throws(JSONReader.Error) in
            switch key {
            case "id": id = try reader.readString()
            case "holder": holder = try reader.readString()
            case "holder_name": holderName = try reader.readString()
            case "device": device = try reader.readString()
            case "application": application = try reader.readString()
            case "created_at": createdAt = try Item.timestamp(&reader)
            case "expires_at": expiresAt = try Item.timestamp(&reader)
            default: try reader.skipValue()
            }
        }
        guard let id, let holder, let holderName, let device, let application, let createdAt, let expiresAt else {
            throw reader.error("a lock without one of its required keys")
        }
        self.init(id: id, holder: holder, holderName: holderName, device: device, application: application,
                  createdAt: createdAt, expiresAt: expiresAt)
    }
}

extension ItemPage: JSONReadable {
    public init(json reader: inout JSONReader) throws(JSONReader.Error) {
        var items: [Item]?
        var nextCursor: String?
        try reader.readObject { (reader: inout JSONReader, key: String) throws(JSONReader.Error) in
            switch key {
            case "items":
                var list: [Item] = []
                try reader.readArray { (reader: inout JSONReader) throws(JSONReader.Error) in list.append(try Item(json: &reader)) }
                items = list
            case "next_cursor": nextCursor = reader.readNull() ? nil : try reader.readString()
            default: try reader.skipValue()
            }
        }
        guard let items else { throw reader.error("a page without items") }
        self.init(items: items, nextCursor: nextCursor)
    }
}

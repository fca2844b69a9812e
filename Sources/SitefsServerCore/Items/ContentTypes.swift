/// Media types by file extension, for the `content_type` of files. Only what sites keep;
/// anything else is `application/octet-stream`.
enum ContentTypes {
    static func forName(_ name: String) -> String {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "application/octet-stream" }
        return table[name[name.index(after: dot)...].lowercased()] ?? "application/octet-stream"
    }

    private static let table: [String: String] = [
        "txt": "text/plain; charset=utf-8",
        "csv": "text/csv; charset=utf-8",
        "md": "text/markdown; charset=utf-8",
        "pdf": "application/pdf",
        "odt": "application/vnd.oasis.opendocument.text",
        "ods": "application/vnd.oasis.opendocument.spreadsheet",
        "odp": "application/vnd.oasis.opendocument.presentation",
        "odg": "application/vnd.oasis.opendocument.graphics",
        "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "doc": "application/msword",
        "xls": "application/vnd.ms-excel",
        "dwg": "image/vnd.dwg",
        "dxf": "image/vnd.dxf",
        "png": "image/png",
        "jpg": "image/jpeg",
        "jpeg": "image/jpeg",
        "json": "application/json",
        "xml": "application/xml",
        "zip": "application/zip",
    ]
}

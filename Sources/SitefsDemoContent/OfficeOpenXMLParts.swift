/// Package parts shared by `.docx` and `.xlsx`: both are Open Packaging Conventions
/// containers and differ only in the main part they point to.
enum OfficeOpenXMLParts {
    static let officeDocumentRelationship =
        "http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"
    static let corePropertiesRelationship =
        "http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties"

    /// A `.rels` part listing (id, type, target) relationships.
    static func relationships(_ entries: [(id: String, type: String, target: String)]) -> String {
        let lines = entries.map {
            " <Relationship Id=\"\($0.id)\" Type=\"\($0.type)\" Target=\"\(XMLText.escape($0.target))\"/>\n"
        }
        return XMLText.declaration
            + "<Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\">\n"
            + lines.joined() + "</Relationships>\n"
    }

    /// `docProps/core.xml`, so file browsers and Office show the document title.
    static func coreProperties(title: String) -> String {
        XMLText.declaration + """
            <cp:coreProperties \
            xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" \
            xmlns:dc="http://purl.org/dc/elements/1.1/">
             <dc:title>\(XMLText.escape(title))</dc:title>
             <dc:creator>sitefs demo content</dc:creator>
             <dc:language>en-GB</dc:language>
            </cp:coreProperties>

            """
    }
}

/// OpenDocument text (`.odt`), the format LibreOffice Writer saves natively.
extension OfficeDocuments {
    /// The media type ODF readers check first, as the `mimetype` entry and in the manifest.
    public static let odtMediaType = "application/vnd.oasis.opendocument.text"

    /// An `.odt` with `title` as its heading and one paragraph per string.
    public static func odt(title: String, paragraphs: [String]) -> [UInt8] {
        odt(title: title, blocks: blocks(from: paragraphs))
    }

    /// An `.odt` with `title` as its heading (and metadata title) followed by `blocks`.
    public static func odt(title: String, blocks: [Block]) -> [UInt8] {
        var zip = ZipArchiveWriter()
        // ODF 1.2 §3.3: first entry, stored, no extra field; ZipArchiveWriter guarantees
        // the last two for every entry, the order is ours to keep.
        zip.addFile(named: "mimetype", text: odtMediaType)
        zip.addFile(named: "content.xml", text: OpenDocumentParts.content(title: title, blocks: blocks))
        zip.addFile(named: "styles.xml", text: OpenDocumentParts.styles)
        zip.addFile(named: "meta.xml", text: OpenDocumentParts.meta(title: title))
        zip.addFile(named: "META-INF/manifest.xml", text: OpenDocumentParts.manifest)
        return zip.finish()
    }
}

/// The XML parts of an `.odt`, kept apart from the container assembly above.
enum OpenDocumentParts {
    static let version = "1.2"

    private static let namespaces = """
        xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" \
        xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" \
        xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" \
        xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" \
        xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" \
        office:version="\(version)"
        """

    /// Lists every part except `mimetype`, which the manifest must not mention.
    static let manifest = XMLText.declaration + """
        <manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" \
        manifest:version="\(version)">
         <manifest:file-entry manifest:full-path="/" manifest:version="\(version)" \
        manifest:media-type="\(OfficeDocuments.odtMediaType)"/>
         <manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>
         <manifest:file-entry manifest:full-path="styles.xml" manifest:media-type="text/xml"/>
         <manifest:file-entry manifest:full-path="meta.xml" manifest:media-type="text/xml"/>
        </manifest:manifest>

        """

    static func meta(title: String) -> String {
        XMLText.declaration + """
            <office:document-meta xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" \
            xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0" \
            xmlns:dc="http://purl.org/dc/elements/1.1/" office:version="\(version)">
             <office:meta>
              <meta:generator>sitefs demo content</meta:generator>
              <dc:title>\(XMLText.escape(title))</dc:title>
              <dc:language>en-GB</dc:language>
             </office:meta>
            </office:document-meta>

            """
    }

    /// Named paragraph styles (using LibreOffice's own internal names, so Writer shows
    /// them as its familiar "Heading 1", "Text Body", ...) and an A4 page.
    static let styles = XMLText.declaration + """
        <office:document-styles \(namespaces)>
         <office:styles>
          <style:default-style style:family="paragraph">
           <style:text-properties fo:font-size="11pt" fo:language="en" fo:country="GB"/>
          </style:default-style>
          <style:style style:name="Standard" style:family="paragraph" style:class="text"/>
          <style:style style:name="Text_20_body" style:display-name="Text Body" style:family="paragraph" \
        style:parent-style-name="Standard" style:class="text">
           <style:paragraph-properties fo:margin-top="0cm" fo:margin-bottom="0.25cm"/>
          </style:style>
          <style:style style:name="Heading_20_1" style:display-name="Heading 1" style:family="paragraph" \
        style:parent-style-name="Standard" style:next-style-name="Text_20_body" \
        style:default-outline-level="1" style:class="text">
           <style:paragraph-properties fo:margin-top="0.42cm" fo:margin-bottom="0.3cm"/>
           <style:text-properties fo:font-size="18pt" fo:font-weight="bold"/>
          </style:style>
          <style:style style:name="Heading_20_2" style:display-name="Heading 2" style:family="paragraph" \
        style:parent-style-name="Standard" style:next-style-name="Text_20_body" \
        style:default-outline-level="2" style:class="text">
           <style:paragraph-properties fo:margin-top="0.35cm" fo:margin-bottom="0.2cm"/>
           <style:text-properties fo:font-size="14pt" fo:font-weight="bold"/>
          </style:style>
          <style:style style:name="Table_20_Contents" style:display-name="Table Contents" \
        style:family="paragraph" style:parent-style-name="Standard" style:class="extra"/>
          <style:style style:name="Table_20_Heading" style:display-name="Table Heading" \
        style:family="paragraph" style:parent-style-name="Table_20_Contents" style:class="extra">
           <style:text-properties fo:font-weight="bold"/>
          </style:style>
         </office:styles>
         <office:automatic-styles>
          <style:page-layout style:name="A4">
           <style:page-layout-properties fo:page-width="21cm" fo:page-height="29.7cm" \
        style:print-orientation="portrait" fo:margin-top="2cm" fo:margin-bottom="2cm" \
        fo:margin-left="2cm" fo:margin-right="2cm"/>
          </style:page-layout>
         </office:automatic-styles>
         <office:master-styles>
          <style:master-page style:name="Standard" style:page-layout-name="A4"/>
         </office:master-styles>
        </office:document-styles>

        """

    /// Table and cell styles are automatic (document-private) styles in ODF, so they
    /// live in content.xml next to the tables that use them.
    private static let automaticStyles = """
         <office:automatic-styles>
          <style:style style:name="DemoTable" style:family="table">
           <style:table-properties style:width="17cm" table:align="margins" fo:margin-top="0.2cm" \
        fo:margin-bottom="0.3cm"/>
          </style:style>
          <style:style style:name="DemoCell" style:family="table-cell">
           <style:table-cell-properties fo:padding="0.1cm" fo:border="0.5pt solid #000000"/>
          </style:style>
         </office:automatic-styles>
        """

    static func content(title: String, blocks: [OfficeDocuments.Block]) -> String {
        var body = "  <text:h text:style-name=\"Heading_20_1\" text:outline-level=\"1\">"
            + inline(title) + "</text:h>\n"
        var tableNumber = 0
        for block in blocks {
            switch block {
            case .heading(let heading):
                body += "  <text:h text:style-name=\"Heading_20_2\" text:outline-level=\"2\">"
                    + inline(heading) + "</text:h>\n"
            case .paragraph(let paragraph):
                body += "  <text:p text:style-name=\"Text_20_body\">" + inline(paragraph) + "</text:p>\n"
            case .table(let rows) where !rows.isEmpty:
                tableNumber += 1
                body += table(rows, name: "Table\(tableNumber)")
            case .table:
                continue  // ODF tables need at least one row; an empty table is simply left out.
            }
        }
        return XMLText.declaration + """
            <office:document-content \(namespaces)>
            \(automaticStyles)
             <office:body>
              <office:text>
            \(body)  </office:text>
             </office:body>
            </office:document-content>

            """
    }

    private static func table(_ rows: [[String]], name: String) -> String {
        let (grid, columns) = OfficeDocuments.rectangular(rows)
        var xml = "  <table:table table:name=\"\(name)\" table:style-name=\"DemoTable\">\n"
        xml += "   <table:table-column table:number-columns-repeated=\"\(columns)\"/>\n"
        for (index, row) in grid.enumerated() {
            let paragraphStyle = index == 0 ? "Table_20_Heading" : "Table_20_Contents"
            xml += "   <table:table-row>"
            for cell in row {
                xml += "<table:table-cell table:style-name=\"DemoCell\" office:value-type=\"string\">"
                    + "<text:p text:style-name=\"\(paragraphStyle)\">\(inline(cell))</text:p></table:table-cell>"
            }
            xml += "</table:table-row>\n"
        }
        return xml + "  </table:table>\n"
    }

    /// Escaped paragraph content. Line ends (`\n`, `\r\n`, ...) become ODF line breaks,
    /// because a raw newline is just collapsible white space to an ODF reader.
    private static func inline(_ text: String) -> String {
        text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
            .map { XMLText.escape(String($0)) }
            .joined(separator: "<text:line-break/>")
    }
}

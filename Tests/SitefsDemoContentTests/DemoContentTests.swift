import SitefsDemoContent
import Testing

@Suite("Demo content")
struct DemoContentTests {
    @Test("there are two demo sites and unknown names give no files")
    func siteNames() {
        #expect(DemoContent.siteNames == ["Harbour Tower", "Riverside School"])
        #expect(DemoContent.site(named: "No Such Site").isEmpty)
    }

    @Test("each site has nested folders and the five kinds of file", arguments: DemoContent.siteNames)
    func siteLayout(name: String) {
        let files = DemoContent.site(named: name)
        #expect(files.contains { $0.folders.count >= 2 }, "needs at least two folder levels")
        #expect(files.contains { $0.path == ["README.txt"] })
        for suffix in [".odt", ".docx", ".xlsx", ".csv"] {
            #expect(files.contains { $0.fileName.hasSuffix(suffix) && !$0.folders.isEmpty }, "no \(suffix)")
        }
        let paths = files.map { $0.path.joined(separator: "/") }
        #expect(Set(paths).count == paths.count, "paths are unique")
        for file in files {
            #expect(!file.contents.isEmpty)
            #expect(file.path.allSatisfy { !$0.isEmpty && !$0.contains("/") && $0 != "." && $0 != ".." })
        }
        #expect(files == DemoContent.site(named: name), "content is deterministic")
    }

    @Test("every office file of each site is a valid archive with well-formed XML",
          arguments: DemoContent.siteNames)
    func officeFiles(name: String) throws {
        let office = DemoContent.site(named: name).filter { file in
            [".odt", ".docx", ".xlsx"].contains { file.fileName.hasSuffix($0) }
        }
        #expect(office.count == 3)
        for file in office {
            let reader = try ZipTestReader(file.contents)
            let kind = try #require(DocumentKind(rawValue: String(file.fileName.split(separator: ".").last!)))
            #expect(Set(kind.requiredParts).isSubset(of: reader.entries.map(\.name)), "\(file.fileName)")
            for part in reader.entries where part.name.hasSuffix(".xml") || part.name.hasSuffix(".rels") {
                #expect(throws: Never.self, "\(file.fileName): \(part.name)") { try XMLTestNode.parse(part.data) }
            }
            let text = try XMLTestNode.parse(try reader.data(named: kind.mainPart)).allText
            #expect(text.count > 200, "\(file.fileName) has real content")
        }
    }

    @Test("the CSV files are rectangular: every record has the header's field count",
          arguments: DemoContent.siteNames)
    func csvFiles(name: String) throws {
        let csv = try #require(DemoContent.site(named: name).first { $0.fileName.hasSuffix(".csv") })
        let records = Self.parseCSV(String(decoding: csv.contents, as: UTF8.self))
        #expect(records.count >= 5)
        let width = try #require(records.first).count
        #expect(width > 3)
        #expect(records.allSatisfy { $0.count == width })
    }

    @Test("UTF-8 is exercised: a non-ASCII file name and Finnish text")
    func nonASCII() {
        let all = DemoContent.siteNames.flatMap { DemoContent.site(named: $0) }
        #expect(all.contains { file in file.fileName.unicodeScalars.contains { !$0.isASCII } })
        #expect(all.contains { String(decoding: $0.contents, as: UTF8.self).contains("työmaa") })
    }

    /// RFC 4180 reader: quoted fields may hold commas, doubled quotes and line breaks.
    static func parseCSV(_ text: String) -> [[String]] {
        var records: [[String]] = []
        var record: [String] = []
        var field = ""
        var quoted = false
        var characters = text.makeIterator()
        while let character = characters.next() {
            if quoted {
                if character == "\"" {
                    // Either the closing quote or the first of a doubled quote.
                    guard let next = characters.next() else { quoted = false; break }
                    if next == "\"" { field.append("\"") } else {
                        quoted = false
                        if next == "," { record.append(field); field = "" }
                        else if next.isNewline { record.append(field); records.append(record); record = []; field = "" }
                        else { field.append(next) }
                    }
                } else {
                    field.append(character)
                }
            } else if character == "\"" && field.isEmpty {
                quoted = true
            } else if character == "," {
                record.append(field); field = ""
            } else if character.isNewline {
                record.append(field); records.append(record); record = []; field = ""
            } else {
                field.append(character)
            }
        }
        if !field.isEmpty || !record.isEmpty { record.append(field); records.append(record) }
        return records
    }
}

import Foundation
import SitefsTestSupport
import Testing
@testable import SitefsServerCore

/// `DocumentText.extract`: real documents LibreOffice writes (`DocumentTextSamples`) in every
/// format family, and hand-made hostile files: zip bombs, entity expansion, names that lie
/// about the content, a PDF helper that hangs.
@Suite struct DocumentTextTests {
    static func words(_ text: String) -> [String] {
        text.split(whereSeparator: { $0.isWhitespace }).map(String.init)
    }

    /// Extracts one of the LibreOffice samples and checks the marks every sample holds.
    func sample(_ name: String, limits: ExtractionLimits = ExtractionLimits()) async throws -> ExtractedText {
        let samples = try DocumentTextSamples.shared.get()
        let extracted = await DocumentText.extract(fileAt: samples.path(name), name: name, limits: limits)
        #expect(extracted.outcome == .complete, "\(name): \(extracted.outcome)")
        let words = Self.words(extracted.text)
        for word in DocumentTextSamples.words { #expect(words.contains(word), "\(name): no \(word) in \(extracted.text)") }
        #expect(words.contains("end") && words.contains("start"), "\(name): \(extracted.text)")
        #expect(!extracted.text.contains("endstart") && !extracted.text.contains("end start"),
                "\(name): the paragraph break between end and start is lost: \(extracted.text)")
        return extracted
    }

    // MARK: Formats

    @Test func openDocumentText() async throws {
        let text = try await sample("text.odt").text
        #expect(Self.words(text).first == "Prüfbericht", "meta.xml's title comes first: \(text)")
        #expect(Self.words(text).contains("cellone") && Self.words(text).contains("celltwo"), "\(text)")
    }

    @Test func wordDocument() async throws {
        let text = try await sample("text.docx").text
        #expect(Self.words(text).first == "Prüfbericht", "docProps/core.xml's title comes first: \(text)")
        #expect(Self.words(text).contains("cellone") && Self.words(text).contains("celltwo"), "\(text)")
    }

    @Test func pdfThroughPdftotext() async throws {
        try #require(PDFText.locate("pdftotext", searchPath: "/usr/bin:/bin") != nil,
                     "pdftotext (poppler-utils) is needed: scripts/test installs it")
        let text = try await sample("text.pdf").text
        #expect(Self.words(text).contains("cellone") && Self.words(text).contains("celltwo"), "\(text)")
    }

    @Test func spreadsheets() async throws {
        for name in ["sheet.ods", "sheet.xlsx"] {
            let text = try await sample(name).text
            #expect(text.contains("the row ends with end"), "\(name): \(text)")
        }
    }

    @Test func presentations() async throws {
        for name in ["slides.odp", "slides.pptx"] {
            let text = try await sample(name).text
            let first = try #require(text.range(of: "slide one ends with end"), "\(name): \(text)")
            let second = try #require(text.range(of: "start of slide two"), "\(name): \(text)")
            #expect(first.upperBound < second.lowerBound, "\(name): the slides in order: \(text)")
        }
    }

    @Test func slidesInNumberOrder() throws {
        var entries = [("ppt/presentation.xml", "<p:presentation xmlns:p=\"urn:p\"/>")]
        for slide in 1...11 {
            entries.append(("ppt/slides/slide\(slide).xml", """
                <p:sld xmlns:p="urn:p" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main">\
                <a:p><a:r><a:t>s\(slide)</a:t></a:r></a:p></p:sld>
                """))
        }
        let path = try DocumentTextFiles.zip("deck.pptx", entries.reversed())
        let extracted = DocumentText.extractNow(fileAt: path, name: "deck.pptx", limits: ExtractionLimits())
        #expect(extracted.outcome == .complete)
        #expect(Self.words(extracted.text) == (1...11).map { "s\($0)" })
    }

    @Test func plainText() throws {
        let bytes = Array("\u{FEFF}Brandschutztür Prüfung café\r\nend\n\n\nstart\t\tcaf".utf8) + [0xFF] + Array("e".utf8)
        let extracted = DocumentText.extractNow(fileAt: try DocumentTextFiles.file("notes.md", bytes), name: "notes.md",
                                                limits: ExtractionLimits())
        #expect(extracted.outcome == .complete)
        #expect(extracted.text == "Brandschutztür Prüfung café\nend\nstart caf\u{FFFD}e", "the BOM dropped, whitespace collapsed, the invalid byte replaced")
    }

    @Test func unsupportedTypes() throws {
        let path = try DocumentTextFiles.file("photo.jpg", [0xFF, 0xD8, 0xFF])
        #expect(DocumentText.extractNow(fileAt: path, name: "photo.jpg", limits: ExtractionLimits()).outcome == .unsupportedType)
        #expect(DocumentText.extractNow(fileAt: path, name: "Makefile", limits: ExtractionLimits()).outcome == .unsupportedType)
    }

    // MARK: Limits

    @Test func textLimitCutsOnACharacterBoundary() throws {
        // "ü" is 2 bytes: a 10-byte limit falls inside it, and the cut goes before it.
        let path = try DocumentTextFiles.file("cut.txt", Array("aaaaaaaaaü and more".utf8))
        var limits = ExtractionLimits()
        limits.maximumTextBytes = 10
        let extracted = DocumentText.extractNow(fileAt: path, name: "cut.txt", limits: limits)
        #expect(extracted.text == "aaaaaaaaa")
        guard case .truncated = extracted.outcome else {
            Issue.record("\(extracted.outcome)")
            return
        }
    }

    @Test func textLimitOnAnOfficeDocument() async throws {
        var limits = ExtractionLimits()
        limits.maximumTextBytes = 20
        let samples = try DocumentTextSamples.shared.get()
        for name in ["text.odt", "text.docx", "text.pdf"] {
            let extracted = await DocumentText.extract(fileAt: samples.path(name), name: name, limits: limits)
            guard case .truncated = extracted.outcome else {
                Issue.record("\(name): \(extracted.outcome)")
                continue
            }
            #expect(extracted.text.utf8.count <= 20 && !extracted.text.isEmpty, "\(name): \(extracted.text)")
        }
    }

    @Test func inputLimit() throws {
        let path = try DocumentTextFiles.file("big.txt", Array(repeating: 0x61, count: 100))
        var limits = ExtractionLimits()
        limits.maximumInputBytes = 99
        let extracted = DocumentText.extractNow(fileAt: path, name: "big.txt", limits: limits)
        #expect(extracted.text == "")
        guard case .truncated(let why) = extracted.outcome else {
            Issue.record("\(extracted.outcome)")
            return
        }
        #expect(why.contains("input limit"))
    }

    @Test func timeLimitOnAnOfficeDocument() async throws {
        var limits = ExtractionLimits()
        limits.timeLimit = .zero
        let samples = try DocumentTextSamples.shared.get()
        let extracted = await DocumentText.extract(fileAt: samples.path("text.odt"), name: "text.odt", limits: limits)
        #expect(extracted.outcome == .truncated("time limit: \(Duration.zero) passed"))
    }

    /// A pdftotext that prints a line and then hangs: killed at the deadline, its line kept.
    @Test func hangingPdftotextIsKilledAtTheDeadline() throws {
        let pidFile = DocumentTextFiles.folder.appendingPathComponent("hang-\(UUID().uuidString).pid")
        let script = try DocumentTextFiles.file("pdftotext", Array("""
            #!/bin/sh
            echo $$ > '\(pidFile.path)'
            echo 'first page words'
            exec sleep 60

            """.utf8))
        chmod(script, 0o755)
        let pdf = try DocumentTextFiles.file("slow.pdf", Array("%PDF-1.4\n%%EOF\n".utf8))
        var limits = ExtractionLimits()
        limits.timeLimit = .seconds(1)
        let started = ContinuousClock.now
        let extracted = DocumentText.extractNow(fileAt: pdf, name: "slow.pdf", limits: limits, pdftotext: script)
        let took = ContinuousClock.now - started
        #expect(extracted.text == "first page words")
        #expect(extracted.outcome == .truncated("time limit: \(Duration.seconds(1)) passed"))
        #expect(took < .seconds(5), "\(took)")
        let pid = try #require(Int32(String(decoding: try Data(contentsOf: pidFile), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(kill(pid, 0) == -1 && errno == ESRCH, "the helper was killed and reaped")
    }

    @Test func crashingPdftotextFails() throws {
        let script = try DocumentTextFiles.file("pdftotext", Array("#!/bin/sh\necho partial\nkill -SEGV $$\n".utf8))
        chmod(script, 0o755)
        let pdf = try DocumentTextFiles.file("crash.pdf", Array("%PDF-1.4\n%%EOF\n".utf8))
        let extracted = DocumentText.extractNow(fileAt: pdf, name: "crash.pdf", limits: ExtractionLimits(), pdftotext: script)
        #expect(extracted.text == "partial")
        #expect(extracted.outcome == .failed("pdftotext was killed by signal \(SIGSEGV) (a crash)"))
    }

    @Test func pdftotextMissing() throws {
        let pdf = try DocumentTextFiles.file("any.pdf", Array("%PDF-1.4\n%%EOF\n".utf8))
        let collector = TextCollector(maximumBytes: 100, deadline: .now + .seconds(10))
        #expect(throws: ExtractionStop.failed("pdftotext not installed")) {
            try PDFText.read(fileAt: pdf, collector: collector, searchPath: "/nonexistent")
        }
    }

    @Test func damagedPdfFails() throws {
        try #require(PDFText.locate("pdftotext", searchPath: "/usr/bin:/bin") != nil,
                     "pdftotext (poppler-utils) is needed: scripts/test installs it")
        let pdf = try DocumentTextFiles.file("damaged.pdf", Array("%PDF-1.4\ngarbage, no objects, no trailer\n".utf8))
        let extracted = DocumentText.extractNow(fileAt: pdf, name: "damaged.pdf", limits: ExtractionLimits())
        #expect(extracted.outcome == .failed("pdftotext could not read it (damaged, or encrypted)"))
    }

    // MARK: Hostile files

    /// content.xml inflating to 48 MiB of markup without text, from a zip of well under 1
    /// MiB: reading stops at the markup limit (16 MiB for a small text limit).
    @Test func zipBombIsBounded() throws {
        // The document as far as an unclosed paragraph, then empty spans without end.
        let whole = DocumentTextFiles.odfContent("<text:p>bomb</text:p><text:p>")
        let prefix = Data(whole[..<whole.range(of: "</office:text>")!.lowerBound].utf8)
        let filler = Data(String(repeating: "<text:span/>", count: 1 << 12).utf8)
        let size = 48 << 20
        let path = try DocumentTextFiles.zip("bomb.odt", [
            (DocumentTextFiles.odfMimetype.0, DocumentTextFiles.odfMimetype.1.utf8.count, { _, _ in Data(DocumentTextFiles.odfMimetype.1.utf8) }),
            ("content.xml", size, { position, count in
                var chunk = Data()
                var at = position
                while chunk.count < count {
                    if at < prefix.count {
                        chunk.append(prefix[at..<min(prefix.count, at + count - chunk.count)])
                    } else {
                        let offset = (at - prefix.count) % filler.count
                        chunk.append(filler[offset..<min(filler.count, offset + count - chunk.count)])
                    }
                    at = position + chunk.count
                }
                return chunk
            }),
        ])
        let zipSize = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        #expect(zipSize < 1 << 20, "\(zipSize)")
        var limits = ExtractionLimits()
        limits.maximumTextBytes = 1000
        let extracted = DocumentText.extractNow(fileAt: path, name: "bomb.odt", limits: limits)
        #expect(extracted.text == "bomb")
        #expect(extracted.outcome == .truncated("markup limit: \(16 << 20) bytes of XML read"))
    }

    /// An entry whose headers declare 4 GiB: the declared size is never believed, so the few
    /// bytes it really holds are read.
    @Test func declaredHugeEntryIsNotBelieved() throws {
        let path = try DocumentTextFiles.zip("declared.odt", [DocumentTextFiles.odfMimetype,
                                                              ("content.xml", DocumentTextFiles.odfContent("<text:p>small</text:p>"))])
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        // The uncompressed size fields of content.xml's local header (offset 22) and central
        // directory header (offset 24).
        var patched = 0
        for (signature, offset) in [([0x50, 0x4B, 0x03, 0x04] as [UInt8], 22), ([0x50, 0x4B, 0x01, 0x02], 24)] {
            var index = 0
            while index + 46 < bytes.count {
                if Array(bytes[index..<index + 4]) == signature {
                    let nameOffset = signature[2] == 0x03 ? 30 : 46
                    let nameLength = Int(bytes[index + (signature[2] == 0x03 ? 26 : 28)])
                    if index + nameOffset + nameLength <= bytes.count,
                       String(decoding: bytes[(index + nameOffset)..<(index + nameOffset + nameLength)], as: UTF8.self) == "content.xml" {
                        bytes.replaceSubrange((index + offset)..<(index + offset + 4), with: [0xF0, 0xFF, 0xFF, 0xFF])
                        patched += 1
                    }
                }
                index += 1
            }
        }
        try #require(patched == 2)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let extracted = DocumentText.extractNow(fileAt: path, name: "declared.odt", limits: ExtractionLimits())
        #expect(extracted.text == "small", "\(extracted.outcome)")
    }

    @Test func entityExpansionIsRefused() throws {
        var laughs = "<!ENTITY lol0 \"lol\">"
        for level in 1...9 {
            laughs += "<!ENTITY lol\(level) \"" + String(repeating: "&lol\(level - 1);", count: 10) + "\">"
        }
        let content = DocumentTextFiles.odfContent("<text:p>before &lol9; after</text:p>",
                                                   doctype: "<!DOCTYPE office:document-content [\(laughs)]>")
        let path = try DocumentTextFiles.zip("laughs.odt", [DocumentTextFiles.odfMimetype, ("content.xml", content)])
        let started = ContinuousClock.now
        let extracted = DocumentText.extractNow(fileAt: path, name: "laughs.odt", limits: ExtractionLimits())
        #expect(ContinuousClock.now - started < .seconds(2))
        #expect(extracted.text == "")
        #expect(extracted.outcome == .failed("content.xml: has a DOCTYPE (refused: entities are never expanded)"))
    }

    @Test func externalEntityIsNotRead() throws {
        let content = DocumentTextFiles.odfContent("<text:p>x &secret; y</text:p>",
                                                   doctype: "<!DOCTYPE office:document-content [<!ENTITY secret SYSTEM \"file:///etc/passwd\">]>")
        let path = try DocumentTextFiles.zip("xxe.docx", [
            ("word/document.xml", content.replacingOccurrences(of: "text:p", with: "w:t")),
        ])
        let odt = try DocumentTextFiles.zip("xxe.odt", [DocumentTextFiles.odfMimetype, ("content.xml", content)])
        for (file, name) in [(path, "xxe.docx"), (odt, "xxe.odt")] {
            let extracted = DocumentText.extractNow(fileAt: file, name: name, limits: ExtractionLimits())
            #expect(!extracted.text.contains("root"), "\(name): \(extracted.text)")
            guard case .failed = extracted.outcome else {
                Issue.record("\(name): \(extracted.outcome)")
                continue
            }
        }
        // Without a DOCTYPE, a reference to an undeclared entity is not well-formed.
        let undeclared = try DocumentTextFiles.zip("undeclared.odt", [DocumentTextFiles.odfMimetype,
                                                                      ("content.xml", DocumentTextFiles.odfContent("<text:p>a &nope; b</text:p>"))])
        let extracted = DocumentText.extractNow(fileAt: undeclared, name: "undeclared.odt", limits: ExtractionLimits())
        guard case .failed(let why) = extracted.outcome else {
            Issue.record("\(extracted.outcome)")
            return
        }
        #expect(why.hasPrefix("content.xml: not well-formed XML"), "\(why)")
    }

    @Test func namesThatLieAboutTheContent() throws {
        let text = try DocumentTextFiles.file("report.docx", Array("just some text\n".utf8))
        #expect(DocumentText.extractNow(fileAt: text, name: "report.docx", limits: ExtractionLimits()).outcome
            == .failed("the name says office document, but it is not a zip file"))
        let zip = try DocumentTextFiles.zip("scan.pdf", [DocumentTextFiles.odfMimetype])
        #expect(DocumentText.extractNow(fileAt: zip, name: "scan.pdf", limits: ExtractionLimits()).outcome
            == .failed("the name says PDF, but it has no %PDF- header"))
        let binary = try DocumentTextFiles.file("notes.txt", [0x61, 0x62, 0x00, 0x63])
        #expect(DocumentText.extractNow(fileAt: binary, name: "notes.txt", limits: ExtractionLimits()).outcome
            == .failed("not text: it holds NUL bytes"))
        // A zip, but not the format its name says.
        let wrongZip = try DocumentTextFiles.zip("sheet.xlsx", [DocumentTextFiles.odfMimetype])
        #expect(DocumentText.extractNow(fileAt: wrongZip, name: "sheet.xlsx", limits: ExtractionLimits()).outcome
            == .failed("an Office Open XML file without xl/workbook.xml"))
        // A truncated zip: the magic is right, the rest is not.
        let truncated = try DocumentTextFiles.file("cut.odt", [0x50, 0x4B, 0x03, 0x04, 1, 2, 3])
        guard case .failed = DocumentText.extractNow(fileAt: truncated, name: "cut.odt", limits: ExtractionLimits()).outcome else {
            Issue.record("a truncated zip must fail")
            return
        }
    }

    @Test func missingFileFails() {
        let outcome = DocumentText.extractNow(fileAt: "/nonexistent/x.odt", name: "x.odt", limits: ExtractionLimits()).outcome
        #expect(outcome == .failed("the stored file is missing or not a regular file"))
    }

    // MARK: Pieces

    @Test func collectorSeparatesAndCollapses() throws {
        let collector = TextCollector(maximumBytes: 100, deadline: .now + .seconds(10))
        try collector.append("  one  two\t")
        collector.breakLine()
        try collector.append("three")
        collector.space()
        try collector.append("four\n\n five ")
        #expect(collector.text == "one two\nthree four\nfive")
    }

    @Test func chunkedUTF8() {
        var decoder = UTF8Chunks()
        let bytes = Array("aü€😀".utf8)
        var text = ""
        for byte in bytes { text += [byte].withUnsafeBufferPointer { decoder.decode($0) } }
        text += decoder.finish()
        #expect(text == "aü€😀")
        var cut = UTF8Chunks()
        let first = [0x61, 0xC3].withUnsafeBufferPointer { cut.decode($0) }
        #expect(first == "a")
        #expect(cut.finish() == "\u{FFFD}")
    }
}

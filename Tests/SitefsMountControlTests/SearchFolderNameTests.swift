import SitefsMountControl
import Testing

/// The search folder's name: words, then the filters as tokens, quoted and escaped as the
/// daemon reads them, and refused with a clear reason when it cannot be a folder name.
@Suite struct SearchFolderNameTests {
    @Test func wordsThenEachFilterAsAToken() throws {
        #expect(try SearchFolderName(words: ["level", "1", "plan"]).name == "level 1 plan")
        #expect(try SearchFolderName(words: ["level 1", " plan "], site: "Harbour Tower", fileType: ".PDF", since: "2026-11-01").name
                == #"level 1 plan site:"Harbour Tower" type:pdf since:2026-11-01"#)
        #expect(try SearchFolderName(words: ["plan"], site: "Riverside").name == #"plan site:"Riverside""#, "a site is always quoted")
        #expect(try SearchFolderName(words: ["café"], fileType: "odt").name == "café type:odt")
    }

    @Test func quotesAndBackslashesInASiteAreEscaped() throws {
        #expect(try SearchFolderName(words: ["x"], site: #"The "Old" Mill"#).name == #"x site:"The \"Old\" Mill""#)
        #expect(try SearchFolderName(words: ["x"], site: #"a\b"#).name == #"x site:"a\\b""#)
        #expect(SearchFolderName.quoted(#"\""#) == #""\\\"""#)
    }

    @Test func whatCannotBeAFolderNameIsRefusedWithAReason() {
        #expect(throws: SearchNameError.noWords) { try SearchFolderName(words: []) }
        #expect(throws: SearchNameError.noWords) { try SearchFolderName(words: ["  ", "\t"]) }
        #expect(throws: SearchNameError.slash("the words")) { try SearchFolderName(words: ["plans/2026"]) }
        #expect(throws: SearchNameError.slash("the site")) { try SearchFolderName(words: ["x"], site: "a/b") }
        #expect(throws: SearchNameError.controlCharacter("the words")) { try SearchFolderName(words: ["a\nb"]) }
        #expect(throws: SearchNameError.controlCharacter("the site")) { try SearchFolderName(words: ["x"], site: "a\u{1B}[2J") }
        #expect(throws: SearchNameError.emptySite) { try SearchFolderName(words: ["x"], site: "") }
        #expect(throws: SearchNameError.badType("p df")) { try SearchFolderName(words: ["x"], fileType: "p df") }
        #expect(throws: SearchNameError.badType(".")) { try SearchFolderName(words: ["x"], fileType: ".") }
        #expect(throws: SearchNameError.dotName) { try SearchFolderName(words: [".."]) }
        for date in ["2026-02-30", "2026-13-01", "26-11-01", "2026-1-01", "yesterday", "2026-11-01T10:00:00Z", "1969-12-31"] {
            #expect(throws: SearchNameError.badDate(date)) { try SearchFolderName(words: ["x"], since: date) }
        }
        #expect((try? SearchFolderName(words: ["x"], since: "2028-02-29")) != nil, "a leap day")
    }

    /// 255 bytes is the most a folder name holds: counted in bytes (UTF-8), filters included.
    @Test func theWholeNameMustFit255Bytes() throws {
        let fits = String(repeating: "a", count: 255 - #" site:"S""#.utf8.count)
        #expect(try SearchFolderName(words: [fits], site: "S").name.utf8.count == 255)
        #expect(throws: SearchNameError.tooLong(bytes: 256)) { try SearchFolderName(words: [fits + "a"], site: "S") }
        let accented = String(repeating: "é", count: 128)  // 256 bytes
        #expect(throws: SearchNameError.tooLong(bytes: 256)) { try SearchFolderName(words: [accented]) }
        let error = SearchNameError.tooLong(bytes: 300)
        #expect(error.description.contains("300 bytes") && error.description.contains("at most 255"))
    }
}

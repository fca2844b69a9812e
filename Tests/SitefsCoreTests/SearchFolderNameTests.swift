import Foundation
import SitefsAPI
@testable import SitefsCore
import Testing

/// Search folder names: words, then `site:`, `type:` and `since:` filters.
@Suite struct SearchFolderNameTests {
    @Test func wordsAndFilters() throws {
        let name = try SearchFolderName(parsing: #"fire door site:"Harbour \"North\" Works" type:.PDF since:2026-11-01"#)
        #expect(name.words == "fire door")
        #expect(name.siteName == #"Harbour "North" Works"#)
        #expect(name.fileExtension == "pdf")
        let midnight = try #require(name.modifiedSince)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .current
        let day = calendar.dateComponents([.year, .month, .day, .hour], from: Date(timeIntervalSince1970: Double(midnight.microseconds) / 1e6))
        #expect(day == DateComponents(year: 2026, month: 11, day: 1, hour: 0))
    }

    @Test func anUnknownKeyIsAWordAndAColonInAWordStays() throws {
        let name = try SearchFolderName(parsing: "in:plans 10:30 report")
        #expect(name.words == "in:plans 10:30 report")
        #expect(name.siteName == nil)
    }

    @Test func badNamesAreRefusedWithAReason() {
        #expect(throws: SearchFolderName.Problem.self) { try SearchFolderName(parsing: "type:pdf") }
        #expect(throws: SearchFolderName.Problem.self) { try SearchFolderName(parsing: #"plan site:"Harbour"#) }
        #expect(throws: SearchFolderName.Problem.self) { try SearchFolderName(parsing: "plan since:2026-02-30") }
        #expect(throws: SearchFolderName.Problem.self) { try SearchFolderName(parsing: "plan type:tar.gz") }
        #expect(throws: SearchFolderName.Problem.self) { try SearchFolderName(parsing: "a b c d e f g h i") }
    }

    @Test func foldingIgnoresCaseAndAccentsInBothNormalForms() {
        #expect(SearchFolding.fold("Brandschutztür") == SearchFolding.fold("BRANDSCHUTZTU\u{308}R"))
        #expect(SearchFolding.fold("Café") == "cafe")
        #expect(SearchFolding.fold("Straße Øst") == "strasse ost")
    }
}

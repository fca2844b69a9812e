import Foundation
import SitefsAPI
import SitefsProvider

/// Entry points for `scripts/fuzz` (Sources/SitefsFuzz) into the response validation, so the
/// fuzzer needs no testable import (which release builds refuse).
public enum BackendFuzzing {
    /// Decodes `bytes` as a listing page and validates it as a folder's and as the sites'.
    public static func validatePage(_ bytes: [UInt8]) {
        guard let page = try? ItemPage(jsonBytes: bytes) else { return }
        _ = try? ResponseValidation.page(page, of: ItemIdentifier(site: "1", id: "1"))
        _ = try? ResponseValidation.page(page, of: nil)
    }

    /// Decodes `bytes` as a page of search results and validates it, once unrestricted and
    /// once as a search of site "1"; then as a version list.
    public static func validateSearchPage(_ bytes: [UInt8]) {
        if let page = try? JSONDecoder().decode(SearchResultPage.self, from: Data(bytes)) {
            _ = try? SearchValidation.page(page, for: SearchQuery(words: "x"), held: [:])
            _ = try? SearchValidation.page(page, for: SearchQuery(words: "x", site: ItemIdentifier(site: "1", id: "1")), held: [:])
        }
        if let list = try? JSONDecoder().decode(VersionList.self, from: Data(bytes)) {
            for version in list.versions { _ = try? VersionValidation.version(version, of: ItemIdentifier(site: "1", id: "2")) }
        }
    }
}

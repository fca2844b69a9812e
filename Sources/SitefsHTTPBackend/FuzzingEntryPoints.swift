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
}

import SitefsAPI

/// The columns of `items` that search compares names with (schema v5): written wherever a
/// name is, from the same function, so no path can leave them stale.
struct FoldedName: Sendable {
    let folded: String
    let stem: String

    init(_ name: String) {
        folded = SearchFolding.fold(name)
        stem = SearchFolding.stem(ofFolded: folded)
    }
}

import SitefsProvider
import Synchronization

/// The state behind the search and versions folders (see `VirtualNode`): their inodes, the
/// answers they show (kept a few seconds, so a listing and the opens after it agree), and
/// their open directory handles.
///
/// Lock order: every lock here is a leaf, taken alone and never across the network.
final class VirtualFolders: Sendable {
    let nodes = VirtualNodeTable()

    /// How long a search folder's or a file's versions answer is shown before it is asked
    /// again: long enough for `ls` then `open`, short enough that a file saved elsewhere a
    /// moment ago shows up at the next look.
    static let answerLifetime = Duration.seconds(5)
    /// Answers kept at most (the least recently made go first).
    static let maximumAnswers = 64

    private let searches = Mutex<[String: SearchOutcome]>([:])
    private let versionLists = Mutex<[ItemIdentifier: VersionListing]>([:])

    /// A file's versions as last asked, with the names the versions folder gives them.
    struct VersionListing: Sendable {
        var versions: [ItemVersion]
        var names: [String]
        var madeAt: ContinuousClock.Instant

        func version(named name: FileName) -> ItemVersion? {
            names.firstIndex { FileName($0) == name }.map { versions[$0] }
        }

        func version(_ identifier: String) -> ItemVersion? { versions.first { $0.identifier == identifier } }
    }

    func search(_ name: String, freshAt now: ContinuousClock.Instant) -> SearchOutcome? {
        searches.withLock { searches in
            guard let known = searches[name], now - known.madeAt < Self.answerLifetime else { return nil }
            return known
        }
    }

    /// The last answer, however old (a lookup of an entry the listing showed).
    func lastSearch(_ name: String) -> SearchOutcome? { searches.withLock { $0[name] } }

    func remember(_ outcome: SearchOutcome, of name: String) {
        searches.withLock { searches in
            searches[name] = outcome
            if searches.count > Self.maximumAnswers, let oldest = searches.min(by: { $0.value.madeAt < $1.value.madeAt })?.key {
                searches[oldest] = nil
            }
        }
    }

    func versions(of file: ItemIdentifier, freshAt now: ContinuousClock.Instant?) -> VersionListing? {
        versionLists.withLock { lists in
            guard let known = lists[file] else { return nil }
            if let now, now - known.madeAt >= Self.answerLifetime { return nil }
            return known
        }
    }

    func remember(_ listing: VersionListing, of file: ItemIdentifier) {
        versionLists.withLock { lists in
            lists[file] = listing
            if lists.count > Self.maximumAnswers, let oldest = lists.min(by: { $0.value.madeAt < $1.value.madeAt })?.key {
                lists[oldest] = nil
            }
        }
    }

    func forgetVersions(of file: ItemIdentifier) { _ = versionLists.withLock { $0.removeValue(forKey: file) } }

    // MARK: Directory handles

    /// An open virtual folder: its entries as they were at opendir.
    struct Listing: Sendable {
        struct Entry: Sendable {
            var name: String
            var node: Target
        }

        /// What an entry is: another virtual node, or a real item (a search hit).
        enum Target: Sendable {
            case virtual(VirtualNode)
            case item(ProviderItem)
        }

        var entries: [Entry]
    }

    /// Handle ids from the top of the range, apart from the core's (which count up from 1).
    private static let firstHandle: HandleID = 1 << 56
    private let listings = Mutex<(next: HandleID, open: [HandleID: Listing])>((VirtualFolders.firstHandle, [:]))

    static func isVirtualHandle(_ handle: HandleID) -> Bool { handle >= firstHandle }

    func open(_ listing: Listing) -> HandleID {
        listings.withLock { state in
            defer { state.next += 1 }
            state.open[state.next] = listing
            return state.next
        }
    }

    func listing(_ handle: HandleID) -> Listing? { listings.withLock { $0.open[handle] } }

    func close(_ handle: HandleID) { _ = listings.withLock { $0.open.removeValue(forKey: handle) } }
}

/// The version this mount gives a file it created on a server whose answer to the PUT
/// carries no ETag (Apache's mod_dav), instead of asking for the tag with a PROPFIND: one
/// request per new file less, which is a round trip on a distant server and the server's
/// password check on every one.
///
/// The version is made here (`put:` and 64 random bits) and stays the item's version for as
/// long as the server keeps the content the PUT stored. Which tag that content has is
/// learned at its first sighting (a listing, a PROPFIND of it, a GET): a tag whose size is
/// the upload's and whose modification time falls in the seconds the PUT was answered in is
/// the upload's own, and from then on that tag is shown as this version and this version
/// is sent as that tag (`If-Match`). Any other tag is a change made elsewhere: the pending
/// upload is dropped and the tag is shown as it is, so the change is seen as one.
///
/// What a PROPFIND right after the PUT adopted before is the same: whatever the server held
/// when it answered. The difference is when: a sighting adopts only content that matches
/// the upload's size and seconds, however late it comes.
///
/// Kept in the identity table with the node (columns `put_*`), so it outlives the mount
/// as the metadata cache's and the journal's copies of the version do.
struct UploadTag: Sendable, Equatable {
    /// The version the mount shows for the upload.
    var version: String
    /// The number of bytes the PUT sent.
    var size: Int64
    /// The server's modification times (seconds since the epoch) that can be the PUT's.
    var seconds: ClosedRange<Int64>
    /// The server's tag for the upload's content, once a sighting found it; nil before.
    var tag: String?

    static let prefix = "put:"

    /// A version no other upload and no server tag has (`EntityTag` refuses tags with
    /// the prefix).
    static func newVersion() -> String {
        var generator = SystemRandomNumberGenerator()
        let bits = generator.next() as UInt64
        let hex = String(bits, radix: 16)
        return prefix + String(repeating: "0", count: 16 - hex.count) + hex
    }

    static func isUploadVersion(_ version: String) -> Bool {
        version.utf8.starts(with: prefix.utf8)
    }

    /// The seconds the server may have stamped the PUT's content with: around the `Date` of
    /// its answer, by as much as the request took either way (a server may date its answer
    /// when the request came or when it answered), and a second more for the rounding.
    static func seconds(answeredAt date: Int64, taking elapsed: Duration) -> ClosedRange<Int64>? {
        let slack = elapsed.components.seconds + 2
        guard elapsed >= .zero, slack < 3600, date > slack, date < Int64.max - slack else { return nil }
        return (date - slack)...(date + slack)
    }

    /// What a sighting of the item means for the upload.
    enum Verdict: Equatable {
        /// The server still holds the upload's content: show `version`. `adopt` is the tag
        /// to record when this sighting is the one that found it.
        case upload(adopt: String?)
        /// The content is someone else's (or unknown): the upload is forgotten, the tag shown.
        case superseded
    }

    /// `tag`: the version the server reports (nil: none, or one of size and time);
    /// `size`, `seconds`: the content's as the sighting reports them, when it does.
    func judge(tag sighted: String?, size sightedSize: Int64?, seconds sightedSeconds: Int64?) -> Verdict {
        guard let sighted, !EntityTag.isSizeAndTime(sighted) else { return .superseded }
        if let tag { return tag == sighted ? .upload(adopt: nil) : .superseded }
        guard sightedSize == size, let sightedSeconds, seconds.contains(sightedSeconds) else { return .superseded }
        return .upload(adopt: sighted)
    }
}

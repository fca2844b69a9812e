import Foundation
@testable import SitefsWebDAVBackend
import Testing

/// An upload's own version in the identity table (see `UploadTag`): which sightings take a
/// tag for the upload's, which give it up, and what survives in between.
@Suite struct UploadTagTableTests {
    private let upload = UploadTag(version: "put:00000000000000aa", size: 5, seconds: 1_000...1_004)

    @Test func aTagIsTheUploadsOnlyWithItsSizeAndSeconds() {
        #expect(upload.judge(tag: "e1", size: 5, seconds: 1_002) == .upload(adopt: "e1"))
        #expect(upload.judge(tag: "e1", size: 5, seconds: 1_000) == .upload(adopt: "e1"))
        #expect(upload.judge(tag: "e1", size: 6, seconds: 1_002) == .superseded)
        #expect(upload.judge(tag: "e1", size: nil, seconds: 1_002) == .superseded)
        #expect(upload.judge(tag: "e1", size: 5, seconds: 1_005) == .superseded)
        #expect(upload.judge(tag: "e1", size: 5, seconds: nil) == .superseded)
        #expect(upload.judge(tag: nil, size: 5, seconds: 1_002) == .superseded)
        #expect(upload.judge(tag: "lm:5:1002", size: 5, seconds: 1_002) == .superseded)
        var adopted = upload
        adopted.tag = "e1"
        #expect(adopted.judge(tag: "e1", size: 99, seconds: 0) == .upload(adopt: nil))
        #expect(adopted.judge(tag: "e2", size: 5, seconds: 1_002) == .superseded)
    }

    @Test func theSecondsAreTheAnswersDateWidenedByTheRequestsTime() {
        #expect(UploadTag.seconds(answeredAt: 1_000, taking: .milliseconds(300)) == 998...1_002)
        #expect(UploadTag.seconds(answeredAt: 1_000, taking: .seconds(3)) == 995...1_005)
        #expect(UploadTag.seconds(answeredAt: 1_000, taking: .milliseconds(-1)) == nil)
        #expect(UploadTag.seconds(answeredAt: 1_000, taking: .seconds(7_200)) == nil)
        #expect(UploadTag.seconds(answeredAt: 1, taking: .zero) == nil)
        let made = UploadTag.newVersion()
        #expect(made.count == 4 + 16 && UploadTag.isUploadVersion(made) && made != UploadTag.newVersion())
        // A server's tag never reads as one, nor is one ever sent as a tag.
        #expect(EntityTag.version(fromHeader: "\"\(made)\"") == nil)
        #expect(EntityTag.header(for: made) == nil)
    }

    @Test func theTableShowsTheUploadsVersionUntilTheContentChanges() throws {
        let table = try IdentityTable(path: nil)
        let site = try table.node(for: .init(name: "S", isCollection: true), in: IdentityTable.root)
        var put = IdentityTable.Sighting(name: "new.txt", isCollection: false, keepModified: 1_001_500_000)
        put.upload = upload
        let made = try table.nodes(for: [put], in: site)[0]
        #expect(made.version == upload.version && made.keptModified == 1_001_500_000)
        #expect(try table.wireTag(for: upload.version, of: made.node) == nil)
        #expect(try table.wireTag(for: "e9", of: made.node) == "e9")
        // A name placed (no version) is no sighting of the content: nothing changes.
        #expect(try table.node(for: .init(name: "new.txt", isCollection: false), in: site) == made.node)
        // The first listing finds the tag; later ones show the upload's version for it.
        let listed = { (tag: String, size: Int64, seconds: Int64) in
            try table.nodes(for: [.init(name: "new.txt", isCollection: false, version: tag, size: size, seconds: seconds)],
                            in: site, listed: true)[0]
        }
        let first = try listed("e1", 5, 1_003)
        #expect(first == made)
        #expect(try table.wireTag(for: upload.version, of: made.node) == "e1")
        #expect(try listed("e1", 5, 1_003) == made)
        #expect(try table.shownVersion(of: made.node, tag: "e1", size: 5, seconds: 1_003) == upload.version)
        // Changed elsewhere: the server's tag from now on, and the upload forgotten.
        let changed = try listed("e2", 7, 2_000)
        #expect(changed.node == made.node && changed.version == nil && changed.keptModified == nil)
        #expect(try table.wireTag(for: upload.version, of: made.node) == nil)
        #expect(try listed("e1", 5, 1_003).version == nil)
    }

    @Test func aReadsTagIsJudgedAsAListingsIsAndSurvivesTheTable() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-puttable-\(UUID().uuidString).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        var node: IdentityTable.Node = 0
        do {
            let table = try IdentityTable(path: path)
            let site = try table.node(for: .init(name: "S", isCollection: true), in: IdentityTable.root)
            var put = IdentityTable.Sighting(name: "new.txt", isCollection: false)
            put.upload = upload
            node = try table.nodes(for: [put], in: site)[0].node
            #expect(try table.shownVersion(of: node, tag: "e1", size: 5, seconds: 1_001) == upload.version)
        }
        let reopened = try IdentityTable(path: path)
        #expect(try reopened.wireTag(for: upload.version, of: node) == "e1")
        #expect(try reopened.shownVersion(of: node, tag: "e3", size: 5, seconds: 1_001) == "e3")
        #expect(try reopened.wireTag(for: upload.version, of: node) == nil)
        // A node with no upload: the tag as it is, and no write.
        #expect(try reopened.shownVersion(of: node, tag: "e4", size: 5, seconds: 1_001) == "e4")
    }
}

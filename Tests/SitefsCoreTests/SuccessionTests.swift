import Dispatch
import Foundation
@testable import SitefsCore
import SitefsProvider
import Synchronization
import SystemPackage
import Testing

/// A file or folder made here becomes the server's item once its create is answered: its
/// inode, the cache and its open copy move to the server's identifier one after another
/// (`succeed(_:by:shown:)`). Whatever a reader holds meanwhile (the inode, the name, a
/// directory opened before) keeps answering with what was written. Under load `git` read a
/// loose object `git clone` had just copied into the mount as empty, and `git fsck` found
/// another "missing".
@Suite(.timeLimit(.minutes(1))) struct SuccessionTests {
    @Test func aNewFileAnswersTheSameAtEveryStepOfBecomingTheServersItem() throws {
        let harness = try CoreHarness(writeBackDelay: .seconds(60))
        defer { harness.remove() }
        let filesystem = harness.filesystem
        harness.backend.addSite("Harbour")
        let site = try harness.lookup(.root, "Harbour").attributes.inode
        let folder = try filesystem.makeDirectory(parent: site, name: FileName("objects"), mode: 0o755,
                                                  context: harness.context).attributes.inode
        let content = Array("twelve bytes".utf8)
        let file = try harness.createFile(folder, "31c84f", String(decoding: content, as: UTF8.self))
        // Opened before the uploads and read after them, as `git fsck` may.
        let openedBefore = try filesystem.openDirectory(folder, flags: 0, context: harness.context)
        defer { filesystem.releaseDirectory(folder, handle: openedBefore) }

        // At each step of the file's succession (the folder was made on the server at once):
        // a stat, a lookup, a listing and a read all find the file as written.
        let checked = Mutex<[SitefsFilesystem.SuccessionStep]>([])
        let wrong = Mutex<[String]>([])
        filesystem.successionPause.withLock {
            $0 = { step in
                checked.withLock { $0.append(step) }
                func note(_ what: String) { wrong.withLock { $0.append("\(step): \(what)") } }
                do {
                    let size = try filesystem.attributes(of: file, handle: nil, context: harness.context).attributes.size
                    if size != 12 { note("stat says \(size) bytes") }
                    let entry = try harness.lookup(folder, "31c84f")
                    if entry.attributes.inode != file || entry.attributes.size != 12 {
                        note("lookup found inode \(entry.attributes.inode), \(entry.attributes.size) bytes")
                    }
                    let listed = try harness.list(folder, plus: true).filter { $0.inode != folder && $0.inode != .root }
                    if listed.map(\.name.string) != ["31c84f"] || listed.first?.entry?.attributes.size != 12 {
                        note("listed \(listed.map { "\($0.name.string ?? "?") \($0.inode) \(filesystem.inodes.identifier(of: $0.inode).map { "\($0)" } ?? "-") \($0.entry?.attributes.size ?? 0)" }) file \(file) folder \(folder) \(filesystem.inodes.identifier(of: folder).map { "\($0)" } ?? "-")")
                    }
                    if try harness.readAll(file) != content { note("read other bytes") }
                } catch {
                    note("\(error)")
                }
            }
        }
        #expect(filesystem.waitForUploads(timeout: .seconds(20)))
        filesystem.successionPause.withLock { $0 = nil }
        #expect(checked.withLock { $0 } == SitefsFilesystem.SuccessionStep.allCases)
        #expect(wrong.withLock { $0 }.isEmpty, "\(wrong.withLock { $0 })")
        #expect(harness.backend.calls("createFile") == 1)

        // The directory opened while both were only here lists the file as the server's.
        var names: [String] = []
        try filesystem.readDirectory(folder, handle: openedBefore, offset: 0, plus: false, context: harness.context) { entry in
            if entry.inode != folder, entry.inode != .root, let name = entry.name.string { names.append(name) }
            return true
        }
        #expect(names == ["31c84f"])
    }

    /// A `stat` that read the new file's item before its succession began, and looks for its
    /// copy at `step`, still says the size written.
    @Test(arguments: SitefsFilesystem.SuccessionStep.allCases)
    func aStatThatReadTheFileBeforeItsSuccessionHasItsSize(finishingAt step: SitefsFilesystem.SuccessionStep) throws {
        let harness = try CoreHarness(writeBackDelay: .seconds(60))
        defer { harness.remove() }
        let filesystem = harness.filesystem
        harness.backend.addSite("Harbour")
        let site = try harness.lookup(.root, "Harbour").attributes.inode
        let file = try harness.createFile(site, "31c84f", "twelve bytes")

        let itemRead = DispatchSemaphore(value: 0), goOn = DispatchSemaphore(value: 0), statted = DispatchSemaphore(value: 0)
        let once = Mutex(false)
        filesystem.itemReadPause.withLock {
            $0 = {
                guard !once.withLock({ ran in defer { ran = true }; return ran }) else { return }
                itemRead.signal()
                _ = goOn.wait(timeout: .now() + 20)
            }
        }
        let size = Mutex<Result<UInt64, Errno>?>(nil)
        Thread.detachNewThread {
            size.withLock { $0 = Result { () throws(Errno) in
                try filesystem.attributes(of: file, handle: nil, context: harness.context).attributes.size
            } }
            statted.signal()
        }
        try #require(itemRead.wait(timeout: .now() + 20) == .success, "the stat read the item")
        filesystem.successionPause.withLock {
            $0 = { reached in
                guard reached == step else { return }
                goOn.signal()
                if statted.wait(timeout: .now() + 20) == .success { statted.signal() }
            }
        }
        #expect(filesystem.waitForUploads(timeout: .seconds(20)))
        filesystem.successionPause.withLock { $0 = nil }
        filesystem.itemReadPause.withLock { $0 = nil }
        goOn.signal()  // should the step never have come
        _ = statted.wait(timeout: .now() + 20)
        #expect(try size.withLock { $0 }?.get() == 12)
        #expect(harness.backend.calls("createFile") == 1)
    }
}

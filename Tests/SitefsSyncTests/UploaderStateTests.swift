import Foundation
import SitefsAPI
import SitefsProvider
import SitefsTestSupport
@testable import SitefsSync
import Testing

/// The uploader's state types on their own: each invariant written on a type is checked
/// here, without threads, a journal or a server.
private let site = "Harbour"
private func file(_ id: String) -> ItemIdentifier { ItemIdentifier(site: site, id: id) }
private func save(_ id: String, _ snapshot: String, base: String? = "v1") -> SaveJob {
    SaveJob(identifier: file(id), name: id + ".txt", parent: .site(site), stagedPath: snapshot, size: 1,
            baseVersion: base, modified: nil)
}
private let now = ContinuousClock.now

@Suite struct SaveQueueTests {
    @Test func aNewerSaveReplacesTheQueuedOneKeepsItsPlaceAndReleasesItsSnapshot() {
        var queue = SaveQueue()
        #expect(queue.enqueue(save("a", "/s/a1"), due: now).isEmpty)
        #expect(queue.enqueue(save("b", "/s/b1"), due: now).isEmpty)
        #expect(queue.enqueue(save("a", "/s/a2"), due: now) == ["/s/a1"])
        #expect(queue.order == [file("a"), file("b")])
        #expect(Set(queue.order) == Set(queue.queued.keys))
        #expect(queue.takeDue(at: now, holdingCreations: false)?.stagedPath == "/s/a2")
    }

    @Test func aResumedSaveIsKeptAsThePredecessorOfTheOneThatReplacesIt() {
        var queue = SaveQueue()
        _ = queue.enqueue(save("a", "/s/a1"), due: now, resuming: true)
        #expect(queue.enqueue(save("a", "/s/a2"), due: now).isEmpty, "the resumed snapshot was released")
        #expect(queue.queued[file("a")]?.predecessor?.stagedPath == "/s/a1")
        // A third save keeps the same predecessor and releases the second.
        #expect(queue.enqueue(save("a", "/s/a3"), due: now) == ["/s/a2"])
        #expect(queue.queued[file("a")]?.predecessor?.stagedPath == "/s/a1")
    }

    @Test func queueingANewerSaveEndsTheFailure() {
        var queue = SaveQueue()
        queue.fail(save("a", "/s/a1"), reason: "refused")
        #expect(queue.newest(of: file("a"))?.stagedPath == "/s/a1")
        #expect(queue.enqueue(save("a", "/s/a2"), due: now) == ["/s/a1"])
        #expect(queue.failures[file("a")] == nil && queue.queued[file("a")] != nil)
    }

    @Test func oneUploadPerFileAndNoCreatesWhileHeld() {
        var queue = SaveQueue()
        _ = queue.enqueue(save("a", "/s/a1"), due: now)
        let first = queue.takeDue(at: now, holdingCreations: false)!
        queue.beginUpload(first)
        _ = queue.enqueue(save("a", "/s/a2"), due: now)
        #expect(queue.takeDue(at: now, holdingCreations: false) == nil, "a second upload of a file in flight")
        let local = ItemIdentifier.local(in: site)
        _ = queue.enqueue(SaveJob(identifier: local, name: "n.txt", parent: .site(site), stagedPath: "/s/n", size: 1,
                                  baseVersion: nil, modified: nil), due: now)
        #expect(queue.takeDue(at: now, holdingCreations: true) == nil, "a create went while held")
        #expect(queue.takeDue(at: now, holdingCreations: false)?.identifier == local)
        queue.endUpload(file("a"))
        #expect(queue.progress.isEmpty && queue.inFlight.isEmpty)
        #expect(queue.takeDue(at: now, holdingCreations: false)?.stagedPath == "/s/a2")
    }

    @Test func aSaveIsNotDueBeforeItsTimeAndTheEarliestIsKnown() {
        var queue = SaveQueue()
        _ = queue.enqueue(save("a", "/s/a1"), due: now + .seconds(2))
        _ = queue.enqueue(save("b", "/s/b1"), due: now + .seconds(1))
        #expect(queue.takeDue(at: now, holdingCreations: false) == nil)
        #expect(queue.earliestDue(after: now) == now + .seconds(1))
        queue.makeDue(at: now, only: file("a"))
        #expect(queue.takeDue(at: now, holdingCreations: false)?.identifier == file("a"))
    }

    @Test func aSaveBasedOnWhatOurOwnUploadReplacedIsRebased() {
        var queue = SaveQueue()
        queue.lastUploaded[file("a")] = (base: "v1", result: "v2")
        _ = queue.enqueue(save("a", "/s/a1", base: "v1"), due: now)
        #expect(queue.queued[file("a")]?.baseVersion == "v2")
    }

    @Test func aLateModificationTimeIsKeptOnlyForAnUploadInFlight() {
        var queue = SaveQueue()
        let time = Timestamp(microsecondsSinceEpoch: 1_000_000)
        let keptWithoutUpload = queue.setLateModified(time, for: file("a"))
        #expect(!keptWithoutUpload)
        _ = queue.enqueue(save("a", "/s/a1"), due: now)
        queue.beginUpload(queue.takeDue(at: now, holdingCreations: false)!)
        let kept = queue.setLateModified(time, for: file("a"))
        #expect(kept)
        queue.endUpload(file("a"))
        let late = queue.takeLateModified(file("a"))
        #expect(late == nil, "a time outlived its upload")
    }
}

@Suite struct RenameQueueTests {
    private func rename(_ id: String, to name: String, serverName: String) -> Uploader.RenameJob {
        Uploader.RenameJob(identifier: file(id), name: name, parent: .site(site), serverName: serverName, serverParent: .site(site))
    }

    @Test func aNewerRenameStartsFromWhereTheServerHasTheFile() {
        var queue = RenameQueue()
        queue.put(rename("a", to: "b.txt", serverName: "a.txt"))
        let again = queue.startingFromServer(rename("a", to: "c.txt", serverName: "b.txt"))
        #expect(again.serverName == "a.txt", "the server still has it as a.txt")
        queue.put(again)
        #expect(queue.order == [file("a")] && queue.all.count == 1)
    }

    @Test func renamesGoOneAtATimeInOrder() {
        var queue = RenameQueue()
        queue.put(rename("a", to: "a2", serverName: "a"))
        queue.put(rename("b", to: "b2", serverName: "b"))
        let first = queue.next!
        #expect(first.identifier == file("a"))
        queue.begin(first)
        #expect(queue.next == nil, "a second rename while one is in flight")
        #expect(queue.startingFromServer(rename("a", to: "a3", serverName: "?")).serverName == "a2")
        let follower = queue.end(file("a"), serverItem: nil)
        #expect(follower == nil)
        #expect(queue.next?.identifier == file("b"))
    }

    @Test func aFollowerStartsFromWhatTheServerAnswered() {
        var queue = RenameQueue()
        queue.put(rename("a", to: "a2", serverName: "a"))
        queue.begin(queue.next!)
        queue.put(rename("a", to: "a3", serverName: "a2"))
        let answered = InMemoryBackend.item(file("a"), parent: .site(site), name: "a2 (conflict)", kind: .file, readOnly: false)
        let follower = queue.end(file("a"), serverItem: answered)
        #expect(follower?.serverName == "a2 (conflict)")
    }

    @Test func retargetingMovesQueuedRenamesOutOfALocalFolder() {
        var queue = RenameQueue()
        let local = ItemIdentifier.local(in: site)
        queue.put(Uploader.RenameJob(identifier: file("a"), name: "a", parent: local, serverName: "a", serverParent: .site(site)))
        let changed = queue.retarget(from: local, to: file("folder"))
        #expect(changed.map(\.parent) == [file("folder")] && queue.pending(of: file("a"))?.parent == file("folder"))
    }
}

@Suite struct OperationQueueTests {
    private func mkdir(_ sequence: Int64, _ local: ItemIdentifier) -> NamespaceOperation {
        var operation = NamespaceOperation(kind: .makeFolder, identifier: local, name: "F\(sequence)", parent: .site(site),
                                           baseVersion: nil, folders: nil)
        operation.sequence = sequence
        return operation
    }

    @Test func operationsGoOneAtATimeAndOneFromOfflineGoesBackToTheHead() {
        let first = ItemIdentifier.local(in: site), second = ItemIdentifier.local(in: site)
        var queue = OperationQueue(resuming: [mkdir(1, first)], lastSequence: 1)
        queue.append(mkdir(2, second), at: .now)
        #expect(queue.lastSequence == 2)
        let sending = queue.next(at: .now)!
        queue.begin(sending)
        #expect(queue.next(at: .now) == nil, "a second operation while one is in flight")
        #expect(queue.isPending(upTo: 1) && queue.isPending(first))
        queue.putBack(sending)
        #expect(queue.queued.map(\.sequence) == [1, 2])
        #expect(queue.queuedMakeFolder(second) == 1)
    }

    private func delete(_ sequence: Int64, _ name: String, in folder: ItemIdentifier) -> NamespaceOperation {
        var operation = NamespaceOperation(kind: .deleteFile, identifier: file(name), name: name, parent: folder, baseVersion: "v1")
        operation.sequence = sequence
        return operation
    }

    @Test func deletesOfFilesGoSeveralAtOnceAndAnythingElseAlone() {
        let start = ContinuousClock.now + .seconds(1)  // after every operation made here is due
        var queue = OperationQueue(resuming: [])
        queue.parallelDeletes = 2
        for index in 1...3 { queue.append(delete(Int64(index), "f\(index)", in: file("folder")), at: start) }
        queue.append(mkdir(4, .local(in: site)), at: start)
        queue.begin(queue.next(at: start)!)
        queue.begin(queue.next(at: start)!)
        #expect(queue.inFlight.map(\.sequence) == [1, 2])
        #expect(queue.next(at: start) == nil, "a third delete past the limit")
        queue.end(queue.inFlight[0])
        queue.begin(queue.next(at: start)!)
        #expect(queue.next(at: start) == nil, "a mkdir while deletes are in flight")
        #expect(queue.isPending(upTo: 2) && !queue.isPending(upTo: 1))
        queue.end(queue.inFlight[0])
        queue.end(queue.inFlight[0])
        #expect(queue.next(at: start)?.kind == .makeFolder)
    }

    @Test func aDeleteWaitsForItsFoldersDeletesToSettleAndAnRmdirTakesThemAlong() {
        let start = ContinuousClock.now + .seconds(1)  // after every operation made here is due
        let folder = file("folder"), elsewhere = file("elsewhere")
        var queue = OperationQueue(resuming: [])
        queue.deleteSettle = .milliseconds(100)
        queue.append(delete(1, "a", in: folder), at: start)
        queue.append(delete(2, "b", in: elsewhere), at: start)
        queue.append(delete(3, "c", in: folder), at: start + .milliseconds(50))
        #expect(queue.next(at: start + .milliseconds(149)) == nil, "sent while its folder's deletes still came")
        #expect(queue.firstDue == start + .milliseconds(150))
        var rmdir = NamespaceOperation(kind: .removeFolder, identifier: folder, name: "folder", parent: .site(site))
        rmdir.sequence = 4
        #expect(queue.absorbDeletes(into: &rmdir) == 2)
        queue.append(rmdir, at: start + .milliseconds(60))
        #expect(queue.queued.map(\.sequence) == [2, 4] && queue.count == 4)
        #expect(queue.all.map(\.sequence) == [2, 1, 3, 4])
        #expect(queue.isPending(file("a")) && queue.isPending(upTo: 1))
        // The server's folder held something else: the deletes go back, each on its own, ahead of the rmdir.
        queue.begin(queue.next(at: start + .milliseconds(200))!)
        #expect(queue.next(at: start + .milliseconds(200)) == nil, "an rmdir while a delete is in flight")
        queue.end(queue.inFlight[0])
        let sending = queue.next(at: start + .milliseconds(200))!
        queue.begin(sending)
        #expect(sending.absorbed.count == 2 && !queue.isBeingSent(file("b")) && queue.isBeingSent(file("a")))
        queue.returnAbsorbed(of: sending)
        #expect(queue.queued.map(\.sequence) == [1, 3, 4] && queue.queued.allSatisfy(\.absorbed.isEmpty))
        queue.expediteDeletes()
        #expect(queue.next(at: start + .milliseconds(60))?.sequence == 1)
    }

    @Test func lastSequenceNeverGoesBack() {
        let queue = OperationQueue(resuming: [], lastSequence: 7)
        #expect(queue.lastSequence == 7, "a rename queued now would go before operations made earlier")
    }
}

@Suite struct DeletionRecordsTests {
    @Test func aCancelledUploadIsTakenOnceAndADeleteFromBeforeARestartSettlesOnce() {
        var deletions = DeletionRecords()
        deletions.cancelInFlight(file("a"))
        #expect(deletions.isDeletedHere(file("a")))
        let taken = deletions.takeCancelled(file("a"))
        let takenAgain = deletions.takeCancelled(file("a"))
        #expect(taken && !takenAgain)
        deletions.resumeFromBeforeRestart(file("b"))
        #expect(deletions.isDeletedHere(file("b")))
        let settled = deletions.settleBeforeRestart(file("b"))
        let settledAgain = deletions.settleBeforeRestart(file("b"))
        #expect(settled && !settledAgain)
    }
}

@Suite struct LocalIdentitiesTests {
    @Test func aLocalFolderIsWaitingThenReadyOrAbandoned() {
        var identities = LocalIdentities(kept: .seconds(600))
        let made = ItemIdentifier.local(in: site), dropped = ItemIdentifier.local(in: site)
        guard case .waiting = identities.folder(made, mkdirPending: true) else { Issue.record("not waiting"); return }
        guard case .abandoned = identities.folder(made, mkdirPending: false) else { Issue.record("not abandoned"); return }
        identities.folderMade(made, as: file("server"))
        guard case .ready(let server) = identities.folder(made, mkdirPending: false) else { Issue.record("not ready"); return }
        #expect(server == file("server"))
        identities.abandonFolder(dropped)
        guard case .abandoned = identities.folder(dropped, mkdirPending: true) else { Issue.record("abandoned folder waits"); return }
        guard case .ready(let same) = identities.folder(file("x"), mkdirPending: false) else { Issue.record(); return }
        #expect(same == file("x"), "a server folder resolves to itself")
    }

    @Test func aRetiredCreationIsRememberedForTheTimeKeptOnly() {
        var identities = LocalIdentities(kept: .seconds(10))
        let first = ItemIdentifier.local(in: site), second = ItemIdentifier.local(in: site)
        identities.retire(first, as: (file("s1"), "v1"), at: now)
        #expect(identities.created(first)?.identifier == file("s1"))
        identities.retire(second, as: (file("s2"), "v1"), at: now + .seconds(11))
        #expect(identities.created(first) == nil, "kept past its time")
        #expect(identities.created(second)?.version == "v1")
    }
}

@Suite struct UnwrittenJournalTests {
    @Test func aLaterWriteToARowSupersedesTheOwedOne() {
        var unwritten = UnwrittenJournal()
        unwritten.owe(.dropRename(file("a")), keepSnapshot: false, retryAt: now)
        unwritten.owe(.clearDelete(file("b")), keepSnapshot: false, retryAt: now)
        let rename = Uploader.RenameJob(identifier: file("a"), name: "x", parent: .site(site), serverName: "a", serverParent: .site(site))
        unwritten.owe(.putRename(rename), keepSnapshot: false, retryAt: now)
        #expect(unwritten.count == 2, "two writes owed for one row")
        guard case .putRename = unwritten.pending[0].write else { Issue.record("the newest write of the row is not the one owed"); return }
        unwritten.written(.rename(file("a")))
        unwritten.written(.delete(file("b")))
        #expect(unwritten.count == 0 && unwritten.retryAt == nil)
    }

    @Test func troubleStartsOnceAndEndsOnlyWhenNothingIsOwed() {
        var unwritten = UnwrittenJournal()
        let healthyWithoutTrouble = unwritten.healthy()
        #expect(!healthyWithoutTrouble)
        let starts = unwritten.failed("disk full")
        let startsAgain = unwritten.failed("disk full")
        #expect(starts && !startsAgain)
        unwritten.owe(.dropSave(stagedPath: "/s/a"), keepSnapshot: false, retryAt: now)
        let healthyWhileOwed = unwritten.healthy()
        #expect(!healthyWhileOwed, "healthy while a write is owed")
        unwritten.written(.save("/s/a"))
        let healthy = unwritten.healthy()
        #expect(healthy && unwritten.trouble == nil)
    }
}

import Foundation
import SitefsAPI
import SitefsTestSupport
import Testing

/// Random edits, renames and deletes through the mount under random network faults and
/// daemon kills; at the end the server must hold exactly what the model says: every save
/// whose close() succeeded. `scripts/soak` runs it long (SITEFS_SOAK_OPS); CI runs it short.
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct MountSoakTests {
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test func noSavedByteIsLostUnderFaultsAndKills() throws {
        let environment = ProcessInfo.processInfo.environment
        let operations = environment["SITEFS_SOAK_OPS"].flatMap(Int.init) ?? 40
        let seed = environment["SITEFS_SOAK_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max / 2)
        var random = Generator(state: seed)
        print("soak: seed \(seed), \(operations) operations (SITEFS_SOAK_SEED replays it)")
        // Without writer locks: a kill -9 leaves the killed daemon's lock on the server until
        // it expires (its token dies with it), and until then the next daemon's saves of that
        // file go to conflict copies, by design (EditingLockMountTests covers that expiry).
        let fixture = try MountFixture(extraMountArguments: ["--io-timeout", "2", "--no-lock-writers"], throughFaultProxy: true)
        defer { fixture.tearDown() }
        let proxy = try #require(fixture.proxy)
        let folder = "Riverside/soak"
        try FileManager.default.createDirectory(atPath: fixture.path(folder), withIntermediateDirectories: false)
        // Kept on this device: at the end, every file must read offline as the model says.
        let pin = try fixture.sitefs(["pin", fixture.path(folder)])
        try #require(pin.status == 0, "pin: \(pin.err)")
        // Operations left in the current offline period (the server refused at the proxy).
        var offlineLeft = 0, offlinePeriods = 0

        var model: [String: String] = [:]  // name -> content the server must end with
        // Files saved into a folder that was then deleted on the server before the upload
        // went ("sub-N/file.txt" -> content): the folder is made again with the file in it.
        var deletedThere: [String: String] = [:]
        // Names touched by an operation that failed visibly: the journal may still complete a
        // save of theirs (a file whose delete failed in transit comes back, as it should).
        var uncertain: Set<String> = []
        // Names deleted or renamed away since the last daemon kill (a kill may bring one back:
        // see `strays` below): no listing may show one of them again while the mount runs.
        var gone: Set<String> = []
        var listedAgain: [String] = []
        var faults = 0, kills = 0, failedOperations = 0, counter = 0
        // SITEFS_SOAK_TRACE=1 prints every operation and its result, to replay a failure.
        let tracing = environment["SITEFS_SOAK_TRACE"] == "1"
        func trace(_ line: @autoclosure () -> String) { if tracing { print("soak op \(counter): \(line())") } }
        let faultModes: [FaultProxy.Mode] = [.respond(status: 503, headers: [], body: "busy"),
                                             .respond(status: 429, headers: [("Retry-After", "1")], body: "later"),
                                             .refuse, .resetAfter(bytes: 20)]
        for _ in 0..<operations {
            counter += 1
            if offlineLeft > 0 {
                offlineLeft -= 1
                if offlineLeft == 0 {
                    proxy.mode = .pass
                    trace("back online")
                }
            }
            let roll = Int.random(in: 0..<100, using: &random)
            if roll < 4, offlineLeft == 0 {
                // An offline period: the next few operations happen with the server unreachable.
                offlineLeft = Int.random(in: 3...10, using: &random)
                proxy.mode = .refuse
                offlinePeriods += 1
                trace("offline for \(offlineLeft) operations")
            } else if roll < 15 {
                let mode = faultModes.randomElement(using: &random)!, times = Int.random(in: 1...2, using: &random)
                proxy.injectOnce(mode, times: times)
                faults += 1
                trace("fault \(mode) x\(times)")
            } else if roll < 20 {
                fixture.killDaemons()
                kills += 1
                gone.removeAll()
                trace("kill")
                _ = try fixture.sitefs(["unmount", fixture.mountpoint.path])
                // The remount's own first request may meet an injected fault: a user retries.
                var remount = (status: Int32(1), out: "", err: "")
                for _ in 0..<10 where remount.status != 0 {
                    remount = try fixture.sitefs(["mount", fixture.mountURL, fixture.mountpoint.path, "--cache-dir", fixture.cache.path,
                                                  "--io-timeout", "2", "--poll-interval", "0.3", "--log-level", "debug",
                                                  "--no-lock-writers"])
                }
                try #require(remount.status == 0, "remount after kill: \(remount.err)")
            } else if roll >= 60 && roll < 65 {
                // A folder deleted on the server (someone else, straight at the server) right
                // after a file was saved into it here: the edit wins.
                let sub = "sub-\(counter)", name = "in-\(counter).txt"
                let content = "op \(counter) seed \(seed), deleted there\n"
                do {
                    try FileManager.default.createDirectory(atPath: fixture.path("\(folder)/\(sub)"), withIntermediateDirectories: false)
                    try content.write(toFile: fixture.path("\(folder)/\(sub)/\(name)"), atomically: false, encoding: .utf8)
                    deletedThere["\(sub)/\(name)"] = content
                    if let made = try fixture.serverItem("\(folder)/\(sub)") {
                        _ = try fixture.api.call("DELETE", "/v1/items/\(made.id)")
                        trace("save \(sub)/\(name), then \(sub) deleted on the server")
                    } else {
                        trace("save \(sub)/\(name) (\(sub) not on the server yet: made offline)")
                    }
                } catch {
                    trace("save into \(sub) failed: \(error)")
                    failedOperations += 1
                }
            } else if roll < 65 || model.isEmpty {
                // Save: an existing file or a new one.
                let name = (!model.isEmpty && roll < 45) ? model.keys.sorted().randomElement(using: &random)! : "file-\(counter).txt"
                let content = "op \(counter) seed \(seed)\n" + String(repeating: "x", count: Int.random(in: 0...5000, using: &random))
                do {
                    try content.write(toFile: fixture.path("\(folder)/\(name)"), atomically: false, encoding: .utf8)
                    model[name] = content
                    trace("save \(name) (\(content.utf8.count) bytes)")
                } catch {
                    trace("save \(name) failed: \(error)")
                    failedOperations += 1
                    uncertain.insert(name)
                    try reconcile(name, in: folder, fixture: fixture, model: &model)
                }
            } else if roll < 85 {
                let from = model.keys.sorted().randomElement(using: &random)!
                let to = "renamed-\(counter).txt"
                if rename(fixture.path("\(folder)/\(from)"), fixture.path("\(folder)/\(to)")) == 0 {
                    model[to] = model.removeValue(forKey: from)
                    gone.insert(from)
                    trace("rename \(from) -> \(to)")
                } else {
                    trace("rename \(from) -> \(to) failed: errno \(errno)")
                    failedOperations += 1
                    uncertain.formUnion([from, to])
                    try reconcile(from, in: folder, fixture: fixture, model: &model)
                    try reconcile(to, in: folder, fixture: fixture, model: &model)
                }
            } else {
                let victim = model.keys.sorted().randomElement(using: &random)!
                if unlink(fixture.path("\(folder)/\(victim)")) == 0 {
                    model[victim] = nil
                    gone.insert(victim)
                    trace("delete \(victim)")
                } else {
                    trace("delete \(victim) failed: errno \(errno)")
                    failedOperations += 1
                    uncertain.insert(victim)
                    try reconcile(victim, in: folder, fixture: fixture, model: &model)
                }
            }
            // What `ls` shows now (a listing that fails under an injected fault shows nothing).
            let shown = (try? FileManager.default.contentsOfDirectory(atPath: fixture.path(folder))) ?? []
            for name in shown where gone.subtracting(uncertain).contains(name) {
                listedAgain.append("\(name) after op \(counter)")
                trace("listed again: \(name)")
            }
        }
        proxy.mode = .pass
        let sync = try fixture.sitefs(["sync", fixture.mountpoint.path, "--timeout", "120", "--pinned"], timeout: 150)
        #expect(sync.status == 0, "\(sync.err)")

        let soak = try #require(try fixture.serverItem(folder))
        let onServer = Dictionary(uniqueKeysWithValues: try fixture.children(soak.id).map { ($0.name, $0.id) })
        var bytesLost = 0
        for (name, content) in model where !uncertain.contains(name) || onServer[name] != nil {
            guard let id = onServer[name] else {
                bytesLost += content.utf8.count
                Issue.record("\(name) is missing on the server (seed \(seed))")
                continue
            }
            let stored = try fixture.api.call("GET", "/v1/items/\(id)/content").body
            if stored != content {
                bytesLost += content.utf8.count
                // Where the model's content went, if anywhere: a conflict copy keeps the bytes
                // (a spurious conflict), no copy means they are gone.
                var keptIn: [String] = []
                for (other, otherID) in onServer where other.contains("(conflict ") {
                    if try fixture.api.call("GET", "/v1/items/\(otherID)/content").body == content { keptIn.append(other) }
                }
                let whereabouts = keptIn.isEmpty ? "no conflict copy holds the model's content" : "the model's content is in \(keptIn)"
                Issue.record("\(name) differs on the server: \(stored.utf8.count) bytes there, \(content.utf8.count) in the model; \(whereabouts) (seed \(seed))")
            }
        }
        for (path, content) in deletedThere {
            let parts = path.split(separator: "/").map(String.init)
            let stored = try onServer[parts[0]].flatMap { folderID in
                try fixture.children(folderID).first { $0.name == parts[1] }
            }.map { try fixture.api.call("GET", "/v1/items/\($0.id)/content").body }
            if stored != content {
                bytesLost += content.utf8.count
                Issue.record("\(path), saved into a folder deleted on the server, is \(stored == nil ? "missing" : "different") there (seed \(seed))")
            }
        }
        // Files back on the server that the model deleted: not a loss, but a known imprecision
        // under kills (see the closing note of the durability work); reported, and strict
        // with SITEFS_SOAK_STRICT=1.
        let strays = Set(onServer.keys).subtracting(model.keys).subtracting(uncertain)
            .filter { !$0.contains("(conflict ") && !$0.hasPrefix("sub-") }
        if environment["SITEFS_SOAK_STRICT"] == "1" {
            #expect(strays.isEmpty, "files the model does not know: \(strays) (seed \(seed))")
        }
        // The pinned folder, read with the server unreachable: every file local and as saved.
        proxy.mode = .refuse
        #expect(eventually(timeout: .seconds(20)) {
            (try? fixture.sitefs(["status", fixture.mountpoint.path]).out.contains("offline since")) == true
        })
        var pinnedWrong: [String] = []
        for (name, content) in model where !uncertain.contains(name) {
            let read = Result { try String(contentsOfFile: fixture.path("\(folder)/\(name)"), encoding: .utf8) }
            guard (try? read.get()) != content else { continue }
            pinnedWrong.append(name)
            trace("pinned wrong offline: \(name): \(read.map { "\($0.utf8.count) bytes, \(content.utf8.count) saved" })")
        }
        if !pinnedWrong.isEmpty {
            let listed = (try? FileManager.default.contentsOfDirectory(atPath: fixture.path(folder)))?.sorted() ?? []
            trace("listed offline: \(listed)")
            for name in pinnedWrong {
                let again = Result { try String(contentsOfFile: fixture.path("\(folder)/\(name)"), encoding: .utf8) }
                trace("read again after the listing: \(name): \(again.map { "\($0.utf8.count) bytes" })")
            }
        }
        proxy.mode = .pass
        #expect(pinnedWrong.isEmpty, "pinned files not readable offline as saved: \(pinnedWrong.sorted()) (seed \(seed))")
        print("soak: seed \(seed), \(operations) operations, \(faults) faults injected (\(proxy.faultsInjected) hit), "
              + "\(offlinePeriods) offline periods, pinned files wrong offline: \(pinnedWrong.count), "
              + "\(kills) daemon kills, \(failedOperations) operations failed visibly, \(model.count) files, "
              + "\(deletedThere.count) saved into folders deleted there, "
              + "deleted files back: \(strays.count) \(strays.sorted()), listed again after delete: \(listedAgain.count), "
              + "bytes lost: \(bytesLost)")
        #expect(bytesLost == 0)
        #expect(listedAgain.isEmpty, "deleted or renamed-away names listed again: \(listedAgain.prefix(20)) (seed \(seed))")
    }

    /// After an operation failed visibly (a call made on the server at once hit a fault), the
    /// model follows what the mount shows: the user saw the error and looks. The server must
    /// end up with that once everything is synced.
    /// The mount may fail to show the file for a moment too (the same fault): a user looks
    /// again. Only if it stays unreadable is the server's content taken, which a save still
    /// journaled may replace (then the model is stricter than the truth, never looser).
    private func reconcile(_ name: String, in folder: String, fixture: MountFixture, model: inout [String: String]) throws {
        let path = fixture.path("\(folder)/\(name)")
        var shown: String??  // .some(nil): the mount shows no such file
        _ = eventually(timeout: .seconds(2), every: .milliseconds(500)) {
            if let text = try? String(contentsOfFile: path, encoding: .utf8) {
                shown = .some(text)
            } else {
                var info = stat()
                if lstat(path, &info) != 0 && errno == ENOENT { shown = .some(nil) }
            }
            return shown != nil
        }
        if let shown {
            model[name] = shown
            return
        }
        if let item = try fixture.serverItem("\(folder)/\(name)") {
            model[name] = try fixture.api.call("GET", "/v1/items/\(item.id)/content").body
        }
    }
}

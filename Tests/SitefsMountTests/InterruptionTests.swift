import Foundation
import SitefsTestSupport
import Testing

/// A program waiting in `open()` for a download can be interrupted (issue 17, item 1: an
/// audit's writer could not be interrupted for 411 s). The kernel sends FUSE_INTERRUPT for
/// the request the signalled process waits on; the daemon abandons the download and answers
/// EINTR, so the program ends as the signal says, while the server is still "sending".
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct MountInterruptionTests {
    @Test func aSignalEndsAnOpenWaitingForASlowDownload() throws {
        try signalEndsAnOpenWaitingForASlowDownload(as: nil)
    }

    /// The same with the daemon and the program run by an ordinary account, as users mount.
    @Test(.enabled(if: TestAccount.canSwitchUsers, "needs root to make the test account"))
    func aSignalEndsAnOpenWaitingForASlowDownloadAsAUser() throws {
        try TestAccount.openFUSEToUsers()
        try signalEndsAnOpenWaitingForASlowDownload(as: try TestAccount.named("sitefs-test-user"))
    }

    private func signalEndsAnOpenWaitingForASlowDownload(as account: TestAccount?) throws {
        // The stall timeout is far away: only the interrupt can end the wait.
        let fixture = try MountFixture(extraMountArguments: ["--io-timeout", "300"], throughFaultProxy: true, as: account)
        defer { fixture.tearDown() }
        let proxy = try #require(fixture.proxy)
        let made = try fixture.shell("echo 'first line' > Riverside/log.txt")
        try #require(made.status == 0, "\(made.err)")
        try #require(try fixture.sitefs(["sync", fixture.mountpoint.path, "--timeout", "60"]).status == 0)
        try #require(eventually { fixture.localCopies.isEmpty }, "the local copy stayed")
        let file = try #require(try fixture.serverItem("Riverside/log.txt"))

        // The server answers, but its answer takes ten minutes to arrive.
        proxy.delayResponses(toTargetsStartingWith: "/v1/items/\(file.id)/content", by: .seconds(600))
        for signal in ["INT", "TERM", "KILL"] {
            // `timeout` signals the shell blocked in open(2) for the `>>` redirection after
            // 2 s. Without the interrupt the open would wait for the download, and this would
            // not end within the run's 60 s limit (a thrown failure).
            let append = try fixture.shell("timeout -s \(signal) 2 sh -c 'echo appended >> Riverside/log.txt'")
            #expect(append.status == 124 || append.status == 137, "SIG\(signal): \(append.status) \(append.err)")
        }
        #expect(fixture.daemonLog.contains("interrupted by the caller"))
        // Nothing was written, and the mount is as healthy as before.
        #expect(try fixture.serverContent("Riverside/log.txt") == "first line\n")
        proxy.delayResponses(toTargetsStartingWith: "/v1/items/\(file.id)/content", by: nil)
        let append = try fixture.shell("echo 'second line' >> Riverside/log.txt")
        #expect(append.status == 0, "\(append.err)")
        try #require(try fixture.sitefs(["sync", fixture.mountpoint.path, "--timeout", "60"]).status == 0)
        #expect(try fixture.serverContent("Riverside/log.txt") == "first line\nsecond line\n")
    }
}

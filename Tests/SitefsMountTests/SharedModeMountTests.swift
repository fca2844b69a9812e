import Foundation
import SitefsTestSupport
import Testing

/// Permission bits are the server's (issue 35): a script made executable on one mount runs on
/// a second mount of the same server once that mount has heard of the change (the change
/// feed on sitefs-server, revalidation on WebDAV), and a link made on one is a link on the other.
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct SharedModeMountTests {
    @Test(arguments: [ScenarioBackend.sitefs, .apache])
    func aScriptMadeExecutableOnOneMountRunsOnAnother(_ backend: ScenarioBackend) throws {
        let a = try DaemonMount(prefix: "modes-a")
        defer { a.tearDown() }  // stops the server after A's unmount
        let b = try DaemonMount(prefix: "modes-b")
        defer { b.tearDown() }
        let server = try backend.start(in: a.root)
        a.onTearDown { server.stop() }
        let arguments = ["--poll-interval", "0.3", "--cache-ttl", "1", "--log-level", "debug"]
        for mount in [a, b] {
            try mount.login(server.url, user: "anna", password: ScenarioMount.password)
            try mount.mount(arguments)
        }

        let made = try a.shell("printf '#!/bin/sh\\necho \"ran on B\"\\n' > Riverside/deploy.sh && ln -s deploy.sh Riverside/deploy-link")
        #expect(made.status == 0, "\(made.err)")
        try a.sync()
        #expect(eventually(timeout: .seconds(30), every: .milliseconds(200)) {
            (try? b.shell("cat Riverside/deploy.sh").out) == "#!/bin/sh\necho \"ran on B\"\n"
        }, "B never saw the script")
        #expect(try b.shell("stat -c %a Riverside/deploy.sh").out == "644\n")
        #expect(try b.shell("./Riverside/deploy.sh").status != 0, "a 0644 script ran")

        let chmod = try a.shell("chmod +x Riverside/deploy.sh && stat -c %a Riverside/deploy.sh")
        #expect(chmod.status == 0 && chmod.out == "755\n", "chmod +x on A: \(chmod.out)\(chmod.err)")
        try a.sync()
        let seen = eventually(timeout: .seconds(30), every: .milliseconds(200)) {
            (try? b.shell("stat -c %a Riverside/deploy.sh").out) == "755\n"
        }
        let shown = (try? b.shell("stat -c %a Riverside/deploy.sh"))?.out ?? "nothing"
        #expect(seen, "B still shows \(shown) after 30 s\nlog B: \(b.daemonLog.suffix(2000))")
        let ran = try b.shell("./Riverside/deploy.sh && ./Riverside/deploy-link")
        #expect(ran.status == 0 && ran.out == "ran on B\nran on B\n", "running it on B: \(ran.out)\(ran.err)")
        #expect(try b.shell("readlink Riverside/deploy-link").out == "deploy.sh\n")

        // And back: chmod -x on B, A stops running it.
        #expect(try b.shell("chmod a-x Riverside/deploy.sh").status == 0)
        try b.sync()
        #expect(eventually(timeout: .seconds(30), every: .milliseconds(200)) {
            (try? a.shell("stat -c %a Riverside/deploy.sh").out) == "644\n"
        }, "A never saw chmod a-x of B")
    }
}

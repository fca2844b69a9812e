import Foundation
import SitefsTestSupport
import Testing

/// Real tools on a real mount, on sitefs-server and on Apache's WebDAV (issue 35): git,
/// autotools and make, tar, rsync and cp -a, each checked against the same steps on a local
/// folder (`ShellToolsBench`). They need what a disk has: permission bits kept, symlinks,
/// times set by utimensat, a no-op chown, rename over existing names.
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct ShellToolsMountTests {
    static let backends: [ScenarioBackend] = [.sitefs, .apache]

    @Test(arguments: backends)
    func gitInitCommitGcFsckAndCloneWorkOnTheMount(_ backend: ScenarioBackend) throws {
        let bench = try ShellToolsBench(backend, name: "git")
        defer { bench.tearDown() }
        // A bare repository on the local disk to clone from.
        let bare = bench.scratch.appendingPathComponent("origin.git")
        let seeded = try bench.shell("""
            git init -q -b main --bare '\(bare.path)'
            git init -q -b main seed
            cd seed
            printf 'one\\n' > one.txt
            printf '#!/bin/sh\\necho cloned\\n' > run.sh
            chmod +x run.sh
            ln -s one.txt link
            git add -A
            git commit -q -m seed
            git push -q '\(bare.path)' main
            """, in: bench.scratch)
        try #require(seeded.status == 0, "\(seeded.err)")

        let steps = """
            git init -q -b main repo
            cd repo
            printf 'hello\\n' > a.txt
            mkdir -p src
            printf 'int main(void) { return 0; }\\n' > src/main.c
            printf '#!/bin/sh\\necho tool\\n' > tool.sh
            chmod +x tool.sh
            ln -s src/main.c main-link
            git add -A
            git commit -q -m first
            for i in 1 2 3 4 5; do echo "line $i" >> a.txt; git commit -q -am "change $i"; done
            git mv a.txt b.txt
            git commit -q -m rename
            git gc -q
            git fsck --full --strict
            test -z "$(git status --porcelain)"
            git rev-parse HEAD
            git log --oneline | wc -l
            git ls-files -s | cut -c1-6 | sort | uniq -c
            ./tool.sh
            readlink main-link
            cd ..
            git clone -q '\(bare.path)' clone
            cd clone
            git fsck --full --strict
            test -z "$(git status --porcelain)"
            ./run.sh
            readlink link
            git rev-parse HEAD
            """
        let (here, there) = try bench.both(steps, timeout: 300)
        // The same commits (fixed dates): the same ids, modes (100755, 120000) and files.
        #expect(there.out == here.out, "git on the mount said\n\(there.out)\nlocally\n\(here.out)")
        let diff = try bench.diff("repo", excluding: [".git"])
        #expect(diff.status == 0, "the working trees differ:\n\(diff.out)\(diff.err)")
    }

    @Test(arguments: backends)
    func autoreconfConfigureAndMakeBuildAProgramThatRuns(_ backend: ScenarioBackend) throws {
        let bench = try ShellToolsBench(backend, name: "autotools")
        defer { bench.tearDown() }
        let project = ShellToolsBench.fixtures.appendingPathComponent("autotools-hello").path
        let steps = """
            cp -R '\(project)' hello
            cd hello
            autoreconf -if
            ./configure
            make
            ./hello
            ./hello-script.sh
            make > again.log 2>&1 || { cat again.log; exit 2; }
            if grep -E 'automake|autoconf|aclocal|config.status|configure|gcc|hello.o' again.log; then exit 1; fi
            # a second later, as a person edits: mtimes of whole seconds are enough for make
            sleep 1
            printf '#define GREETING "Hello again"\\n' > greeting.h
            make
            ./hello
            """
        let (here, there) = try bench.both(steps, timeout: 600)
        #expect(there.out.contains("Hello from hello-sitefs 1.0\nscript ran\n"), "\(there.out)")
        let ran = { (out: String) in out.split(separator: "\n").filter { $0.hasPrefix("Hello") || $0 == "script ran" } }
        #expect(ran(there.out) == ran(here.out))
        #expect(ran(there.out).last == "Hello again from hello-sitefs 1.0", "make did not rebuild after the header changed")
        let listing = try bench.listing("hello")
        let programs = { (lines: String) in lines.split(separator: "\n").filter { $0.hasPrefix("./hello ") || $0.contains("configure f") } }
        #expect(programs(listing.mount).map { $0.split(separator: " ")[2] } == programs(listing.local).map { $0.split(separator: " ")[2] },
                "modes of the built files:\n\(listing.mount)")
    }

    @Test(arguments: backends)
    func tarExtractsModesAndLinksAsOnADisk(_ backend: ScenarioBackend) throws {
        let bench = try ShellToolsBench(backend, name: "tar")
        defer { bench.tearDown() }
        let made = try bench.shell(ModesAndLinksTree.script, in: bench.scratch)
        try #require(made.status == 0, "\(made.err)")
        let archive = bench.scratch.appendingPathComponent("tree.tar").path
        _ = try bench.both("tar xpf '\(archive)'\ntree/bin/tool.sh\ncat tree/docs-link/readme.txt tree/bin/readme")
        let diff = try bench.diff("tree")
        #expect(diff.status == 0, "diff -r --no-dereference:\n\(diff.out)\(diff.err)")
        let listing = try bench.listing("tree")
        #expect(listing.mount == listing.local, "on the mount:\n\(listing.mount)\nlocally:\n\(listing.local)")
        let modes = "stat -c '%n %a %F' tree/bin/tool.sh tree/private tree/private/key tree/docs/readme.txt tree/docs/deep/note.txt tree/hostname"
        let here = try bench.shell(modes, in: bench.local), there = try bench.shell(modes, in: bench.onMount)
        #expect(here.out.contains("tree/bin/tool.sh 755") && here.out.contains("tree/private 700") && here.out.contains("tree/private/key 600"))
        #expect(there.out == here.out, "stat -c %a on the mount:\n\(there.out)\(there.err)\nlocally:\n\(here.out)")
    }

    @Test(arguments: backends)
    func rsyncTwiceTransfersNothingTheSecondTime(_ backend: ScenarioBackend) throws {
        let bench = try ShellToolsBench(backend, name: "rsync")
        defer { bench.tearDown() }
        let made = try bench.shell(ModesAndLinksTree.script, in: bench.scratch)
        try #require(made.status == 0, "\(made.err)")
        let source = bench.scratch.appendingPathComponent("tree").path
        let (here, there) = try bench.both("rsync -a '\(source)/' copy/\nrsync -a --itemize-changes '\(source)/' copy/")
        #expect(here.out.isEmpty, "rsync locally changed \(here.out)")
        #expect(there.status == 0 && there.out.isEmpty, "the second rsync -a to the mount changed:\n\(there.out)\(there.err)")
        let diff = try bench.diff("copy")
        #expect(diff.status == 0, "diff -r --no-dereference:\n\(diff.out)\(diff.err)")
        let listing = try bench.listing("copy")
        #expect(listing.mount == listing.local, "on the mount:\n\(listing.mount)\nlocally:\n\(listing.local)")
    }

    @Test(arguments: backends)
    func cpDashAKeepsModesLinksAndTimes(_ backend: ScenarioBackend) throws {
        let bench = try ShellToolsBench(backend, name: "cp")
        defer { bench.tearDown() }
        let made = try bench.shell(ModesAndLinksTree.script, in: bench.scratch)
        try #require(made.status == 0, "\(made.err)")
        let source = bench.scratch.appendingPathComponent("tree").path
        _ = try bench.both("cp -a '\(source)' copy\ncp -a copy copy2\ncopy2/bin/tool.sh")
        for copy in ["copy", "copy2"] {
            let diff = try bench.diff(copy)
            #expect(diff.status == 0, "\(copy): diff -r --no-dereference:\n\(diff.out)\(diff.err)")
            let listing = try bench.listing(copy)
            #expect(listing.mount == listing.local, "\(copy) on the mount:\n\(listing.mount)\nlocally:\n\(listing.local)")
        }
    }
}

import Foundation
import Glibc
import SitefsCore
import SitefsFUSE
import Synchronization
import Testing

@Suite("Concurrent access", .requiresFUSE)
struct ConcurrencyTests {
    static func contents(_ index: Int) -> [UInt8] {
        // 200 KiB per file, distinct per file, so a read served from the wrong file or offset shows.
        (0..<(200 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index &* 17) }
    }

    @Test("8 threads reading 24 files each at the same time all get the right bytes")
    func concurrentReaders() throws {
        let filesystem = InMemoryFilesystem()
        let fileCount = 24
        for index in 0..<fileCount {
            filesystem.addFile("shared/file-\(index).bin", contents: Self.contents(index))
        }
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }

        let threadCount = 8
        let failures = Mutex<[String]>([])
        let finished = DispatchSemaphore(value: 0)
        for thread in 0..<threadCount {
            let worker = Thread {
                for round in 0..<fileCount {
                    let index = (round + thread * 3) % fileCount
                    let path = mount.path("shared/file-\(index).bin")
                    do {
                        let data = try Data(contentsOf: URL(fileURLWithPath: path))
                        if Array(data) != Self.contents(index) {
                            failures.withLock { $0.append("thread \(thread): wrong bytes in file-\(index)") }
                        }
                    } catch {
                        failures.withLock { $0.append("thread \(thread): \(error)") }
                    }
                }
                finished.signal()
            }
            worker.start()
        }
        for _ in 0..<threadCount {
            guard finished.wait(timeout: .now() + 60) == .success else {
                Issue.record("readers did not finish within 60 s")
                return
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(filesystem.counters.opens >= threadCount * fileCount / 2)
    }
}

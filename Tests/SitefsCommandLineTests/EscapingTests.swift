import Logging
import SitefsCommandLine
import SitefsTestSupport
import Synchronization
import Testing

@Suite struct EscapingTests {
    @Test func controlCharactersAreEscapedAndLettersKept() {
        #expect(TerminalText.escaped("Plan.odt") == "Plan.odt")
        #expect(TerminalText.escaped("caf\u{E9} \u{1F3D7}") == "caf\u{E9} \u{1F3D7}")
        #expect(TerminalText.escaped("a\nERROR forged") == "a\\nERROR forged")
        #expect(TerminalText.escaped("x\r\u{1B}[2Jy\u{7F}\u{85}\u{2028}") == "x\\r\\u{1b}[2Jy\\u{7f}\\u{85}\\u{2028}")
    }

    /// What reaches the handler underneath is one line, whatever the message held.
    @Test func theLogHandlerEscapesEveryMessage() {
        let recorder = LogRecorder()
        var logger = Logger(label: "test") { _ in EscapingLogHandler(recorder) }
        logger.logLevel = .debug
        let name = "report\n2026-11-24 ERROR sitefs: forged line\u{1B}[31m"
        logger.info("unlink \(name)")
        #expect(recorder.messages == ["unlink report\\n2026-11-24 ERROR sitefs: forged line\\u{1b}[31m"])
    }
}

@Suite struct LoopbackHostTests {
    @Test func onlyThisMachinesAddressesAreLoopback() {
        for host in ["localhost", "LOCALHOST", "127.0.0.1", "127.255.0.9", "::1", "[::1]"] {
            #expect(LoopbackHost.contains(host), "\(host)")
        }
        for host in ["192.0.2.1", "10.0.0.1", "localhost.example.org", "127.0.0", "127.0.0.1.example", "128.0.0.1", "", "::2"] {
            #expect(!LoopbackHost.contains(host), "\(host)")
        }
    }
}

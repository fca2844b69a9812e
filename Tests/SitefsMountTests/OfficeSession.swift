import Foundation
import SitefsTestSupport
import Testing

/// A real LibreOffice (headless, over UNO) driven as a person drives it: open a document,
/// edit and store it, close it (Support/office_session.py). Each session has its own
/// profile and home, so two sessions are two people's LibreOffice. `quit()` always ends it.
final class OfficeSession: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()

    /// Whether this machine has LibreOffice with its Python bridge (`scripts/test` installs both).
    static var available: Bool {
        FileManager.default.fileExists(atPath: "/usr/bin/soffice")
            && ((try? run(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", "import uno"]).status) == 0)
    }

    /// Starts LibreOffice with a profile in `folder` (its home beside it) and waits until it
    /// answers.
    init(profile folder: URL) throws {
        let home = try PrivateHome(in: folder.deletingLastPathComponent().appendingPathComponent(folder.lastPathComponent + "-home"))
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.environment = ProcessInfo.processInfo.environment.merging(home.environment) { $1 }
        process.arguments = [URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Support/office_session.py").path, folder.path]
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let ready = ServerProcess.readLine(from: output.fileHandleForReading, timeout: 90)
        guard ready == "ready" else {
            quit()
            throw ProcessFailure("LibreOffice did not start: \(ready ?? "no answer in 90 s")")
        }
    }

    deinit { quit() }

    /// Opens `path`; true when LibreOffice opened it read-only.
    func open(_ path: String) throws -> Bool {
        let answer = try send("open \(path)")
        guard answer.hasPrefix("opened readonly=") else { throw ProcessFailure("LibreOffice: \(answer)") }
        return answer == "opened readonly=True"
    }

    /// Appends `text` to the open document and stores it in place.
    func edit(appending text: String) throws {
        let answer = try send("edit \(text)")
        guard answer == "stored" else { throw ProcessFailure("LibreOffice: \(answer)") }
    }

    func close() throws {
        let answer = try send("close")
        guard answer == "closed" else { throw ProcessFailure("LibreOffice: \(answer)") }
    }

    /// Ends LibreOffice (waits up to 40 s, then kills it).
    func quit() {
        guard process.isRunning else { return }
        try? input.fileHandleForWriting.write(contentsOf: Data("quit\n".utf8))
        let deadline = Date().addingTimeInterval(40)
        while process.isRunning && Date() < deadline { usleep(50_000) }
        if process.isRunning { process.terminate() }
    }

    private func send(_ command: String) throws -> String {
        try input.fileHandleForWriting.write(contentsOf: Data((command + "\n").utf8))
        guard let answer = ServerProcess.readLine(from: output.fileHandleForReading, timeout: 120) else {
            throw ProcessFailure("LibreOffice did not answer \(command.debugDescription) within 120 s")
        }
        return answer
    }
}

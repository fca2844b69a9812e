import Foundation
import SitefsTestSupport
import Testing

/// Opens `path` for writing in a helper process, runs `between` while it is open (the local
/// copy is based on the version at open), then writes `text` and closes: a save based on a
/// version someone else may have replaced meanwhile. `creating`: the file is made by the
/// open (`open(path, "w")`), a new file.
func editWhileOpen(_ path: String, to text: String, creating: Bool = false, between: () throws -> Void) throws {
    let script = """
        import sys
        f = open(sys.argv[1], '\(creating ? "w" : "r+")')
        sys.stdout.write('open\\n'); sys.stdout.flush()
        sys.stdin.readline()
        f.seek(0); f.truncate(); f.write(sys.argv[2]); f.close()
        """
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    process.arguments = ["-c", script, path, text]
    let input = Pipe(), output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    defer { ChildProcess.stop(process, grace: .seconds(5)) }
    let ready = ServerProcess.readLine(from: output.fileHandleForReading, timeout: 30)
    try #require(ready == "open", "the editing process did not open \(path)")
    try between()
    input.fileHandleForWriting.write(Data("go\n".utf8))
    let exited = ChildProcess.waitForExit(process, timeout: .seconds(30))
    try #require(exited && process.terminationStatus == 0, "the editing process failed")
}

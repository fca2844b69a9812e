import Foundation
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
    defer { if process.isRunning { process.terminate() } }
    let ready = output.fileHandleForReading.availableData
    try #require(String(decoding: ready, as: UTF8.self).hasPrefix("open"))
    try between()
    input.fileHandleForWriting.write(Data("go\n".utf8))
    let deadline = Date().addingTimeInterval(30)
    while process.isRunning && Date() < deadline { usleep(20_000) }
    try #require(!process.isRunning && process.terminationStatus == 0, "the editing process failed")
}

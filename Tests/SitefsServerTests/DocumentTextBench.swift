import Foundation
import Testing
@testable import SitefsServerCore

/// Not a test: the extraction case of scripts/bench (`extract`) runs this, naming in
/// SITEFS_EXTRACT_BENCH a JSON request `{"files": [{"path", "name"}], "runs", "output"}`; for
/// each file it times `DocumentText.extract` with the default limits `runs` times (after one
/// untimed run, so the first figure is not the page cache's) and writes
/// `{"files": [{"name", "seconds": [...], "outcome", "text_bytes"}]}` to `output`. Skipped
/// without the variable, so the suite never runs it.
@Test(.enabled(if: ProcessInfo.processInfo.environment["SITEFS_EXTRACT_BENCH"] != nil))
func documentTextBench() async throws {
    struct Request: Decodable {
        struct File: Decodable {
            var path: String
            var name: String
        }

        var files: [File]
        var runs: Int
        var output: String
    }
    struct Figures: Encodable {
        var name: String
        var seconds: [Double]
        var outcome: String
        var text_bytes: Int
    }
    let requestPath = try #require(ProcessInfo.processInfo.environment["SITEFS_EXTRACT_BENCH"])
    let request = try JSONDecoder().decode(Request.self, from: Data(contentsOf: URL(fileURLWithPath: requestPath)))
    try #require((1...100).contains(request.runs), "runs: 1 to 100")
    var results: [Figures] = []
    for file in request.files {
        var extracted = await DocumentText.extract(fileAt: file.path, name: file.name)
        var seconds: [Double] = []
        for _ in 0..<request.runs {
            let started = ContinuousClock.now
            extracted = await DocumentText.extract(fileAt: file.path, name: file.name)
            let took = ContinuousClock.now - started
            seconds.append(Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18)
        }
        results.append(Figures(name: file.name, seconds: seconds, outcome: "\(extracted.outcome)",
                               text_bytes: extracted.text.utf8.count))
    }
    try JSONEncoder().encode(["files": results]).write(to: URL(fileURLWithPath: request.output))
}

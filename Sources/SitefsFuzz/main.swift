// libFuzzer driver for the parsers of untrusted bytes. Built by scripts/fuzz with
// `-sanitize=fuzzer,address`, which links libFuzzer in; a plain build compiles it (so it
// cannot rot) but it only says how to run it. `SITEFS_FUZZ_TARGET` picks the parser:
//   json-page      a listing page (JSONReader, ItemPage) and its validation
//   json-changes   a change-feed page
//   rfc3339        timestamps
//   headers        the HTTP response header parser
//   item-name      name validation
//   multistatus    a WebDAV PROPFIND body (libxml2's push parser) and its hrefs
// A crash, trap, leak or hang found here is a bug: every input must be refused cleanly.
import Foundation

/// Chosen once: libFuzzer calls the entry point millions of times.
let target = ProcessInfo.processInfo.environment["SITEFS_FUZZ_TARGET"] ?? "json-page"

let testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt = { data, size in llvmFuzzerTestOneInput(data, size) }

/// libFuzzer's `int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *, size_t))`,
/// looked up at run time so that a build without libFuzzer still links.
typealias RunDriver = @convention(c) (
    UnsafeMutablePointer<CInt>, UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

guard FuzzTargets.names.contains(target) else {
    FileHandle.standardError.write(Data("unknown SITEFS_FUZZ_TARGET \(target); one of \(FuzzTargets.names)\n".utf8))
    exit(2)
}
guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "LLVMFuzzerRunDriver") else {
    FileHandle.standardError.write(Data("this build has no libFuzzer: run scripts/fuzz\n".utf8))
    exit(2)
}
var argc = CommandLine.argc
var argv = CommandLine.unsafeArgv
exit(unsafeBitCast(symbol, to: RunDriver.self)(&argc, &argv, testOneInput))

import CFuse
import Glibc

/// The argv handed to `fuse_session_new`, in C memory this object owns.
///
/// libfuse parses `argv` during `fuse_session_new` and copies what it keeps; `FUSEMount`
/// still keeps this object alive until the session is destroyed, which costs nothing and
/// means no one has to re-check that claim against each libfuse release.
final class SessionArguments {
    private let strings: [UnsafeMutablePointer<CChar>]
    private let vector: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>

    /// `arguments[0]` is the program name, which libfuse skips.
    init(_ arguments: [String]) {
        strings = arguments.map { strdup($0)! }
        vector = .allocate(capacity: strings.count + 1)
        for (index, string) in strings.enumerated() {
            (vector + index).initialize(to: string)
        }
        (vector + strings.count).initialize(to: nil)
    }

    deinit {
        vector.deallocate()
        strings.forEach { free($0) }
    }

    /// `fuse_opt_free_args` afterwards frees only what libfuse itself allocated while parsing.
    func withArguments<Result>(_ body: (inout fuse_args) -> Result) -> Result {
        var arguments = fuse_args(argc: Int32(strings.count), argv: vector, allocated: 0)
        defer { fuse_opt_free_args(&arguments) }
        return body(&arguments)
    }
}

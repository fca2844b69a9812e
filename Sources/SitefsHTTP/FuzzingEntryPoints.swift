/// Entry points for `scripts/fuzz` (Sources/SitefsFuzz) into this module's parsers of
/// untrusted bytes, so the fuzzer needs no testable import (which release builds refuse).
public enum HTTPFuzzing {
    /// Feeds `bytes`, split at line feeds, to the response header parser.
    public static func parseResponseHeaders(_ bytes: [UInt8]) {
        var parser = ResponseHeaderParser()
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            Array(line).withUnsafeBytes { parser.consume(line: $0) }
        }
    }
}

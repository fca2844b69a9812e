import SitefsCrypto

/// Decodes a hex literal used as an expected value in a test; a typo in a vector
/// should fail loudly rather than turn into an empty array.
func hex(_ string: String) -> [UInt8] {
    guard let bytes = Hex.decode(string) else { fatalError("bad hex in test vector: \(string)") }
    return bytes
}

/// The bytes of an ASCII/UTF-8 string literal.
func bytes(_ string: String) -> [UInt8] { Array(string.utf8) }

// Comparison of secrets (MACs, password hashes, tokens) without a timing side channel.

/// Comparisons whose running time does not depend on where the inputs differ.
public enum ConstantTime: Sendable {
    /// Whether `a` and `b` are equal.
    ///
    /// An ordinary `==` stops at the first differing byte, so its timing reveals how long a
    /// guessed prefix is correct, which lets an attacker forge a MAC byte by byte. This
    /// version always visits every byte and folds the differences together with OR. Only
    /// the lengths may cause an early return: they are public (digests have fixed sizes).
    public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in
                for i in 0..<a.count {
                    difference |= a[i] ^ b[i]
                }
            }
        }
        return difference == 0
    }
}

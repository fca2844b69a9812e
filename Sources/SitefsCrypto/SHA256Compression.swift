// The SHA-256 compression function (FIPS 180-4 §6.2.2), kept apart from the public
// hashing API because PBKDF2 drives it directly with pre-built message words.

extension SHA256 {
    /// The eight 32-bit working hash words H0…H7.
    ///
    /// Stored as separate properties rather than an array so that a state is a plain
    /// value the optimiser can keep in registers: no heap allocation, no bounds checks.
    struct State: Sendable, Equatable {
        var h0, h1, h2, h3, h4, h5, h6, h7: UInt32

        /// H(0): the first 32 bits of the fractional parts of the square roots of the
        /// first eight primes (FIPS 180-4 §5.3.3).
        static let initial = State(
            h0: 0x6a09_e667, h1: 0xbb67_ae85, h2: 0x3c6e_f372, h3: 0xa54f_f53a,
            h4: 0x510e_527f, h5: 0x9b05_688c, h6: 0x1f83_d9ab, h7: 0x5be0_cd19
        )

        /// Writes the state as eight words into `words[0..<8]`, which is how a digest is
        /// fed back in as the start of the next message block (PBKDF2 and HMAC's outer hash).
        @inline(__always)
        func store(into words: UnsafeMutablePointer<UInt32>) {
            words[0] = h0; words[1] = h1; words[2] = h2; words[3] = h3
            words[4] = h4; words[5] = h5; words[6] = h6; words[7] = h7
        }

        /// XORs another state into this one word by word (PBKDF2's running T = U1 ^ U2 ^ …).
        @inline(__always)
        mutating func formXor(_ other: State) {
            h0 ^= other.h0; h1 ^= other.h1; h2 ^= other.h2; h3 ^= other.h3
            h4 ^= other.h4; h5 ^= other.h5; h6 ^= other.h6; h7 ^= other.h7
        }

        /// The state serialised big-endian: this is the 32-byte digest (FIPS 180-4 §6.2.2 step 4).
        var bytes: [UInt8] {
            var out = [UInt8]()
            out.reserveCapacity(SHA256.digestByteCount)
            for word in [h0, h1, h2, h3, h4, h5, h6, h7] {
                out.append(UInt8(truncatingIfNeeded: word >> 24))
                out.append(UInt8(truncatingIfNeeded: word >> 16))
                out.append(UInt8(truncatingIfNeeded: word >> 8))
                out.append(UInt8(truncatingIfNeeded: word))
            }
            return out
        }

        /// Reads a state from a 32-byte big-endian digest.
        init(digest: [UInt8]) {
            precondition(digest.count == SHA256.digestByteCount)
            func word(_ i: Int) -> UInt32 {
                UInt32(digest[4 * i]) << 24 | UInt32(digest[4 * i + 1]) << 16
                    | UInt32(digest[4 * i + 2]) << 8 | UInt32(digest[4 * i + 3])
            }
            self.init(
                h0: word(0), h1: word(1), h2: word(2), h3: word(3),
                h4: word(4), h5: word(5), h6: word(6), h7: word(7)
            )
        }

        init(h0: UInt32, h1: UInt32, h2: UInt32, h3: UInt32, h4: UInt32, h5: UInt32, h6: UInt32, h7: UInt32) {
            self.h0 = h0; self.h1 = h1; self.h2 = h2; self.h3 = h3
            self.h4 = h4; self.h5 = h5; self.h6 = h6; self.h7 = h7
        }
    }

    /// K: the first 32 bits of the fractional parts of the cube roots of the first 64
    /// primes (FIPS 180-4 §4.2.2).
    static let roundConstants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5,
        0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3,
        0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc,
        0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7,
        0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13,
        0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3,
        0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5,
        0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208,
        0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    /// Calls `body` with the round constants and a 64-word message-schedule scratch area.
    ///
    /// Callers hashing many blocks enter this once and reuse both pointers for every block,
    /// so the hot loop never allocates and never re-checks the constants' lazy initialiser.
    /// The scratch area is a stack allocation.
    @inline(__always)
    static func withCompressionContext<R>(
        _ body: (_ k: UnsafePointer<UInt32>, _ w: UnsafeMutablePointer<UInt32>) throws -> R
    ) rethrows -> R {
        try roundConstants.withUnsafeBufferPointer { k in
            try withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
                try body(k.baseAddress!, w.baseAddress!)
            }
        }
    }

    /// Compresses `blockCount` consecutive 64-byte blocks starting at `blocks` into `state`.
    static func compress(_ state: inout State, blocks: UnsafeRawPointer, blockCount: Int) {
        guard blockCount > 0 else { return }
        withCompressionContext { k, w in
            for block in 0..<blockCount {
                let base = blocks + block * SHA256.blockByteCount
                for t in 0..<16 {
                    // Message words are big-endian (FIPS 180-4 §3.1); input need not be aligned.
                    w[t] = UInt32(bigEndian: base.loadUnaligned(fromByteOffset: 4 * t, as: UInt32.self))
                }
                compress(&state, schedule: w, constants: k)
            }
        }
    }

    /// Runs one compression with the message words already in `w[0..<16]`.
    ///
    /// Expands the schedule into `w[16..<64]` (leaving `w[0..<16]` untouched, so a caller
    /// may keep constant padding words there between calls) and applies the 64 rounds.
    @inline(__always)
    static func compress(_ state: inout State, schedule w: UnsafeMutablePointer<UInt32>, constants k: UnsafePointer<UInt32>) {
        // Message schedule, FIPS 180-4 §6.2.2 step 1.
        for t in 16..<64 {
            let w15 = w[t - 15], w2 = w[t - 2]
            let s0 = w15.rotatedRight(7) ^ w15.rotatedRight(18) ^ (w15 >> 3)
            let s1 = w2.rotatedRight(17) ^ w2.rotatedRight(19) ^ (w2 >> 10)
            w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
        }

        var a = state.h0, b = state.h1, c = state.h2, d = state.h3
        var e = state.h4, f = state.h5, g = state.h6, h = state.h7

        // 64 rounds, unrolled by eight. Instead of shuffling a…h after every round, each
        // round is called with the variables renamed, so after eight rounds the names are
        // back where they started (the classic rotation trick).
        var t = 0
        while t < 64 {
            round(a, b, c, &d, e, f, g, &h, k[t] &+ w[t])
            round(h, a, b, &c, d, e, f, &g, k[t + 1] &+ w[t + 1])
            round(g, h, a, &b, c, d, e, &f, k[t + 2] &+ w[t + 2])
            round(f, g, h, &a, b, c, d, &e, k[t + 3] &+ w[t + 3])
            round(e, f, g, &h, a, b, c, &d, k[t + 4] &+ w[t + 4])
            round(d, e, f, &g, h, a, b, &c, k[t + 5] &+ w[t + 5])
            round(c, d, e, &f, g, h, a, &b, k[t + 6] &+ w[t + 6])
            round(b, c, d, &e, f, g, h, &a, k[t + 7] &+ w[t + 7])
            t += 8
        }

        // Intermediate hash value, FIPS 180-4 §6.2.2 step 4.
        state.h0 &+= a; state.h1 &+= b; state.h2 &+= c; state.h3 &+= d
        state.h4 &+= e; state.h5 &+= f; state.h6 &+= g; state.h7 &+= h
    }

    /// One SHA-256 round (FIPS 180-4 §6.2.2 step 3) in renamed form: with the standard's
    /// T1 and T2, the new `e` is `d + T1` and the new `a` is `T1 + T2`; both are written
    /// into the slots that the caller's renaming treats as `e` and `a` next round.
    @inline(__always)
    private static func round(
        _ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: inout UInt32,
        _ e: UInt32, _ f: UInt32, _ g: UInt32, _ h: inout UInt32,
        _ kPlusW: UInt32
    ) {
        let bigSigma1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
        let choose = (e & f) ^ (~e & g)
        let t1 = h &+ bigSigma1 &+ choose &+ kPlusW
        let bigSigma0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
        let majority = (a & b) ^ (a & c) ^ (b & c)
        let t2 = bigSigma0 &+ majority
        d &+= t1
        h = t1 &+ t2
    }
}

extension UInt32 {
    /// ROTR^n (FIPS 180-4 §3.2); `n` is always a constant in 1…31 here.
    @inline(__always)
    fileprivate func rotatedRight(_ n: UInt32) -> UInt32 {
        (self >> n) | (self << (32 &- n))
    }
}

// Cryptographically secure random bytes from the kernel, for salts, session tokens and
// anything else an attacker must not predict.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Random bytes straight from the operating system's CSPRNG.
///
/// Deliberately never falls back to a user-space or non-cryptographic generator: if the
/// kernel cannot supply randomness the process stops rather than mint guessable secrets.
public enum SecureRandom: Sendable {
    /// `count` bytes from the kernel CSPRNG.
    public static func bytes(count: Int) -> [UInt8] {
        precondition(count >= 0, "negative byte count")
        guard count > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initializedCount in
            fill(UnsafeMutableRawBufferPointer(buffer))
            initializedCount = count
        }
    }

    /// Fills `buffer` completely, or terminates the process.
    private static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        #if os(Linux) || os(Android)
        if let getrandom = LinuxGetrandom.function, fillWithGetrandom(buffer, getrandom) { return }
        if fillFromDevice(buffer, path: "/dev/urandom") { return }
        fatalError("SecureRandom: neither getrandom(2) nor /dev/urandom produced random bytes")
        #elseif canImport(Darwin)
        // On Apple platforms arc4random_buf is the system CSPRNG (kernel-seeded, cannot
        // fail); it is also what Swift's SystemRandomNumberGenerator uses there.
        arc4random_buf(buffer.baseAddress!, buffer.count)
        #else
        if fillFromDevice(buffer, path: "/dev/urandom") { return }
        fatalError("SecureRandom: /dev/urandom produced no random bytes")
        #endif
    }

    #if os(Linux) || os(Android)
    /// Calls getrandom(2) until the buffer is full. Short reads (large requests, signals)
    /// simply continue; EINTR retries. Flags 0 means: block only until the kernel pool has
    /// been seeded once at boot, then never block. Returns false if the call is unusable
    /// (e.g. ENOSYS on a very old kernel or a seccomp filter), so the caller can fall back.
    private static func fillWithGetrandom(_ buffer: UnsafeMutableRawBufferPointer, _ getrandom: LinuxGetrandom.Function) -> Bool {
        var offset = 0
        while offset < buffer.count {
            let result = getrandom(buffer.baseAddress! + offset, buffer.count - offset, 0)
            if result > 0 {
                offset += result
            } else if result < 0 && errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }
    #endif

    /// Reads the buffer full from a random device, retrying short reads and EINTR.
    private static func fillFromDevice(_ buffer: UnsafeMutableRawBufferPointer, path: String) -> Bool {
        #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
        var fd: Int32
        repeat {
            fd = open(path, O_RDONLY | O_CLOEXEC)
        } while fd < 0 && errno == EINTR
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var offset = 0
        while offset < buffer.count {
            let result = read(fd, buffer.baseAddress! + offset, buffer.count - offset)
            if result > 0 {
                offset += result
            } else if result < 0 && errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
        #else
        return false
        #endif
    }
}

#if os(Linux) || os(Android)
/// glibc's `getrandom` wrapper, looked up at run time.
///
/// Swift's Glibc module does not include `<sys/random.h>`, so the function is not
/// visible to Swift at compile time (and `syscall(2)` is variadic, hence unimportable).
/// glibc has exported it since 2.25; resolving it through the dynamic linker keeps this
/// module free of a C shim target. If it is missing, callers fall back to /dev/urandom.
private enum LinuxGetrandom {
    typealias Function = @convention(c) (UnsafeMutableRawPointer?, Int, UInt32) -> Int

    static let function: Function? = {
        // A null handle is RTLD_DEFAULT: search the global symbol scope.
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "getrandom") else { return nil }
        return unsafeBitCast(symbol, to: Function.self)
    }()
}
#endif

import CLinux
import Foundation
import Glibc

/// Thin wrappers over the raw syscalls the tests drive the mount with, returning errno
/// instead of Foundation's wrapped errors so tests can assert the exact value.
enum Syscall {
    struct Failure: Error, Equatable, CustomStringConvertible {
        var errno: Int32
        var call: String
        var description: String { "\(call): \(String(cString: strerror(errno))) (\(errno))" }
    }

    static func check(_ result: Int32, _ call: String) throws(Failure) {
        if result < 0 { throw Failure(errno: errno, call: call) }
    }

    /// The umask, read from /proc (calling umask(2) to read it would change it for a moment
    /// under the other tests running in parallel).
    static func processUmask() -> UInt32 {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("Umask:") }
        return line.flatMap { UInt32($0.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8) } ?? 0o022
    }

    static func readDirectoryNames(_ path: String) throws(Failure) -> [String] {
        guard let directory = opendir(path) else { throw Failure(errno: errno, call: "opendir") }
        defer { closedir(directory) }
        var names: [String] = []
        while true {
            errno = 0
            guard let entry = readdir(directory) else {
                if errno != 0 { throw Failure(errno: errno, call: "readdir") }
                break
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            names.append(name)
        }
        return names
    }

    /// renameat2(2) with AT_FDCWD on both sides; RENAME_NOREPLACE = 1, RENAME_EXCHANGE = 2.
    static func renameat2(_ from: String, _ to: String, flags: UInt32) -> Int32 {
        CLinux.renameat2(AT_FDCWD, from, AT_FDCWD, to, flags)
    }

    static func setExtendedAttribute(_ path: String, _ name: String, _ value: [UInt8], flags: Int32 = 0) throws(Failure) {
        let result = value.withUnsafeBytes { setxattr(path, name, $0.baseAddress, $0.count, flags) }
        try check(result, "setxattr \(name)")
    }

    static func removeExtendedAttribute(_ path: String, _ name: String) throws(Failure) {
        try check(removexattr(path, name), "removexattr \(name)")
    }

    static func getExtendedAttribute(_ path: String, _ name: String, size: Int) -> (Int, [UInt8], Int32) {
        var buffer = [UInt8](repeating: 0, count: size)
        let result = buffer.withUnsafeMutableBytes {
            getxattr(path, name, size == 0 ? nil : $0.baseAddress, size)
        }
        let code = result < 0 ? errno : 0
        return (result, result > 0 ? Array(buffer.prefix(result)) : [], code)
    }

    static func listExtendedAttributes(_ path: String, size: Int) -> (Int, [UInt8], Int32) {
        var buffer = [UInt8](repeating: 0, count: size)
        let result = buffer.withUnsafeMutableBytes { raw in
            listxattr(path, size == 0 ? nil : raw.baseAddress?.assumingMemoryBound(to: CChar.self), size)
        }
        let code = result < 0 ? errno : 0
        return (result, result > 0 ? Array(buffer.prefix(result)) : [], code)
    }
}

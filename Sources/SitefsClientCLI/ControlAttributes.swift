import CLinux
import Foundation
import SitefsCommandLine

/// The extended attributes through which `sitefs search`, `versions`, `restore` and `info`
/// ask the daemon: reading one is a question (the daemon answers JSON or text), setting one
/// is a request the kernel first checks write permission for. Answers are at most 64 KiB
/// (the kernel's limit for a value), so one read with a buffer that size always suffices,
/// and a control is never read twice (a read may do work on the server).
enum ControlAttributes {
    static let largestValue = 1 << 16

    /// The value, or the errno of the failure.
    static func read(_ name: String, of path: String) -> Result<[UInt8], Errno> {
        var buffer = [UInt8](repeating: 0, count: largestValue)
        let count = getxattr(path, name, &buffer, buffer.count)
        guard count >= 0 else { return .failure(Errno(errno)) }
        return .success(Array(buffer[0..<count]))
    }

    /// Sets `name` on `path` to `value`; the errno of a failure.
    static func write(_ name: String, of path: String, _ value: [UInt8]) -> Errno? {
        setxattr(path, name, value, value.count, 0) == 0 ? nil : Errno(errno)
    }

    /// An errno as a value.
    struct Errno: Error, Equatable {
        let code: Int32
        init(_ code: Int32) { self.code = code }
        var message: String { String(cString: strerror(code)) }
    }

    /// What a failed read of a control means in general: the cases every command shares.
    /// `feature` names what an older daemon lacks ("search", "versions").
    static func explain(_ failure: Errno, path: String, feature: String) -> String {
        let shown = TerminalText.escaped(path)
        switch failure.code {
        case ENOTCONN: return "the sitefs daemon of the mount holding \(shown) is gone; run `sitefs unmount` on it"
        case ENODATA, ENOTSUP: return "\(shown) is not in a sitefs mount (or its daemon predates \(feature): unmount and mount again)"
        case ENOENT: return "\(shown): no such file or folder"
        case EACCES, EPERM: return "\(shown): permission denied"
        default: return "\(shown): \(failure.message)"
        }
    }

    /// Decodes a daemon's JSON answer.
    static func decode<Answer: Decodable>(_ type: Answer.Type, _ bytes: [UInt8]) throws -> Answer {
        do {
            return try JSONDecoder().decode(Answer.self, from: Data(bytes))
        } catch {
            throw UserFacingError("the daemon's answer is not understood: \(error)")
        }
    }

    /// `path` made absolute against the current folder, `.` and `..` resolved textually,
    /// without a trailing slash (the kernel is not asked: the path may not exist yet).
    static func absolute(_ path: String) -> String {
        let base = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var parts: [Substring] = []
        for part in base.split(separator: "/") {
            switch part {
            case ".": continue
            case "..": _ = parts.popLast()
            default: parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    /// The terminal's width when standard output is one; nil otherwise (a pipe: nothing is
    /// shortened).
    static func terminalWidth() -> Int? {
        guard isatty(STDOUT_FILENO) == 1 else { return nil }
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else {
            return ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init).flatMap { $0 > 0 ? $0 : nil }
        }
        return Int(size.ws_col)
    }
}

import Logging
import SitefsProvider
import SystemPackage

/// Provider errors -> the errno a program sees, with one log line saying why.
extension ProviderError {
    var errno: Errno {
        switch self {
        case .notAuthenticated, .forbidden: return .permissionDenied
        case .notFound: return .noSuchFileOrDirectory
        case .nameTaken: return .fileExists
        case .invalidName: return .invalidArgument
        case .crossSite: return .improperLink
        case .versionMismatch: return .ioError
        // In use by someone else, as a busy file is: the call may work once they are done.
        case .locked: return .resourceBusy
        case .refused(let status, let code, _):
            switch code {
            case "not_a_folder": return .notDirectory
            case "not_a_file", "not_replaceable": return .isDirectory
            case "invalid_move": return .invalidArgument
            case "read_only": return .permissionDenied
            case "too_large": return .fileTooLarge
            // A server that keeps no links (or modes): what a filesystem without them says.
            case "symlinks_unsupported", "modes_unsupported": return .notPermitted
            case "invalid_target": return .invalidArgument
            default: return status == 403 ? .permissionDenied : .ioError
            }
        case .unreachable, .serverUnavailable, .invalidResponse, .localIO: return .ioError
        case .cancelled: return .interrupted
        // Known offline and not tried: said plainly ("Network is unreachable"), at once.
        case .offline: return .networkUnreachable
        }
    }
}

extension Logger {
    /// Logs a failed operation once, with the hint a user needs (sign in again, server down).
    func failed(_ operation: @autoclosure () -> String, _ failure: ProviderError) {
        switch failure {
        case .notFound: debug("\(operation()): \(failure)")
        case .cancelled: info("\(operation()): \(failure)")
        case .offline: debug("\(operation()): \(failure)")  // said once when the mount went offline
        case .notAuthenticated: error("\(operation()): \(failure)")
        default: warning("\(operation()): \(failure)")
        }
    }
}

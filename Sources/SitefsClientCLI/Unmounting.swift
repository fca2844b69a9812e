import Foundation

/// Taking a mount down. Whether something is mounted is `SitefsFUSE.MountTable`'s to say.
enum Unmounting {
    /// `fusermount3 -u`, falling back to umount(2) when that is missing and we are root.
    static func unmount(_ path: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/fusermount3")
        process.arguments = ["-u", path]
        let errors = Pipe()
        process.standardError = errors
        do {
            try process.run()
            process.waitUntilExit()
            if process.terminationStatus == 0 { return }
        } catch {}
        if getuid() == 0, umount(path) == 0 { return }
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        throw UserFacingError("cannot unmount \(path): \(message.isEmpty ? String(cString: strerror(errno)) : message)")
    }
}

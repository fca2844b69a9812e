import ArgumentParser
import Foundation

/// Reads a password from standard input: on a terminal with echo off, asked twice; from a
/// pipe, the first line. Passwords never come from argv, where `ps` would show them.
public enum PasswordInput {
    public static func read(confirm: Bool = true) throws -> String {
        if isatty(STDIN_FILENO) == 1 {
            let first = try prompt("Password: ")
            if confirm {
                let second = try prompt("Repeat password: ")
                guard first == second else { throw ValidationError("the passwords differ") }
            }
            return try nonEmpty(first)
        }
        guard let line = Swift.readLine(strippingNewline: true) else {
            throw ValidationError("no password on standard input")
        }
        return try nonEmpty(line.hasSuffix("\r") ? String(line.dropLast()) : line)
    }

    private static func nonEmpty(_ password: String) throws -> String {
        guard !password.isEmpty else { throw ValidationError("the password is empty") }
        return password
    }

    private static func prompt(_ text: String) throws -> String {
        FileHandle.standardError.write(Data(text.utf8))
        var saved = termios()
        tcgetattr(STDIN_FILENO, &saved)
        var silent = saved
        silent.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &silent)
        defer {
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
            FileHandle.standardError.write(Data("\n".utf8))
        }
        guard let line = Swift.readLine(strippingNewline: true) else { throw ValidationError("no password given") }
        return line
    }
}

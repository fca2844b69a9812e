import Logging

/// A log handler that escapes what could forge or hide a log line before passing a message
/// on: control characters (newlines, carriage returns, escape sequences that drive a
/// terminal), DEL, C1 controls and Unicode's line and paragraph separators. Names, ids and
/// reasons in messages come from servers and clients nobody here controls: a file named
/// "a\nERROR ..." must stay one line that says what it is. Both executables
/// install it over their stream handler, so no call site has to remember.
public struct EscapingLogHandler: LogHandler {
    private var base: any LogHandler

    public init(_ base: any LogHandler) {
        self.base = base
    }

    public var logLevel: Logger.Level {
        get { base.logLevel }
        set { base.logLevel = newValue }
    }

    public var metadata: Logger.Metadata {
        get { base.metadata }
        set { base.metadata = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { base[metadataKey: key] }
        set { base[metadataKey: key] = newValue }
    }

    public func log(event: LogEvent) {
        var escaped = event
        escaped.message = "\(TerminalText.escaped(event.message.description))"
        base.log(event: escaped)
    }
}

/// Text bound for a log or a terminal, with what could drive the terminal or start a new
/// line escaped (`\n`, `\u{1B}`, ...). Printable text, including non-ASCII letters, is kept.
public enum TerminalText {
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where needsEscape(scalar): result += "\\u{\(String(scalar.value, radix: 16))}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
    }
}

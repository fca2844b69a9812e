/// Hosts only this machine reaches: `localhost`, 127.0.0.0/8 and `::1` (with or without the
/// brackets of a URL). Plain HTTP is for these only: the client refuses it for any other
/// host without a flag, and the server warns when it serves it elsewhere.
public enum LoopbackHost {
    public static func contains(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare.lowercased() == "localhost" || bare == "::1" { return true }
        let parts = bare.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { UInt8($0) != nil } && parts[0] == "127"
    }
}

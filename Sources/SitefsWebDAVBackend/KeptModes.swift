import Synchronization

/// Modes set on a mount whose server keeps no dead properties (nginx; WsgiDAV without a
/// property manager): kept here, in memory, for as long as the backend lives, keyed by the
/// item's path on the server (its components below the mount URL). A rename or move done
/// through this backend carries the item's mode and its descendants' along; a delete drops
/// them. Changes made by other clients are not seen: a file replaced behind the mount's back
/// keeps the mode its path had. A leaf lock: held only to read or change the table.
final class KeptModes: Sendable {
    private let table = Mutex<[[String]: UInt16]>([:])

    func mode(at path: [String]) -> UInt16? {
        table.withLock { $0[path] }
    }

    func set(_ mode: UInt16, at path: [String]) {
        table.withLock { $0[path] = mode }
    }

    /// Moves the modes at `source` and below it to `target` (what was kept at `target` and
    /// below is replaced, as the server's MOVE replaced it).
    func move(from source: [String], to target: [String]) {
        guard source != target else { return }
        table.withLock { table in
            guard !table.isEmpty else { return }
            for key in table.keys where Self.isAtOrBelow(key, target) { table[key] = nil }
            for (key, mode) in table where Self.isAtOrBelow(key, source) {
                table[key] = nil
                table[target + key.dropFirst(source.count)] = mode
            }
        }
    }

    /// Forgets the modes at `path` and below it.
    func remove(at path: [String]) {
        table.withLock { table in
            for key in table.keys where Self.isAtOrBelow(key, path) { table[key] = nil }
        }
    }

    private static func isAtOrBelow(_ key: [String], _ path: [String]) -> Bool {
        key.count >= path.count && zip(key, path).allSatisfy { Array($0.utf8) == Array($1.utf8) }
    }
}

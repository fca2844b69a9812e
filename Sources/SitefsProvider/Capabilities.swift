import SitefsAPI

/// What the user may do with an item, in one byte: a `Set<Capability>` per item would cost a
/// heap allocation each, which shows at 100,000 known items.
public struct Capabilities: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let read = Capabilities(rawValue: 1 << 0)
    public static let write = Capabilities(rawValue: 1 << 1)
    public static let rename = Capabilities(rawValue: 1 << 2)
    public static let delete = Capabilities(rawValue: 1 << 3)
    public static let addChildren = Capabilities(rawValue: 1 << 4)

    private static let all: [(Capability, Capabilities)] = [
        (.read, .read), (.write, .write), (.rename, .rename), (.delete, .delete), (.addChildren, .addChildren)]

    /// From the API's list.
    public init(_ list: some Sequence<Capability>) {
        self = []
        for capability in list {
            if let flag = Self.all.first(where: { $0.0 == capability })?.1 { insert(flag) }
        }
    }

    /// As the API lists them.
    public var list: [Capability] { Self.all.filter { contains($0.1) }.map(\.0) }
}

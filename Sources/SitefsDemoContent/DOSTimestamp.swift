/// The MS-DOS date and time pair that every ZIP header carries.
///
/// Demo archives use one fixed timestamp so that generating them twice yields
/// identical bytes (stable ETags and checksums on the demo server).
public struct DOSTimestamp: Sendable, Equatable {
    /// Hours, minutes and seconds/2, packed as `hhhhhmmmmmmsssss`.
    public let time: UInt16
    /// Years since 1980, month and day, packed as `yyyyyyymmmmddddd`.
    public let date: UInt16

    /// Packs a calendar date and time; DOS stores seconds with 2-second resolution and
    /// can only represent the years 1980 through 2107.
    public init(year: Int, month: Int, day: Int, hour: Int = 0, minute: Int = 0, second: Int = 0) {
        precondition((1980...2107).contains(year), "DOS dates cover 1980...2107")
        precondition((1...12).contains(month) && (1...31).contains(day), "invalid date")
        precondition((0...23).contains(hour) && (0...59).contains(minute) && (0...59).contains(second),
                     "invalid time")
        date = UInt16((year - 1980) << 9 | month << 5 | day)
        time = UInt16(hour << 11 | minute << 5 | second / 2)
    }

    /// The timestamp demo documents carry: 2024-05-06 07:00, a Monday morning on site.
    public static let demo = DOSTimestamp(year: 2024, month: 5, day: 6, hour: 7)
}

/// The file managers whose folder listings get the server's thumbnails filed first (see
/// `SitefsFilesystem.fileServerThumbnails`): Files (Nautilus), Nemo, Dolphin, Caja,
/// Thunar, PCManFM and elementary Files.
public enum FileManagers {
    public static let programs: Set<String> = [
        "nautilus", "nemo", "dolphin", "caja", "thunar", "pcmanfm", "pcmanfm-qt", "io.elementary.files",
    ]

    public static func standard() -> ProcessMatcher { ProcessMatcher(programs: programs) }
}

/// Where and for whom the server's thumbnails are filed; nil in `FilesystemConfiguration`:
/// never.
public struct ThumbnailSettings: Sendable {
    /// The user's freedesktop thumbnail cache.
    public var cache: ThumbnailCache
    /// The mount point: the files' URIs start with it.
    public var mountpoint: String
    /// Whose listings trigger it.
    public var fileManagers: ProcessMatcher
    /// The size filed: Files (Nautilus 43) asks for "large" at every zoom level.
    public var size: ThumbnailCache.Size
    /// How long one listing request may wait for thumbnails before it is answered anyway
    /// (the rest are filed at the next listing).
    public var budget: Duration

    public init(cache: ThumbnailCache, mountpoint: String, fileManagers: ProcessMatcher = FileManagers.standard(),
                size: ThumbnailCache.Size = .large, budget: Duration = .seconds(3)) {
        self.cache = cache
        self.mountpoint = mountpoint
        self.fileManagers = fileManagers
        self.size = size
        self.budget = budget
    }
}

import Dispatch
import SitefsProvider
import Synchronization

extension SitefsFilesystem {
    /// Types the server may have a picture of; others are not asked about.
    static let thumbnailTypes: Set<String> = [
        "jpg", "jpeg", "png", "gif", "webp", "tif", "tiff", "bmp", "heic", "heif", "avif",
        "pdf", "odt", "ods", "odp", "odg", "docx", "xlsx", "pptx",
    ]
    /// Thumbnails fetched at once for one listing.
    static let thumbnailParallelism = 4
    /// Versions the server has no picture of, remembered so a folder opened again asks
    /// nothing; emptied when full.
    static let picturelessLimit = 100_000

    /// When a file manager lists a folder, the server's pictures of the online-only files
    /// in what it was just given are filed in the freedesktop thumbnail cache before the
    /// listing is answered: the file manager then finds them there, as if it had made them,
    /// instead of running a thumbnailer (which would be refused the content, see
    /// `BackgroundReaders`). Local files are left to the thumbnailer (their content is here).
    /// Bounded: `ThumbnailSettings.budget` per listing request, `thumbnailParallelism` at
    /// once; offline, nothing is asked.
    func fileServerThumbnails(_ listed: [ItemIdentifier], in folder: ItemIdentifier?, context: RequestContext) {
        guard let settings = configuration.thumbnails, !listed.isEmpty, let folder, !isOffline,
              settings.fileManagers.matchingProgram(pid: context.pid) != nil else { return }
        let folderPath = settings.mountpoint + "/" + displayPath(of: folder)
        var wanted: [(item: ProviderItem, uri: String, mtime: Int64)] = []
        for identifier in listed {
            guard let item = cache.item(identifier), item.kind == .file, !identifier.isLocal,
                  let type = item.name.split(separator: ".").last.map({ $0.lowercased() }), item.name.contains("."),
                  Self.thumbnailTypes.contains(type), syncState(of: item) == Self.defaultState,
                  !picturelessVersions.withLock({ $0.contains(item.version) }) else { continue }
            let uri = ThumbnailCache.uri(ofPath: folderPath + "/" + item.name)
            let mtime = AttributeMapping.timespec(item.modified).seconds
            if !settings.cache.hasCurrent(uri, mtime: mtime, size: settings.size) { wanted.append((item, uri, mtime)) }
        }
        guard !wanted.isEmpty else { return }
        let work = wanted
        let deadline = ContinuousClock.now + settings.budget
        let next = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: min(Self.thumbnailParallelism, wanted.count)) { _ in
            while ContinuousClock.now < deadline {
                let index = next.add(1, ordering: .relaxed).oldValue
                guard index < work.count else { return }
                fileServerThumbnail(work[index].item, uri: work[index].uri, mtime: work[index].mtime, settings: settings)
            }
        }
    }

    private func fileServerThumbnail(_ item: ProviderItem, uri: String, mtime: Int64, settings: ThumbnailSettings) {
        let picture: [UInt8]?
        do {
            picture = try backend.thumbnail(of: item.identifier, version: item.version, size: settings.size.rawValue)
        } catch {
            logger.debug("thumbnail of \(item.name): \(error)")
            return
        }
        guard let picture else {
            picturelessVersions.withLock { versions in
                if versions.count >= Self.picturelessLimit { versions.removeAll(keepingCapacity: true) }
                versions.insert(item.version)
            }
            return
        }
        do {
            try settings.cache.store(picture, uri: uri, mtime: mtime, size: settings.size)
        } catch {
            logger.warning("thumbnail of \(item.name) cannot be filed in \(settings.cache.root): \(error)")
        }
    }

    /// A file now on this device: the failure records thumbnailers left when they were
    /// refused its content go, so the file manager's thumbnailer makes its picture from the
    /// local copy (a record would stop it for as long as the modification time stays).
    func forgetFailedThumbnails(of identifier: ItemIdentifier) {
        guard let settings = configuration.thumbnails else { return }
        settings.cache.forgetFailures(of: ThumbnailCache.uri(ofPath: settings.mountpoint + "/" + displayPath(of: identifier)))
    }
}

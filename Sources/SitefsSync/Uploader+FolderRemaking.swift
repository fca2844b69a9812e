import Foundation
import SitefsAPI
import SitefsProvider
import SitefsStore

/// Deleted there, added or edited here: the edit wins. A save (or a mkdir made offline)
/// whose folder is gone on the server when it goes makes the folder again, by the names the
/// mount showed (`FolderChain`), below the deepest folder of the chain the server still has,
/// and goes into it, as the File Provider model and the desktop sync clients resolve it.
/// What even that cannot place is rescued: created under a name that says so in the deepest
/// folder still there, never left only in staging.
extension Uploader {
    /// What `remakeFolders` found or made.
    struct RemadeFolders: Sendable {
        /// Where the item goes now: the chain's folder on the server.
        var folder: ItemIdentifier
        /// The folders made again, outermost first (empty when someone had made them meanwhile).
        var made: [ProviderItem]
        /// The deepest folder of the chain the server still had: the made ones are below it.
        var anchor: ItemIdentifier
        /// Where the folder is on the server now, as the mount shows it.
        var path: String
    }

    /// Makes `chain`'s folder exist on the server again: the deepest folder of the chain the
    /// server still has (by identifier; the site at worst) is kept, and below it each name is
    /// joined where a folder of that name exists (made meanwhile by someone, or by another
    /// save of this mount) or made. A name taken there by a file gets a conflict name. Every
    /// request is retried like an upload's, until it works, fails for good or `giveUp`.
    func remakeFolders(_ chain: FolderChain, for what: String, giveUp: () -> Bool) -> Result<RemadeFolders, ProviderError> {
        let kept: Int
        switch deepestFolderOnServer(of: chain, giveUp: giveUp) {
        case .success(let index): kept = index
        case .failure(let error): return .failure(error)
        }
        let anchor = serverIdentifier(of: chain.links[kept].identifier) ?? chain.links[kept].identifier
        var folder = anchor
        var names = chain.links[...kept].map(\.name)
        var made: [ProviderItem] = []
        for link in chain.links[(kept + 1)...] {
            var name = link.name
            for attempt in 0..<3 {
                // A folder of that name there already (another save of this mount made it a
                // moment ago, or someone did) is the one: joined, not made twice.
                switch serverChild(named: name, in: folder, giveUp: giveUp) {
                case .failure(let error): return .failure(error)
                case .success(let existing?) where existing.kind != .file:
                    folder = existing.identifier
                case .success(_?) where attempt < 2:
                    name = ConflictName.make(for: link.name, user: userName, at: Date())
                    continue
                case .success:
                    switch retrying("mkdir \(name) for \(what)", giveUp: giveUp, { () throws(ProviderError) -> ProviderItem in
                        try backend.createFolder(named: name, in: folder)
                    }) {
                    case .success(let created):
                        folder = created.identifier
                        made.append(created)
                    case .failure(.nameTaken) where attempt < 2:
                        continue  // made meanwhile: the next round joins it (or names around a file)
                    case .failure(let error):
                        return .failure(error)
                    }
                }
                break
            }
            names.append(name)
        }
        let remade = RemadeFolders(folder: folder, made: made, anchor: anchor, path: names.joined(separator: "/"))
        if !made.isEmpty {
            logger.warning("\(chain.path) was deleted on the server while \(what) was saved into it here; made again as \(remade.path)")
            condition.lock()
            records.add(Status.Remade(path: remade.path, reason: "deleted on the server while \(what) was saved into it here"))
            condition.unlock()
            onFoldersRemade?(FoldersRemade(folders: made, anchor: remade.anchor, path: remade.path, file: what))
        }
        return .success(remade)
    }

    /// What `folder` holds under `name` on the server, nil when nothing (one listing,
    /// transient failures retried, bounded like every listing).
    func serverChild(named name: String, in folder: ItemIdentifier, giveUp: () -> Bool) -> Result<ProviderItem?, ProviderError> {
        var token: PageToken?
        for _ in 0..<Self.maximumListingPages {
            let page: Page
            switch retrying("list for \(name)", giveUp: giveUp, { () throws(ProviderError) -> Page in
                try backend.children(of: folder, after: token, limit: 500)
            }) {
            case .success(let listed): page = listed
            case .failure(let error): return .failure(error)
            }
            if let item = page.items.first(where: { ItemName.same($0.name, name) }) { return .success(item) }
            guard let next = page.next else { return .success(nil) }
            token = next
        }
        return .failure(.invalidResponse("more than \(Self.maximumListingPages) pages in one folder"))
    }

    /// Pages read at most when looking for one name (500 items each).
    static let maximumListingPages = 2_000

    /// The index of the deepest folder of `chain` that the server has (0, the site, when no
    /// other): asked by identifier, so a folder renamed there is still found where the
    /// server keeps identities. A folder made here whose mkdir has not reached the server is
    /// passed over.
    func deepestFolderOnServer(of chain: FolderChain, giveUp: () -> Bool) -> Result<Int, ProviderError> {
        for index in stride(from: chain.links.count - 1, to: 0, by: -1) {
            guard let identifier = serverIdentifier(of: chain.links[index].identifier) else { continue }
            switch retrying("look up \(chain.links[index].name)", giveUp: giveUp, { () throws(ProviderError) -> ProviderItem in
                try backend.item(identifier)
            }) {
            case .success(let item) where item.kind != .file:
                return .success(index)
            case .success, .failure(.notFound):
                continue
            case .failure(let error):
                return .failure(error)
            }
        }
        return .success(0)
    }

    /// A folder's identifier on the server: itself, what a folder made here became, or nil
    /// while (or if never) it is made there.
    private func serverIdentifier(of folder: ItemIdentifier) -> ItemIdentifier? {
        condition.lock()
        defer { condition.unlock() }
        if case .ready(let resolved) = resolveFolderLocked(folder) { return resolved }
        return nil
    }

    /// `chain` when it describes where `parent` is (it ends in that folder, or in the folder
    /// made here that became it), else nil: a chain recorded before a move is not followed.
    func chain(_ chain: FolderChain?, leadsTo parent: ItemIdentifier?) -> FolderChain? {
        guard let chain, let parent else { return nil }
        return chain.folder == parent || serverIdentifier(of: chain.folder) == parent ? chain : nil
    }

    // MARK: Rescue

    /// A save the server refused for good (not a conflict, not a deletion: those are resolved
    /// before this) is not left in staging: it is created as `NAME (rescued DATE USER).EXT` in
    /// the deepest folder of its chain the server still has, the site at worst, and `sitefs
    /// status` says where. When the server takes it nowhere, it is copied into this
    /// computer's rescue folder (`rescueDirectory`), and stays failed for `sitefs retry`.
    func rescue(_ job: Job, refusedWith error: ProviderError) -> Outcome {
        let giveUp = { self.supersededOrStopping(job) }
        let reason = error.description
        let name = ConflictName.make(for: job.name, user: userName, at: Date(), kind: "rescued")
        var folder = ItemIdentifier.site(job.identifier.site)
        var path = job.identifier.site
        if let chain = job.folders {
            if case .success(let index) = deepestFolderOnServer(of: chain, giveUp: giveUp) {
                folder = serverIdentifier(of: chain.links[index].identifier) ?? folder
                path = chain.prefix(through: index).path
            } else {
                path = chain.links[0].name
            }
        }
        switch retrying(job, { () throws(ProviderError) -> ProviderItem in
            try backend.createFile(named: name, in: folder, contentsOf: job.stagedPath)
        }) {
        case .success(let copy):
            let savedAs = path + "/" + copy.name
            logger.error("\(job.name) could not be saved (\(reason)); your edit was saved as \(savedAs)")
            return .rescued(job, copy: copy, savedAs: savedAs, reason: reason)
        case .failure(let rescueError):
            logger.error("\(job.name) could not be saved (\(reason)), nor as \(name) in \(path) (\(rescueError))")
            if let kept = keepOnThisComputer(job, as: name) {
                logger.error("\(job.name): your edit is kept on this computer as \(kept)")
                condition.lock()
                records.keptOnThisComputer[job.stagedPath] = kept
                condition.unlock()
            }
            return .failed(job, error)
        }
    }

    /// Copies the job's snapshot into the rescue folder (private to the user), named `name`
    /// (with a number before it when that is taken: an earlier rescue is never replaced); nil
    /// when there is none or the copy fails.
    private func keepOnThisComputer(_ job: Job, as name: String) -> String? {
        guard let directory = rescueDirectory else { return nil }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            guard let target = (1...1_000).lazy.map({ directory + "/" + ($0 == 1 ? name : "\($0) " + name) })
                .first(where: { !FileManager.default.fileExists(atPath: $0) }) else { return nil }
            try FileManager.default.copyItem(atPath: job.stagedPath, toPath: target)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: target)
            return target
        } catch {
            logger.error("cannot keep \(job.name) in \(directory): \(error)")
            return nil
        }
    }

    /// True for a verdict no retry changes and no rule above resolves: the content is rescued.
    func calls(forRescue error: ProviderError, of job: Job) -> Bool {
        switch error {
        case .notAuthenticated, .cancelled, .unreachable, .offline, .serverUnavailable, .localIO: return false
        default: return !isCancelled(job) && !supersededOrStopping(job)
        }
    }
}

/// Folders made again on the server because a save went into them after they were deleted
/// there (see `Uploader.remakeFolders`), as the engine tells the core.
public struct FoldersRemade: Sendable {
    /// Outermost first.
    public var folders: [ProviderItem]
    /// The folder they were made in, which the server kept.
    public var anchor: ItemIdentifier
    /// The deepest one's place, "Site/Folder/Sub".
    public var path: String
    /// The file whose save made them.
    public var file: String
}

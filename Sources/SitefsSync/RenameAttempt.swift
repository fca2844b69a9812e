import Foundation
import SitefsAPI
import SitefsProvider
import SitefsStore

extension Uploader {
    /// Applies one deferred rename on the server, retrying transient failures like uploads.
    /// The name may have been taken on the server meanwhile: the file then moves under a
    /// conflict name rather than over the other one. An item deleted on the server, or a
    /// verdict that cannot be resolved, drops the rename (the server keeps the item where it
    /// was; nothing of its content is at stake).
    func attemptRename(_ rename: RenameJob) -> RenameOutcome {
        var name = rename.name
        var outcome: RenameOutcome = .dropped(rename, .nameTaken(name))
        for attempt in 0..<2 {
            let changes = ItemChanges(name: ItemName.same(name, rename.serverName) ? nil : name,
                                      parent: rename.parent == rename.serverParent ? nil : rename.parent)
            let result = retrying("rename of \(rename.serverName) to \(name)", giveUp: { isStopping() }) {
                () throws(ProviderError) -> ProviderItem in
                try backend.update(rename.identifier, changes, baseVersion: nil)
            }
            switch result {
            case .success(let item):
                logger.info("renamed \(rename.serverName) to \(item.name)")
                outcome = .renamed(rename, item)
            case .failure(.nameTaken) where attempt == 0:
                name = ConflictName.make(for: rename.name, user: userName, at: Date())
                logger.warning("\(rename.name) exists on the server already; \(rename.serverName) is renamed to \(name) instead")
                continue
            case .failure(let error):
                logger.error("rename of \(rename.serverName) to \(name) not applied: \(error)")
                outcome = .dropped(rename, error)
            }
            break
        }
        condition.lock()
        finishRename(outcome)
        condition.unlock()
        return outcome
    }
}

import CFuse
import Glibc
import SitefsCore
import SystemPackage

/// Symbolic links: `symlink` makes one, `readlink` reads its target. The target is bytes
/// as the caller gave them (copied before the reply, like every pointer argument); the
/// kernel resolves links itself, so a link is never opened through the filesystem.
enum LinkHandlers {
    static func make(_ request: fuse_req_t, _ target: UnsafePointer<CChar>?, _ parent: fuse_ino_t,
                     _ name: UnsafePointer<CChar>?) {
        let reply = Reply(request)
        let targetBytes = RequestArguments.bytes(target)
        let name = RequestArguments.fileName(name)
        let context = RequestArguments.context(request)
        let operations = SessionState.of(request).operations
        let result = Result { () throws(Errno) in
            try operations.makeSymlink(parent: parent, name: name, target: targetBytes, context: context)
        }
        reply.entry(result, operations: operations)
    }

    static func read(_ request: fuse_req_t, _ inode: fuse_ino_t) {
        let reply = Reply(request)
        let context = RequestArguments.interruptibleContext(request)
        let operations = SessionState.of(request).operations
        let result = Result { () throws(Errno) in try operations.readLink(inode, context: context) }
        switch result {
        case .success(let target):
            reply.link(target)
        case .failure(let error):
            reply.error(error)
        }
    }
}

import CFuse
import SitefsCore
import SystemPackage

/// statfs: whole-filesystem numbers for df and statvfs(3).
enum FilesystemHandlers {
    static func statistics(_ request: fuse_req_t, _ inode: fuse_ino_t) {
        let reply = Reply(request)
        let operations = SessionState.of(request).operations
        let result = Result { () throws(Errno) in
            try operations.statistics(inode)
        }
        switch result {
        case .success(let statistics): reply.statistics(statistics)
        case .failure(let error): reply.error(error)
        }
    }
}

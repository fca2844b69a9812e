import CFuse
import Glibc
import SitefsCore
import SystemPackage

/// opendir, readdir(plus), releasedir, fsyncdir and the requests that change a directory's
/// names.
enum DirectoryHandlers {
    static func open(_ request: fuse_req_t, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
        let reply = Reply(request)
        let flags = RequestArguments.openFlags(info)
        let context = RequestArguments.context(request)
        let operations = SessionState.of(request).operations
        let result = Result { () throws(Errno) in
            try operations.openDirectory(inode, flags: flags, context: context)
        }
        switch result {
        case .success(let handle):
            // No releasedir follows an open the kernel never saw.
            if !reply.opened(OpenReply(handle: handle), flags: flags) {
                operations.releaseDirectory(inode, handle: handle)
            }
        case .failure(let error):
            reply.error(error)
        }
    }

    /// One readdir or readdirplus request: at most `size` bytes of entries from `offset` on.
    ///
    /// If the core throws after entries were placed, those entries are sent (with plus they
    /// are already counted) and the error comes again on the next call, from the offset
    /// after the last entry sent. If the reply does not reach the kernel, the lookups that
    /// readdirplus entries carried are given back.
    static func read(_ request: fuse_req_t, _ inode: fuse_ino_t, _ size: Int, _ offset: off_t,
                     _ info: UnsafeMutablePointer<fuse_file_info>?, plus: Bool) {
        let reply = Reply(request)
        let handle = RequestArguments.handle(info)
        let context = RequestArguments.context(request)
        let operations = SessionState.of(request).operations
        let buffer = DirectoryReplyBuffer(request: request, capacity: size, plus: plus)
        let result = Result { () throws(Errno) in
            try operations.readDirectory(inode, handle: handle, offset: UInt64(bitPattern: Int64(offset)), plus: plus,
                                         context: context, emit: buffer.append)
        }
        if case .failure(let error) = result, buffer.isEmpty {
            reply.error(error)
        } else if !reply.bytes(buffer.bytes) {
            for counted in buffer.countedInodes {
                operations.forget(counted, lookups: 1)
            }
        }
    }

    static func release(_ request: fuse_req_t, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
        let reply = Reply(request)
        SessionState.of(request).operations.releaseDirectory(inode, handle: RequestArguments.handle(info))
        reply.success()
    }

    static func sync(_ request: fuse_req_t, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
        let reply = Reply(request)
        let handle = RequestArguments.handle(info)
        let operations = SessionState.of(request).operations
        let result = Result { () throws(Errno) in try operations.syncDirectory(inode, handle: handle) }
        switch result {
        case .success: reply.success()
        case .failure(let error): reply.error(error)
        }
    }

    /// `mode` is passed as permission bits only: the kernel has already applied the
    /// caller's umask (FUSE_CAP_DONT_MASK is off) and sends no S_IFDIR for mkdir.
    static func make(_ request: fuse_req_t, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ mode: mode_t) {
        let reply = Reply(request)
        let name = RequestArguments.fileName(name)
        let context = RequestArguments.context(request)
        let operations = SessionState.of(request).operations
        let result = Result { () throws(Errno) in
            try operations.makeDirectory(parent: parent, name: name, mode: mode & 0o7777, context: context)
        }
        reply.entry(result, operations: operations)
    }

    static func remove(_ request: fuse_req_t, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?) {
        let reply = Reply(request)
        let name = RequestArguments.fileName(name)
        let context = RequestArguments.context(request)
        let operations = SessionState.of(request).operations
        let result = Result { () throws(Errno) in
            try operations.removeDirectory(parent: parent, name: name, context: context)
        }
        switch result {
        case .success: reply.success()
        case .failure(let error): reply.error(error)
        }
    }

    static func unlink(_ request: fuse_req_t, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?) {
        let reply = Reply(request)
        let name = RequestArguments.fileName(name)
        let context = RequestArguments.context(request)
        let operations = SessionState.of(request).operations
        let result = Result { () throws(Errno) in
            try operations.unlink(parent: parent, name: name, context: context)
        }
        switch result {
        case .success: reply.success()
        case .failure(let error): reply.error(error)
        }
    }

    /// `flags` are renameat2's RENAME_NOREPLACE / RENAME_EXCHANGE, passed through.
    static func rename(_ request: fuse_req_t, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?,
                       _ newParent: fuse_ino_t, _ newName: UnsafePointer<CChar>?, _ flags: UInt32) {
        let reply = Reply(request)
        let name = RequestArguments.fileName(name)
        let newName = RequestArguments.fileName(newName)
        let context = RequestArguments.context(request)
        let operations = SessionState.of(request).operations
        let result = Result { () throws(Errno) in
            try operations.rename(parent: parent, name: name, newParent: newParent, newName: newName, flags: flags,
                                  context: context)
        }
        switch result {
        case .success: reply.success()
        case .failure(let error): reply.error(error)
        }
    }
}

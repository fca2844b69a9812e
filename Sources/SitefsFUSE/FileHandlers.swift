import CFuse
import Glibc
import SitefsCore
import SystemPackage

/// open, create, read, write, flush, release, fsync.
///
/// Data pointers: `write`'s data points into the worker's receive buffer and is valid only
/// during the callback; it is handed to the core for exactly that long, because the reply
/// is sent before the callback returns. `read` replies with bytes the core lends (out of a
/// remote reader's chunks, or a buffer of the lease's own) and ends the lease once the
/// reply (`fuse_reply_buf`, or `fuse_reply_iov` for several pieces) has written them.
enum FileHandlers {
    static func open(_ request: fuse_req_t, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
        let reply = Reply(request)
        let flags = RequestArguments.openFlags(info)
        let context = RequestArguments.interruptibleContext(request)
        let operations = SessionState.of(request).operations
        let result = Result { () throws(Errno) in
            try operations.open(inode, flags: flags, context: context)
        }
        switch result {
        case .success(let open):
            // "-ENOENT from fuse_reply_open means release will not be called": do it here.
            if !reply.opened(open, flags: flags) {
                operations.release(inode, handle: open.handle, flags: flags)
            }
        case .failure(let error):
            reply.error(error)
        }
    }

    /// `mode` includes S_IFREG as the kernel sends it for open(O_CREAT); the caller's umask
    /// is already applied. Passed as permission bits only, like mkdir's.
    static func create(_ request: fuse_req_t, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ mode: mode_t,
                       _ info: UnsafeMutablePointer<fuse_file_info>?) {
        let reply = Reply(request)
        let name = RequestArguments.fileName(name)
        let flags = RequestArguments.openFlags(info)
        let context = RequestArguments.context(request)
        let operations = SessionState.of(request).operations
        let result = Result { () throws(Errno) in
            try operations.create(parent: parent, name: name, mode: mode & 0o7777, flags: flags, context: context)
        }
        switch result {
        case .success(let (entry, open)):
            if !reply.created(entry, open, flags: flags) {
                operations.release(entry.attributes.inode, handle: open.handle, flags: flags)
                operations.forget(entry.attributes.inode, lookups: 1)
            }
        case .failure(let error):
            reply.error(error)
        }
    }

    static func read(_ request: fuse_req_t, _ inode: fuse_ino_t, _ size: Int, _ offset: off_t,
                     _ info: UnsafeMutablePointer<fuse_file_info>?) {
        let reply = Reply(request)
        let handle = RequestArguments.handle(info)
        let operations = SessionState.of(request).operations
        let lease: ReadLease
        do throws(Errno) {
            lease = try operations.lend(inode, handle: handle, offset: Int64(offset), size: size)
        } catch {
            reply.error(error)
            return
        }
        reply.pieces(lease.pieces, limit: size)
        lease.end()
    }

    static func write(_ request: fuse_req_t, _ inode: fuse_ino_t, _ data: UnsafePointer<CChar>?, _ size: Int,
                      _ offset: off_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
        let reply = Reply(request)
        let handle = RequestArguments.handle(info)
        let flags = RequestArguments.openFlags(info)
        let operations = SessionState.of(request).operations
        let bytes = UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size)
        let result = Result { () throws(Errno) in
            try operations.write(inode, handle: handle, offset: Int64(offset), data: bytes, flags: flags)
        }
        switch result {
        case .success(let count): reply.written(min(max(count, 0), size))
        case .failure(let error): reply.error(error)
        }
    }

    /// Sent on every close(2) of a descriptor (there may be several per open).
    static func flush(_ request: fuse_req_t, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
        let reply = Reply(request)
        let handle = RequestArguments.handle(info)
        let context = RequestArguments.context(request)
        let operations = SessionState.of(request).operations
        let result = Result { () throws(Errno) in
            try operations.flush(inode, handle: handle, context: context)
        }
        switch result {
        case .success: reply.success()
        case .failure(let error): reply.error(error)
        }
    }

    /// The last close of an open file; its errors have nowhere to go, so the core cannot throw.
    static func release(_ request: fuse_req_t, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
        let reply = Reply(request)
        let operations = SessionState.of(request).operations
        operations.release(inode, handle: RequestArguments.handle(info), flags: RequestArguments.openFlags(info))
        reply.success()
    }

    static func fsync(_ request: fuse_req_t, _ inode: fuse_ino_t, _ dataOnly: Int32,
                      _ info: UnsafeMutablePointer<fuse_file_info>?) {
        let reply = Reply(request)
        let handle = RequestArguments.handle(info)
        let operations = SessionState.of(request).operations
        let result = Result { () throws(Errno) in
            try operations.fsync(inode, handle: handle, dataOnly: dataOnly != 0)
        }
        switch result {
        case .success: reply.success()
        case .failure(let error): reply.error(error)
        }
    }
}

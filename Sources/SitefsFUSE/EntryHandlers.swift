import CFuse
import Glibc
import SitefsCore
import SystemPackage

/// lookup, forget, getattr, setattr: requests about one inode or name.
///
/// Shape of every handler: make the `Reply` first, copy the pointer arguments, call the
/// core, then reply from exactly one place per outcome.
enum EntryHandlers {
    static func lookup(_ request: fuse_req_t, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?) {
        let reply = Reply(request)
        let name = RequestArguments.fileName(name)
        let context = RequestArguments.context(request)
        let operations = SessionState.of(request).operations
        let result = Result { () throws(Errno) in
            try operations.lookup(parent: parent, name: name, context: context)
        }
        reply.entry(result, operations: operations)
    }

    static func forget(_ request: fuse_req_t, _ inode: fuse_ino_t, _ lookups: UInt64) {
        let reply = Reply(request)
        SessionState.of(request).operations.forget(inode, lookups: lookups)
        reply.none()
    }

    static func forgetMany(_ request: fuse_req_t, _ count: Int, _ forgets: UnsafeMutablePointer<fuse_forget_data>?) {
        let reply = Reply(request)
        let operations = SessionState.of(request).operations
        if let forgets {
            for item in UnsafeBufferPointer(start: forgets, count: count) {
                operations.forget(item.ino, lookups: item.nlookup)
            }
        }
        reply.none()
    }

    static func attributes(_ request: fuse_req_t, _ inode: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
        let reply = Reply(request)
        let handle = info.map { $0.pointee.fh }
        let context = RequestArguments.context(request)
        let operations = SessionState.of(request).operations
        let result = Result { () throws(Errno) in
            try operations.attributes(of: inode, handle: handle, context: context)
        }
        switch result {
        case .success(let attributes): reply.attributes(attributes)
        case .failure(let error): reply.error(error)
        }
    }

    static func setAttributes(_ request: fuse_req_t, _ inode: fuse_ino_t, _ attributes: UnsafeMutablePointer<stat>?,
                              _ toSet: Int32, _ info: UnsafeMutablePointer<fuse_file_info>?) {
        let reply = Reply(request)
        let changes = attributes.map { AttributeChangesTranslation.changes($0.pointee, toSet: toSet) } ?? AttributeChanges()
        let handle = info.map { $0.pointee.fh }
        let context = RequestArguments.context(request)
        let operations = SessionState.of(request).operations
        let result = Result { () throws(Errno) in
            try operations.setAttributes(of: inode, changes, handle: handle, context: context)
        }
        switch result {
        case .success(let attributes): reply.attributes(attributes)
        case .failure(let error): reply.error(error)
        }
    }
}

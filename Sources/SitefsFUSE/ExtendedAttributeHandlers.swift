import CFuse
import SitefsCore
import SystemPackage

/// getxattr, listxattr, setxattr, removexattr.
///
/// getxattr and listxattr come in two forms: `size` 0 asks only how many bytes the value
/// (or the NUL-separated name list) needs, answered with `fuse_reply_xattr`; otherwise
/// the value is sent if it fits in `size`, else ERANGE, as getxattr(2) specifies.
enum ExtendedAttributeHandlers {
    static func get(_ request: fuse_req_t, _ inode: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ size: Int) {
        let reply = Reply(request)
        let name = RequestArguments.attributeName(name)
        let context = RequestArguments.context(request)
        let operations = SessionState.of(request).operations
        let result = Result { () throws(Errno) in
            try operations.getExtendedAttribute(inode, name: name, context: context)
        }
        switch result {
        case .success(let value): sendSized(reply, value, size: size)
        case .failure(let error): reply.error(error)
        }
    }

    static func list(_ request: fuse_req_t, _ inode: fuse_ino_t, _ size: Int) {
        let reply = Reply(request)
        let context = RequestArguments.context(request)
        let operations = SessionState.of(request).operations
        let result = Result { () throws(Errno) in
            try operations.listExtendedAttributes(inode, context: context)
        }
        switch result {
        case .success(let names):
            // "user.a\0user.b\0": every name NUL-terminated, as listxattr(2) returns them.
            let list: [UInt8] = names.flatMap { Array($0.utf8) + [0] }
            sendSized(reply, list, size: size)
        case .failure(let error):
            reply.error(error)
        }
    }

    /// `flags` are XATTR_CREATE / XATTR_REPLACE, passed through.
    static func set(_ request: fuse_req_t, _ inode: fuse_ino_t, _ name: UnsafePointer<CChar>?,
                    _ value: UnsafePointer<CChar>?, _ size: Int, _ flags: Int32) {
        let reply = Reply(request)
        let name = RequestArguments.attributeName(name)
        let value = value.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) } ?? []
        let context = RequestArguments.context(request)
        let operations = SessionState.of(request).operations
        let result = Result { () throws(Errno) in
            try operations.setExtendedAttribute(inode, name: name, value: value, flags: flags, context: context)
        }
        switch result {
        case .success: reply.success()
        case .failure(let error): reply.error(error)
        }
    }

    static func remove(_ request: fuse_req_t, _ inode: fuse_ino_t, _ name: UnsafePointer<CChar>?) {
        let reply = Reply(request)
        let name = RequestArguments.attributeName(name)
        let context = RequestArguments.context(request)
        let operations = SessionState.of(request).operations
        let result = Result { () throws(Errno) in
            try operations.removeExtendedAttribute(inode, name: name, context: context)
        }
        switch result {
        case .success: reply.success()
        case .failure(let error): reply.error(error)
        }
    }

    private static func sendSized(_ reply: consuming Reply, _ bytes: [UInt8], size: Int) {
        if size == 0 {
            reply.extendedAttributeSize(bytes.count)
        } else if bytes.count > size {
            reply.error(.outOfRange)
        } else {
            reply.bytes(bytes)
        }
    }
}

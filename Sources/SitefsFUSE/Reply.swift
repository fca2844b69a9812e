import CFuse
import Glibc
import SitefsCore
import SystemPackage

/// The single reply one FUSE request gets.
///
/// Why a noncopyable type: every `fuse_reply_*` call frees the request, so a second reply
/// is a use-after-free inside libfuse, and a missing reply leaves the calling process
/// blocked for good (the kernel waits uninterruptibly once it has handed the request
/// over). Every reply method here is `consuming`, so replying twice does not compile, and a
/// `Reply` dropped without replying trips an assertion in debug builds and answers EIO in
/// release builds, so no caller is ever left hanging.
///
/// Methods that hand the kernel a reference (an entry's lookup count, an open handle)
/// return whether the kernel took the reply; when it did not (the request was interrupted
/// or the connection is gone), the caller gives the reference back to the core.
struct Reply: ~Copyable {
    private let request: fuse_req_t

    init(_ request: fuse_req_t) {
        self.request = request
    }

    deinit {
        assertionFailure("FUSE request dropped without a reply")
        _ = fuse_reply_err(request, EIO)
    }

    consuming func error(_ errno: Errno) {
        let request = self.request
        discard self
        _ = fuse_reply_err(request, errno.rawValue)
    }

    /// Success for requests whose answer is only an error code (unlink, flush, release, ...).
    consuming func success() {
        let request = self.request
        discard self
        _ = fuse_reply_err(request, 0)
    }

    /// For forget and forget_multi, which the kernel does not wait for.
    consuming func none() {
        let request = self.request
        discard self
        fuse_reply_none(request)
    }

    @discardableResult
    consuming func entry(_ entry: Entry) -> Bool {
        let request = self.request
        discard self
        var parameters = FUSEConversions.entryParameters(entry)
        return fuse_reply_entry(request, &parameters) == 0
    }

    /// A new entry (lookup, mkdir, symlink), whose lookup the core counted, or why there is
    /// none; an entry the kernel did not take gives its lookup back.
    consuming func entry(_ result: Result<Entry, Errno>, operations: any FilesystemOperations) {
        switch result {
        case .success(let entry):
            if !self.entry(entry) { operations.forget(entry.attributes.inode, lookups: 1) }
        case .failure(let error):
            self.error(error)
        }
    }

    @discardableResult
    consuming func created(_ entry: Entry, _ open: OpenReply, flags: Int32) -> Bool {
        let request = self.request
        discard self
        var parameters = FUSEConversions.entryParameters(entry)
        var info = FUSEConversions.fileInfo(open, flags: flags, directWritesAreCoherent: Self.directWritesAreCoherent(request))
        return fuse_reply_create(request, &parameters, &info) == 0
    }

    /// A symbolic link's target; libfuse wants it NUL-terminated (the core never gives one
    /// with a NUL inside).
    consuming func link(_ target: [UInt8]) {
        let request = self.request
        discard self
        var terminated = target
        terminated.append(0)
        _ = terminated.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { fuse_reply_readlink(request, $0.baseAddress) }
        }
    }

    consuming func attributes(_ reply: AttributesReply) {
        let request = self.request
        discard self
        var attributes = FUSEConversions.stat(reply.attributes)
        _ = fuse_reply_attr(request, &attributes, reply.timeout)
    }

    private static func directWritesAreCoherent(_ request: fuse_req_t) -> Bool {
        SessionState.of(request).directWritesAreCoherent.load(ordering: .relaxed)
    }

    @discardableResult
    consuming func opened(_ open: OpenReply, flags: Int32) -> Bool {
        let request = self.request
        discard self
        var info = FUSEConversions.fileInfo(open, flags: flags, directWritesAreCoherent: Self.directWritesAreCoherent(request))
        return fuse_reply_open(request, &info) == 0
    }

    /// Data for readdir, getxattr, listxattr and a read of one piece. libfuse writes it to the
    /// device before returning, so `bytes` only has to live for this call.
    @discardableResult
    consuming func bytes(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let request = self.request
        discard self
        let base = bytes.baseAddress?.assumingMemoryBound(to: CChar.self)
        return fuse_reply_buf(request, base, bytes.count) == 0
    }

    /// A read's bytes in consecutive pieces (`ReadLease.pieces`), at most `limit` of them: one
    /// piece as it is, several as an iovec each, which libfuse writes to the kernel as one
    /// reply, so a read spanning two of a remote reader's chunks is not copied together first.
    @discardableResult
    consuming func pieces(_ pieces: [UnsafeRawBufferPointer], limit: Int) -> Bool {
        guard pieces.count > 1 else {
            let whole = pieces.first ?? UnsafeRawBufferPointer(start: nil, count: 0)
            return bytes(UnsafeRawBufferPointer(rebasing: whole.prefix(max(limit, 0))))
        }
        let request = self.request
        discard self
        var vectors: [iovec] = []
        vectors.reserveCapacity(pieces.count)
        var room = max(limit, 0)
        for piece in pieces where room > 0 {
            let count = min(piece.count, room)
            vectors.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: piece.baseAddress), iov_len: count))
            room -= count
        }
        return vectors.withUnsafeBufferPointer { fuse_reply_iov(request, $0.baseAddress, Int32($0.count)) == 0 }
    }

    @discardableResult
    consuming func bytes(_ bytes: [UInt8]) -> Bool {
        let request = self.request
        discard self
        return bytes.withUnsafeBytes { bytes in
            fuse_reply_buf(request, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count) == 0
        }
    }

    consuming func written(_ count: Int) {
        let request = self.request
        discard self
        _ = fuse_reply_write(request, count)
    }

    consuming func statistics(_ statistics: FilesystemStatistics) {
        let request = self.request
        discard self
        var buffer = FUSEConversions.statvfs(statistics)
        _ = fuse_reply_statfs(request, &buffer)
    }

    /// The size-probe answer of getxattr/listxattr (called with size 0).
    consuming func extendedAttributeSize(_ size: Int) {
        let request = self.request
        discard self
        _ = fuse_reply_xattr(request, size)
    }
}

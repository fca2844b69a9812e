import CFuse
import Glibc
import SitefsCore

/// Turns the pointer arguments of a callback into Swift values.
///
/// Names are copied out of libfuse's receive buffer straight away: that buffer belongs to
/// the worker thread and is reused for its next request, so nothing may keep pointing into
/// it once the callback has replied.
enum RequestArguments {
    /// Who asks.
    static func context(_ request: fuse_req_t) -> RequestContext {
        guard let context = fuse_req_ctx(request) else { return RequestContext(uid: 0, gid: 0, pid: 0) }
        return RequestContext(uid: context.pointee.uid, gid: context.pointee.gid, pid: context.pointee.pid)
    }

    /// Who asks, and whether they still wait: `interruption` asks libfuse whether the kernel
    /// sent FUSE_INTERRUPT for this request (the waiting process got a signal). Only for the
    /// requests that may wait long (an open that downloads), so the others allocate no
    /// check. The core asks only while it handles the request, on this thread, before the
    /// reply frees it.
    static func interruptibleContext(_ request: fuse_req_t) -> RequestContext {
        let asker = context(request)
        let probe = InterruptionProbe(request: request)
        return RequestContext(uid: asker.uid, gid: asker.gid, pid: asker.pid,
                              isInterrupted: { fuse_req_interrupted(probe.request) != 0 })
    }

    /// The request pointer, carried into the core's interruption check. Sendable only in
    /// name: it is used on the request's own thread, before its one reply.
    private struct InterruptionProbe: @unchecked Sendable {
        let request: fuse_req_t
    }

    static func fileName(_ name: UnsafePointer<CChar>?) -> FileName {
        FileName(bytes: bytes(name))
    }

    /// Extended attribute names are text in the core's contract; the kernel only lets
    /// namespaced ASCII-ish names through, so lossy decoding never changes a real name.
    static func attributeName(_ name: UnsafePointer<CChar>?) -> String {
        String(decoding: bytes(name), as: UTF8.self)
    }

    static func bytes(_ string: UnsafePointer<CChar>?) -> [UInt8] {
        guard let string else { return [] }
        let length = strlen(string)
        return string.withMemoryRebound(to: UInt8.self, capacity: length) {
            Array(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    static func handle(_ info: UnsafeMutablePointer<fuse_file_info>?) -> HandleID {
        info?.pointee.fh ?? 0
    }

    static func openFlags(_ info: UnsafeMutablePointer<fuse_file_info>?) -> Int32 {
        info?.pointee.flags ?? 0
    }
}

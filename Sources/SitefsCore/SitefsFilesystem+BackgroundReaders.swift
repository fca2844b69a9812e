import SitefsProvider
import SystemPackage

extension SitefsFilesystem {
    /// A thumbnailer or indexer (`BackgroundReaders`) gets EWOULDBLOCK for a file whose
    /// content is only on the server: it fails that one file (a thumbnailer records a failed
    /// thumbnail, the file manager shows the type's icon) and nothing is downloaded. The
    /// first refusal of each program is logged at info, the rest at debug.
    func refuseBackgroundReader(_ context: RequestContext, _ item: ProviderItem) throws(Errno) {
        guard let program = configuration.backgroundReaders.matchingProgram(pid: context.pid) else { return }
        let first = refusedBackgroundReaders.withLock { $0.insert(program).inserted }
        if first {
            logger.info("""
                not downloading \(item.name) for \(program) (pid \(context.pid)): thumbnailers and indexers get only \
                what is on this device; later refusals are logged at debug level
                """)
        } else {
            logger.debug("not downloading \(item.name) for \(program) (pid \(context.pid))")
        }
        throw .wouldBlock
    }
}

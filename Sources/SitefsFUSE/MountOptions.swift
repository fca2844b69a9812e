/// How `FUSEMount` mounts and serves the filesystem.
public struct MountOptions: Sendable, Equatable {
    /// Shown as the source in `mount` / `df` / `/proc/mounts` (e.g. the site URL).
    public var fsName: String
    /// The type suffix: the mount shows as `fuse.<subtype>`.
    public var subtype: String
    /// Mount read-only (`ro`): the kernel refuses writes with EROFS before asking the core.
    public var readOnly: Bool
    /// Let users other than the mounting one in (`allow_other`; non-root mounters need
    /// `user_allow_other` in /etc/fuse.conf).
    public var allowOther: Bool
    /// Most worker threads serving requests at once (each may block in the core).
    public var maxThreads: Int
    /// Idle workers kept around before extra ones exit.
    public var maxIdleThreads: Int
    /// libfuse's `-d`: every request and reply is logged to stderr.
    public var debug: Bool
    /// Install libfuse's SIGINT/SIGTERM/SIGHUP handlers (and ignore SIGPIPE) while `run()`
    /// runs; any of those signals then unmounts and makes `run()` return, whichever thread
    /// the kernel delivers it to (see `SignalExitWatcher`). For the daemon's one mount.
    /// Leave off when several mounts share a process (libfuse keeps one session for its
    /// handlers) or when the process handles signals itself and calls `requestExit()`.
    public var handleSignals: Bool
    /// Kernel mount flags to add (`noexec`, `nosuid`, `nodev`, `noatime`, `sync`, ...): what
    /// mount(8) and fstab ask for. libfuse knows them; anything else is refused when mounting.
    public var kernelFlags: [String]
    /// Ask for readdirplus on every directory read (names with attributes, so `ls -l` needs
    /// no lookup per entry). Off only to diagnose or test plain readdir.
    public var readDirectoryPlus: Bool

    public init(fsName: String = "sitefs", subtype: String = "sitefs", readOnly: Bool = false, allowOther: Bool = false,
                maxThreads: Int = 16, maxIdleThreads: Int = 8, debug: Bool = false, handleSignals: Bool = false,
                readDirectoryPlus: Bool = true, kernelFlags: [String] = []) {
        self.fsName = fsName
        self.subtype = subtype
        self.readOnly = readOnly
        self.allowOther = allowOther
        self.maxThreads = maxThreads
        self.maxIdleThreads = maxIdleThreads
        self.debug = debug
        self.handleSignals = handleSignals
        self.readDirectoryPlus = readDirectoryPlus
        self.kernelFlags = kernelFlags
    }

    /// The `-o` list for `fuse_session_new`.
    ///
    /// `default_permissions` is always on: the kernel checks the mode bits the core reports
    /// against the caller before any request reaches us, so a read-only site (0444/0555
    /// modes) is refused with EACCES locally and consistently, and the core still applies
    /// its own capability checks on top for what mode bits cannot express.
    var mountOptionList: String {
        var options = [
            "fsname=\(Self.escaped(fsName))",
            "subtype=\(Self.escaped(subtype))",
            "default_permissions",
        ]
        if readOnly { options.append("ro") }
        if allowOther { options.append("allow_other") }
        options += kernelFlags.map(Self.escaped)
        return options.joined(separator: ",")
    }

    /// libfuse's option parser splits on unescaped commas; a backslash escapes the next character.
    static func escaped(_ value: String) -> String {
        var result = ""
        for character in value {
            if character == "," || character == "\\" { result.append("\\") }
            result.append(character)
        }
        return result
    }
}

import CFuse
import Glibc
import SitefsCore

/// Builds the `fuse_lowlevel_ops` table libfuse dispatches requests through.
///
/// Why a plain function in its own file: closures written at the top level of a
/// `main.swift` are main-actor isolated, and libfuse calls these from its own worker
/// threads, where a main-actor check traps. Here every closure is nonisolated and captures
/// nothing (a C function pointer cannot), finds the Swift side through the request's
/// userdata (`SessionState.of`) and forwards to a handler that replies exactly once.
///
/// libfuse copies the table in `fuse_session_new`, so the returned value need not outlive
/// that call. Operations left nil (access, locks, fallocate, ioctl, poll, bmap,
/// lseek, copy_file_range, ...) are answered ENOSYS by libfuse; the kernel then stops
/// asking, or (access) treats the answer as success.
func makeLowLevelOperations() -> fuse_lowlevel_ops {
    var operations = fuse_lowlevel_ops()

    operations.`init` = { userdata, connection in
        ConnectionHandlers.initialize(userdata, connection)
    }
    operations.destroy = { userdata in
        ConnectionHandlers.destroy(userdata)
    }

    operations.lookup = { request, parent, name in
        EntryHandlers.lookup(request!, parent, name)
    }
    operations.forget = { request, inode, lookups in
        EntryHandlers.forget(request!, inode, lookups)
    }
    operations.forget_multi = { request, count, forgets in
        EntryHandlers.forgetMany(request!, count, forgets)
    }
    operations.getattr = { request, inode, info in
        EntryHandlers.attributes(request!, inode, info)
    }
    operations.setattr = { request, inode, attributes, toSet, info in
        EntryHandlers.setAttributes(request!, inode, attributes, toSet, info)
    }

    operations.opendir = { request, inode, info in
        DirectoryHandlers.open(request!, inode, info)
    }
    operations.readdir = { request, inode, size, offset, info in
        DirectoryHandlers.read(request!, inode, size, offset, info, plus: false)
    }
    operations.readdirplus = { request, inode, size, offset, info in
        DirectoryHandlers.read(request!, inode, size, offset, info, plus: true)
    }
    operations.releasedir = { request, inode, info in
        DirectoryHandlers.release(request!, inode, info)
    }
    operations.fsyncdir = { request, inode, _, info in
        DirectoryHandlers.sync(request!, inode, info)
    }
    operations.mkdir = { request, parent, name, mode in
        DirectoryHandlers.make(request!, parent, name, mode)
    }
    operations.rmdir = { request, parent, name in
        DirectoryHandlers.remove(request!, parent, name)
    }
    operations.unlink = { request, parent, name in
        DirectoryHandlers.unlink(request!, parent, name)
    }
    operations.rename = { request, parent, name, newParent, newName, flags in
        DirectoryHandlers.rename(request!, parent, name, newParent, newName, flags)
    }

    operations.open = { request, inode, info in
        FileHandlers.open(request!, inode, info)
    }
    operations.create = { request, parent, name, mode, info in
        FileHandlers.create(request!, parent, name, mode, info)
    }
    operations.read = { request, inode, size, offset, info in
        FileHandlers.read(request!, inode, size, offset, info)
    }
    operations.write = { request, inode, data, size, offset, info in
        FileHandlers.write(request!, inode, data, size, offset, info)
    }
    operations.flush = { request, inode, info in
        FileHandlers.flush(request!, inode, info)
    }
    operations.release = { request, inode, info in
        FileHandlers.release(request!, inode, info)
    }
    operations.fsync = { request, inode, dataOnly, info in
        FileHandlers.fsync(request!, inode, dataOnly, info)
    }

    operations.statfs = { request, inode in
        FilesystemHandlers.statistics(request!, inode)
    }
    operations.getxattr = { request, inode, name, size in
        ExtendedAttributeHandlers.get(request!, inode, name, size)
    }
    operations.listxattr = { request, inode, size in
        ExtendedAttributeHandlers.list(request!, inode, size)
    }
    operations.setxattr = { request, inode, name, value, size, flags in
        ExtendedAttributeHandlers.set(request!, inode, name, value, size, flags)
    }
    operations.removexattr = { request, inode, name in
        ExtendedAttributeHandlers.remove(request!, inode, name)
    }

    operations.symlink = { request, target, parent, name in
        LinkHandlers.make(request!, target, parent, name)
    }
    operations.readlink = { request, inode in
        LinkHandlers.read(request!, inode)
    }

    // Node types sitefs never creates: hard links (an item has one name on a document
    // server), FIFOs, sockets and device nodes (nothing a server could keep). EPERM is what
    // link(2) and mknod(2) document for "the filesystem does not support creating that"
    // (ext4 on the same calls would succeed; vfat answers EPERM the same way); ENOSYS would
    // read as "Function not implemented", EOPNOTSUPP is for an unsupported flag, not a node
    // type. Regular files come through `create`, which the kernel always prefers, so mknod
    // never has to stand in for it.
    operations.mknod = { request, _, _, _, _ in
        Reply(request!).error(.notPermitted)
    }
    operations.link = { request, _, _, _ in
        Reply(request!).error(.notPermitted)
    }

    return operations
}

#!/usr/bin/env python3
"""POSIX checks of sitefs's own (issue 35): modes, symlinks, ownership, times, truncate,
mkdir/rmdir, permission denials, run in a folder as whoever runs it.

usage: posix_checks.py FOLDER [--mount]

Prints one line per check, "ok NAME" or "not ok NAME: WHAT", and exits 1 when any failed.
The same checks pass on a local disk; `--mount` adds what a sitefs mount refuses where a
local disk does not: hard links, FIFOs and device nodes (EPERM). Ownership is as on a local
disk: only root gives a file away (on a mount, the owner it gives is kept by that mount).
"""
import ctypes
import errno
import os
import stat
import sys
import time
import traceback

folder = sys.argv[1]
on_mount = "--mount" in sys.argv[2:]
root = os.geteuid() == 0
failures = 0
libc = ctypes.CDLL(None, use_errno=True)


class timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2
AT_FDCWD = -100


def utimensat(path, atime, mtime):
    """atime/mtime: (sec, nsec), or UTIME_NOW / UTIME_OMIT as the nsec of (0, x)."""
    times = (timespec * 2)(timespec(*atime), timespec(*mtime))
    if libc.utimensat(AT_FDCWD, os.fsencode(path), times, 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), path)


class Failed(Exception):
    pass


def expect(condition, what):
    if not condition:
        raise Failed(what)


def expect_errno(expected, call, *args):
    try:
        call(*args)
    except OSError as error:
        expect(error.errno == expected,
               f"{call.__name__}{args}: {errno.errorcode.get(error.errno)} instead of {errno.errorcode[expected]}")
        return
    raise Failed(f"{call.__name__}{args} succeeded, expected {errno.errorcode[expected]}")


def mode(path, follow=True):
    info = os.stat(path) if follow else os.lstat(path)
    return stat.S_IMODE(info.st_mode)


def write(path, data=b"", perms=0o644):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, perms)
    os.write(fd, data)
    os.close(fd)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def check(name, only=True):
    """Registers a check; `only` false leaves it out in this run."""
    def register(function):
        global failures
        if not only:
            return function
        where = os.path.join(folder, name)
        os.mkdir(where, 0o755)
        os.chmod(where, 0o755)
        os.chdir(where)
        try:
            os.umask(0o022)
            function()
            print(f"ok {name}", flush=True)
        except Failed as failure:
            failures += 1
            print(f"not ok {name}: {failure}", flush=True)
        except Exception as error:  # an unexpected error is a failure of the check, said plainly
            failures += 1
            last = traceback.extract_tb(error.__traceback__)[-1]
            print(f"not ok {name}: {type(error).__name__} {error} (line {last.lineno})", flush=True)
        finally:
            os.chdir(folder)
            os.umask(0o022)
        return function
    return register


@check("chmod_stat")
def _():
    write("f", b"data")
    for bits in (0o644, 0o600, 0o755, 0o700, 0o444, 0o640, 0o000, 0o750, 0o4755, 0o1644):
        os.chmod("f", bits)
        expect(mode("f") == bits, f"chmod {bits:o}: stat shows {mode('f'):o}")
    os.chmod("f", 0o644)
    fd = os.open("f", os.O_RDONLY)
    os.fchmod(fd, 0o751)
    expect(stat.S_IMODE(os.fstat(fd).st_mode) == 0o751, "fchmod 751 on an open file")
    os.close(fd)
    expect(mode("f") == 0o751, f"after fchmod 751: {mode('f'):o}")
    expect(read("f") == b"data", "chmod changed the content")
    os.mkdir("d")
    for bits in (0o700, 0o755, 0o750, 0o1777, 0o555):
        os.chmod("d", bits)
        expect(mode("d") == bits, f"chmod dir {bits:o}: stat shows {mode('d'):o}")
    os.chmod("d", 0o755)
    # A mode survives a rename, and the renamed file's listing shows it.
    os.chmod("f", 0o700)
    os.rename("f", "g")
    expect(mode("g") == 0o700, f"mode after rename: {mode('g'):o}")


@check("create_modes_and_umask")
def _():
    write("a", perms=0o640)
    expect(mode("a") == 0o640, f"open(O_CREAT, 640): {mode('a'):o}")
    write("b", perms=0o777)
    expect(mode("b") == 0o755, f"open(O_CREAT, 777) under umask 022: {mode('b'):o}")
    os.umask(0o077)
    write("c", perms=0o666)
    expect(mode("c") == 0o600, f"open(O_CREAT, 666) under umask 077: {mode('c'):o}")
    os.mkdir("e", 0o777)
    expect(mode("e") == 0o700, f"mkdir 777 under umask 077: {mode('e'):o}")
    os.umask(0o022)
    for bits in (0o755, 0o700, 0o750, 0o711):
        os.mkdir(f"m{bits:o}", bits)
        expect(mode(f"m{bits:o}") == bits, f"mkdir {bits:o}: {mode(f'm{bits:o}'):o}")
        expect(stat.S_ISDIR(os.stat(f"m{bits:o}").st_mode), "mkdir made no folder")


@check("mkdir_rmdir")
def _():
    os.mkdir("d", 0o755)
    expect_errno(errno.EEXIST, os.mkdir, "d")
    write("d/f")
    expect_errno(errno.ENOTEMPTY, os.rmdir, "d")
    os.unlink("d/f")
    os.rmdir("d")
    expect(not os.path.lexists("d"), "rmdir left the folder")
    write("f")
    expect_errno(errno.ENOTDIR, os.rmdir, "f")
    expect_errno(errno.ENOENT, os.rmdir, "missing")
    os.mkdir("target")
    os.symlink("target", "link")
    expect_errno(errno.ENOTDIR, os.rmdir, "link")
    expect(os.path.isdir("target"), "rmdir of a link removed its target")
    expect_errno(errno.ENOENT, os.mkdir, "missing/child")
    expect_errno(errno.ENOTDIR, os.mkdir, "f/child")


@check("symlink_readlink_lstat")
def _():
    write("file", b"hello")
    os.mkdir("dir")
    write("dir/inner", b"inner")
    cases = {"rel": "file", "dirrel": "dir", "up": "../symlink_readlink_lstat/file",
             "abs": os.path.join(folder, "symlink_readlink_lstat", "file"), "dangling": "no/such/file",
             "spaced": "a name with spaces ü.txt", "dot": "."}
    for name, target in cases.items():
        os.symlink(target, name)
        expect(os.readlink(name) == target, f"readlink {name}: {os.readlink(name)!r}, made to {target!r}")
        info = os.lstat(name)
        expect(stat.S_ISLNK(info.st_mode), f"lstat {name}: not a link ({info.st_mode:o})")
        expect(info.st_size == len(os.fsencode(target)), f"lstat {name}: size {info.st_size}, target {len(target)} bytes")
        expect(name in os.listdir("."), f"{name} not listed")
    expect(read("rel") == b"hello", "reading through a relative link")
    expect(read("up") == b"hello", "reading through a ../ link")
    expect(read("abs") == b"hello", "reading through an absolute link")
    expect(read("dirrel/inner") == b"inner", "reading through a folder link")
    expect(sorted(os.listdir("dirrel")) == ["inner"], "listing through a folder link")
    expect(stat.S_ISREG(os.stat("rel").st_mode) and os.stat("rel").st_size == 5, "stat follows a link")
    expect(stat.S_ISDIR(os.stat("dirrel").st_mode), "stat of a folder link is a folder")
    expect_errno(errno.ENOENT, os.stat, "dangling")
    expect_errno(errno.ENOENT, read, "dangling")
    expect_errno(errno.EEXIST, os.symlink, "other", "rel")
    expect_errno(errno.EEXIST, os.symlink, "other", "file")
    expect_errno(errno.EINVAL, os.readlink, "file")
    expect_errno(errno.ENOENT, os.readlink, "missing")
    long_target = "x" * 4095
    os.symlink(long_target, "long")
    expect(os.readlink("long") == long_target, "a 4095-byte target")
    expect_errno(errno.ENAMETOOLONG, os.symlink, "y" * 4096, "toolong")
    # Writing through a link writes the target; the link stays a link.
    with open("rel", "ab") as f:
        f.write(b" world")
    expect(read("file") == b"hello world", "writing through a link")
    expect(stat.S_ISLNK(os.lstat("rel").st_mode), "the link stopped being a link after a write through it")
    # chmod through a link changes the target.
    os.chmod("rel", 0o600)
    expect(mode("file") == 0o600, f"chmod through a link: target {mode('file'):o}")
    # A link made through a link to a folder.
    os.symlink("../file", "dirrel/back")
    expect(os.readlink("dir/back") == "../file" and read("dir/back") == b"hello world", "a link made inside a linked folder")


@check("rename_links")
def _():
    write("file", b"content")
    os.mkdir("sub")
    os.symlink("file", "l1")
    os.rename("l1", "l2")
    expect(not os.path.lexists("l1"), "the old name is still there")
    expect(os.readlink("l2") == "file", f"renamed link reads {os.readlink('l2')!r}")
    # Into another folder: a relative target keeps its bytes (and dangles there).
    os.rename("l2", "sub/l3")
    expect(os.readlink("sub/l3") == "file" and stat.S_ISLNK(os.lstat("sub/l3").st_mode), "link moved into a folder")
    expect_errno(errno.ENOENT, os.stat, "sub/l3")
    os.rename("sub/l3", "l4")
    expect(read("l4") == b"content", "moved back, the link works")
    # A link over a file replaces the file; a file over a link replaces the link.
    write("victim", b"old")
    os.rename("l4", "victim")
    expect(stat.S_ISLNK(os.lstat("victim").st_mode) and os.readlink("victim") == "file", "link renamed over a file")
    write("plain", b"plain")
    os.rename("plain", "victim")
    expect(stat.S_ISREG(os.lstat("victim").st_mode) and read("victim") == b"plain", "file renamed over a link")
    expect(read("file") == b"content", "renaming over a link touched its target")
    # A link to a folder renames as a link.
    os.symlink("sub", "dl")
    os.rename("dl", "dl2")
    expect(os.readlink("dl2") == "sub" and os.path.isdir("dl2"), "folder link renamed")
    # A folder renamed keeps the links inside.
    os.symlink("../file", "sub/up")
    os.rename("sub", "sub2")
    expect(os.readlink("sub2/up") == "../file" and read("sub2/up") == b"content", "link inside a renamed folder")


@check("unlink_links")
def _():
    write("file", b"kept")
    os.mkdir("dir")
    os.symlink("file", "fl")
    os.symlink("dir", "dl")
    os.symlink("nowhere", "dangling")
    for name in ("fl", "dl", "dangling"):
        os.unlink(name)
        expect(not os.path.lexists(name), f"unlink {name} left it")
    expect(read("file") == b"kept" and os.path.isdir("dir"), "unlinking links removed their targets")
    expect(sorted(os.listdir(".")) == ["dir", "file"], f"left: {sorted(os.listdir('.'))}")
    expect_errno(errno.ENOENT, os.unlink, "fl")
    expect_errno(errno.EISDIR, os.unlink, "dir")
    # An open file unlinked stays readable through its descriptor.
    fd = os.open("file", os.O_RDONLY)
    os.unlink("file")
    expect(os.read(fd, 10) == b"kept", "an unlinked open file read")
    os.close(fd)


@check("utimensat")
def _():
    # mtime: set, left alone (UTIME_OMIT), now (UTIME_NOW); atime is the next check's.
    write("f", b"x")
    utimensat("f", (1_000_000_000, 0), (1_200_000_000, 0))
    expect(int(os.stat("f").st_mtime) == 1_200_000_000, f"mtime {os.stat('f').st_mtime}")
    utimensat("f", (0, UTIME_OMIT), (1_300_000_000, 0))
    expect(int(os.stat("f").st_mtime) == 1_300_000_000, f"mtime {os.stat('f').st_mtime}")
    utimensat("f", (1_100_000_000, 0), (0, UTIME_OMIT))
    expect(int(os.stat("f").st_mtime) == 1_300_000_000, f"UTIME_OMIT mtime changed it to {os.stat('f').st_mtime}")
    before = time.time()
    utimensat("f", (0, UTIME_OMIT), (0, UTIME_NOW))
    expect(abs(os.stat("f").st_mtime - before) < 5, f"UTIME_NOW mtime {os.stat('f').st_mtime}, now {before}")
    utimensat("f", (0, UTIME_OMIT), (1_300_000_000, 0))
    os.utime("f", None)
    expect(abs(os.stat("f").st_mtime - time.time()) < 5, "utime(NULL) mtime")
    utimensat("f", (0, UTIME_OMIT), (2_500_000_000, 0))
    expect(int(os.stat("f").st_mtime) == 2_500_000_000, f"mtime after 2038: {os.stat('f').st_mtime}")
    # A folder's mtime; a write moves a file's again.
    os.mkdir("d")
    utimensat("d", (1_000_000_000, 0), (1_200_000_000, 0))
    expect(int(os.stat("d").st_mtime) == 1_200_000_000, f"folder mtime {os.stat('d').st_mtime}")
    utimensat("f", (1_000_000_000, 0), (1_000_000_000, 0))
    with open("f", "ab") as f:
        f.write(b"more")
    expect(os.stat("f").st_mtime > 1_000_000_000, "a write did not move mtime")
    # The time survives a rename.
    utimensat("f", (1_000_000_000, 0), (1_234_567_890, 0))
    os.rename("f", "g")
    expect(int(os.stat("g").st_mtime) == 1_234_567_890, f"mtime after rename {os.stat('g').st_mtime}")


@check("utimensat_atime")
def _():
    write("f", b"x")
    utimensat("f", (1_000_000_000, 0), (1_200_000_000, 0))
    expect(int(os.stat("f").st_atime) == 1_000_000_000, f"atime {os.stat('f').st_atime} (mtime 1200000000)")
    utimensat("f", (0, UTIME_OMIT), (1_300_000_000, 0))
    expect(int(os.stat("f").st_atime) == 1_000_000_000, f"UTIME_OMIT atime changed it to {os.stat('f').st_atime}")
    utimensat("f", (1_100_000_000, 0), (0, UTIME_OMIT))
    expect(int(os.stat("f").st_atime) == 1_100_000_000, f"atime {os.stat('f').st_atime}")
    utimensat("f", (0, UTIME_NOW), (0, UTIME_OMIT))
    expect(abs(os.stat("f").st_atime - time.time()) < 5, f"UTIME_NOW atime {os.stat('f').st_atime}")
    expect(int(os.stat("f").st_mtime) == 1_300_000_000, f"UTIME_NOW on atime moved mtime: {os.stat('f').st_mtime}")


@check("truncate")
def _():
    write("f", b"0123456789")
    os.truncate("f", 4)
    expect(read("f") == b"0123", f"shrunk: {read('f')!r}")
    os.truncate("f", 10000)
    data = read("f")
    expect(len(data) == 10000 and data[:4] == b"0123" and data[4:] == bytes(9996), "grown with zeros")
    expect(os.stat("f").st_size == 10000, "size after growing")
    fd = os.open("f", os.O_RDWR)
    os.ftruncate(fd, 2)
    expect(os.fstat(fd).st_size == 2, "ftruncate size")
    os.close(fd)
    expect(read("f") == b"01", "after ftruncate")
    os.truncate("f", 0)
    expect(read("f") == b"" and os.stat("f").st_size == 0, "truncated to 0")
    write("t", b"through")
    os.symlink("t", "l")
    os.truncate("l", 3)
    expect(read("t") == b"thr" and stat.S_ISLNK(os.lstat("l").st_mode), "truncate through a link")
    expect_errno(errno.EISDIR, os.open, ".", os.O_WRONLY | os.O_TRUNC)
    expect_errno(errno.EINVAL, os.truncate, "f", -1)
    os.chmod("f", 0o644)
    fd = os.open("f", os.O_WRONLY | os.O_TRUNC)
    os.close(fd)
    if not root:
        os.chmod("t", 0o444)
        expect_errno(errno.EACCES, os.truncate, "t", 0)


@check("ownership")
def _():
    uid, gid = os.geteuid(), os.getegid()
    write("f")
    os.mkdir("d")
    os.symlink("f", "l")
    for name in ("f", "d", "l"):
        info = os.lstat(name)
        expect((info.st_uid, info.st_gid) == (uid, gid), f"{name} owned by {info.st_uid}:{info.st_gid}, not {uid}:{gid}")
    # No-op chowns are fine.
    os.chown("f", uid, gid)
    os.chown("f", -1, -1)
    os.chown("d", uid, -1)
    os.lchown("l", uid, gid)
    expect(os.lstat("f").st_uid == uid, "a no-op chown changed the owner")
    other = 65534 if uid != 65534 else 65533
    if not root:
        expect_errno(errno.EPERM, os.chown, "f", other, -1)
        expect_errno(errno.EPERM, os.lchown, "l", other, -1)
        expect(os.lstat("f").st_uid == uid, "a refused chown changed the owner")
    else:
        os.chown("f", other, other)
        info = os.lstat("f")
        expect((info.st_uid, info.st_gid) == (other, other), f"root's chown shows {info.st_uid}:{info.st_gid}")
        os.chown("f", uid, gid)
        expect(os.lstat("f").st_uid == uid, "root's chown back did not take")


@check("permission_denials", only=not root)
def _():
    write("closed", b"secret", perms=0o600)
    os.chmod("closed", 0o000)
    expect_errno(errno.EACCES, os.open, "closed", os.O_RDONLY)
    expect_errno(errno.EACCES, os.open, "closed", os.O_WRONLY)
    write("readonly", b"r")
    os.chmod("readonly", 0o444)
    expect(read("readonly") == b"r", "a 0444 file read")
    expect_errno(errno.EACCES, os.open, "readonly", os.O_WRONLY)
    write("writeonly", b"w")
    os.chmod("writeonly", 0o200)
    expect_errno(errno.EACCES, os.open, "writeonly", os.O_RDONLY)
    fd = os.open("writeonly", os.O_WRONLY | os.O_APPEND)
    os.close(fd)
    os.chmod("closed", 0o600)
    expect(read("closed") == b"secret", "readable again after chmod 600")
    # Folders: no x, no way in; no w, no new names; no r, no listing.
    os.mkdir("d")
    write("d/f", b"in")
    os.chmod("d", 0o600)
    expect_errno(errno.EACCES, os.stat, "d/f")
    os.chmod("d", 0o555)
    expect_errno(errno.EACCES, os.open, "d/new", os.O_WRONLY | os.O_CREAT, 0o644)
    expect_errno(errno.EACCES, os.unlink, "d/f")
    expect_errno(errno.EACCES, os.symlink, "x", "d/link")
    os.chmod("d", 0o311)
    expect_errno(errno.EACCES, os.listdir, "d")
    expect(read("d/f") == b"in", "a known name in an unlistable folder")
    os.chmod("d", 0o755)
    # Running: no x, no exec.
    write("script", b"#!/bin/sh\necho ran\n")
    expect_errno(errno.EACCES, os.execv, "./script", ["./script"])
    os.chmod("script", 0o755)
    pid = os.fork()
    if pid == 0:
        os.execv("./script", ["./script"])
    _, status = os.waitpid(pid, 0)
    expect(os.waitstatus_to_exitcode(status) == 0, "a 0755 script did not run")


@check("refusals", only=on_mount)
def _():
    write("f", b"x")
    expect_errno(errno.EPERM, os.link, "f", "hard")
    expect(not os.path.lexists("hard"), "a refused hard link left a name")
    expect_errno(errno.EPERM, os.mkfifo, "fifo")
    expect(not os.path.lexists("fifo"), "a refused FIFO left a name")
    expect_errno(errno.EPERM, os.mknod, "dev", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    expect_errno(errno.EPERM, os.mknod, "sock", 0o600 | stat.S_IFSOCK)
    expect(sorted(os.listdir(".")) == ["f"], f"left: {sorted(os.listdir('.'))}")


@check("local_specials", only=not on_mount)
def _():
    # What a mount refuses works on a local disk (so the refusals above are the mount's).
    write("f", b"x")
    os.link("f", "hard")
    expect(os.stat("f").st_nlink == 2, "hard link count")
    os.mkfifo("fifo")
    expect(stat.S_ISFIFO(os.lstat("fifo").st_mode), "FIFO")


sys.exit(1 if failures else 0)

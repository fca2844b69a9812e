"""A desktop for the files-window case, as a person's session has one: an X server (Xvfb on a
display it picks itself), a private session bus (`dbus-daemon --session`), a home of its own
(so the freedesktop thumbnail cache starts empty and Files' settings are the bench's), and
Files (Nautilus) opened on a folder in it. One `Desktop` per run; `close` ends all of it.

`GIO_USE_VOLUME_MONITOR=unix`: without udisks (no system bus), Nautilus 43 stays on
"Loading…" for a FUSE mount. Everything is ended with SIGKILL, by process id: what the bench
starts may inherit a blocked SIGTERM, and none of it keeps anything the bench needs. What
the bus and Files started themselves (gvfsd, a thumbnailer in bwrap, ...) is found as their
descendants, or by the session bus's address in its environment (a process re-parented to
init), and ended the same way.
"""

import hashlib
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from . import procs
from .measure import BenchFailure

XVFB = "/usr/bin/Xvfb"
DBUS = "/usr/bin/dbus-daemon"
NAUTILUS = "/usr/bin/nautilus"
# The system's Python, with GLib's bindings: the URIs thumbnails are keyed by are GLib's.
SYSTEM_PYTHON = "/usr/bin/python3"
# Files (Nautilus 43) asks for thumbnails at this size whatever the zoom level.
SIZE_FOLDER = "large"
FAILED_FOLDER = "fail/gnome-thumbnail-factory"


def unavailable():
    """Why a desktop cannot run here, or None."""
    missing = [path for path in (XVFB, DBUS, NAUTILUS) if not os.access(path, os.X_OK)]
    if missing:
        return f"not installed: {' '.join(missing)} (apt-get install xvfb dbus nautilus)"
    return None


def thumbnail_names(paths):
    """{path: the file name of its thumbnail in the cache}: the MD5 of the file's URI as GLib
    writes it (g_filename_to_uri, asked of the system's Python once for all the paths); a
    Python without GLib's bindings gets GLib's escaping written out here (bytes outside
    A-Za-z0-9 and !$&'()*+,-./:=@_~ percent-encoded, upper-case hex)."""
    paths = [str(path) for path in paths]
    script = ("import json, sys\nfrom gi.repository import GLib\n"
              "print(json.dumps([GLib.filename_to_uri(p, None) for p in json.load(sys.stdin)]))")
    uris = None
    if os.access(SYSTEM_PYTHON, os.X_OK):
        done = subprocess.run([SYSTEM_PYTHON, "-c", script], input=json.dumps(paths), capture_output=True, text=True,
                              timeout=60)
        if done.returncode == 0:
            uris = json.loads(done.stdout)
    if uris is None:
        keep = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!$&'()*+,-./:=@_~")
        uris = ["file://" + "".join(chr(b) if b in keep else f"%{b:02X}" for b in os.fsencode(p)) for p in paths]
    return {path: hashlib.md5(uri.encode()).hexdigest() + ".png" for path, uri in zip(paths, uris)}


def read_line(stream, timeout):
    """A line a child prints on a pipe, waiting at most `timeout` seconds; None if none."""
    deadline = time.monotonic() + timeout
    data = b""
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([stream], [], [], left)[0]:
            return None
        chunk = os.read(stream.fileno(), 256)
        if not chunk:
            return data.decode(errors="replace").strip() or None
        data += chunk
    return data.split(b"\n", 1)[0].decode(errors="replace").strip()


class Desktop:
    """Xvfb, a session bus and a home under `directory` (a new folder); `open_folder` starts
    Files on a folder. `environment` is what a program of this session sees: the sitefs
    daemon gets the same XDG_CACHE_HOME, so it files the server's thumbnails where Files
    looks."""

    def __init__(self, directory):
        self.directory = Path(tempfile.mkdtemp(prefix="desktop.", dir=directory))
        self.home = self.directory / "home"
        for sub in (".cache", ".config", ".local/share"):
            (self.home / sub).mkdir(parents=True)
        self.processes = []
        self.bus_address = None
        self.display = None
        try:
            self.start()
        except BaseException:
            self.close()
            raise

    def start(self):
        xvfb = self.spawn([XVFB, "-displayfd", "1", "-screen", "0", "1280x800x24", "-nolisten", "tcp"])
        number = read_line(xvfb.stdout, 15)
        if not number or not number.isdigit():
            raise BenchFailure("Xvfb did not say which display it took")
        self.display = ":" + number
        bus_folder = self.directory / "bus"
        bus_folder.mkdir()
        bus = self.spawn([DBUS, "--session", "--nofork", "--print-address=1", f"--address=unix:dir={bus_folder}"])
        address = read_line(bus.stdout, 15)
        if not address or not address.startswith("unix:"):
            raise BenchFailure("dbus-daemon did not print its address")
        self.bus_address = address

    def spawn(self, command, log=None, env=None):
        """A child with its output on a pipe (or in `log`), kept to be ended by `close`."""
        out = open(log, "w") if log else None
        try:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out or subprocess.PIPE,
                                       stderr=out or subprocess.DEVNULL, env=env)
        finally:
            if out:
                out.close()
        self.processes.append(process)
        return process

    @property
    def environment(self):
        """What a program started in this session sees (on top of the bench's environment)."""
        return {**os.environ, "DISPLAY": self.display, "DBUS_SESSION_BUS_ADDRESS": self.bus_address,
                "HOME": str(self.home), "XDG_CACHE_HOME": str(self.home / ".cache"),
                "XDG_CONFIG_HOME": str(self.home / ".config"), "XDG_DATA_HOME": str(self.home / ".local/share"),
                "GIO_USE_VOLUME_MONITOR": "unix", "GSETTINGS_BACKEND": "memory", "NO_AT_BRIDGE": "1"}

    @property
    def cache_home(self):
        return self.home / ".cache"

    @property
    def thumbnails(self):
        return self.cache_home / "thumbnails"

    def open_folder(self, folder, log):
        """Starts `nautilus --new-window FOLDER` in this session (its output to `log`) and
        returns the perf_counter just before it started."""
        started = time.perf_counter()
        self.spawn([NAUTILUS, "--new-window", str(folder)], log=log, env=self.environment)
        return started

    def shown(self):
        """(thumbnail file names in the cache at Files' size, failed-thumbnail records)."""
        return listing(self.thumbnails / SIZE_FOLDER), listing(self.thumbnails / FAILED_FOLDER)

    def session_processes(self):
        """Every live process of this session: what it started, their descendants, and any
        process with this session's bus address in its environment."""
        found = set()
        pending = [process.pid for process in self.processes if process.poll() is None]
        while pending:
            pid = pending.pop()
            if pid in found:
                continue
            found.add(pid)
            pending += procs.children_of(pid)
        if self.bus_address:
            marker = f"DBUS_SESSION_BUS_ADDRESS={self.bus_address}".encode()
            for entry in os.listdir("/proc"):
                if entry.isdigit() and int(entry) != os.getpid():
                    try:
                        with open(f"/proc/{entry}/environ", "rb") as f:
                            if marker in f.read().split(b"\0"):
                                found.add(int(entry))
                    except OSError:
                        pass
        return found

    def close(self):
        """SIGKILL to every process of the session (by id), each child waited for; the
        folder removed. Safe to call twice."""
        for _ in range(3):  # a process may start another while the first are being ended
            pids = self.session_processes()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            for process in self.processes:
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
            deadline = time.monotonic() + 10
            while any(procs.alive(pid) for pid in pids) and time.monotonic() < deadline:
                time.sleep(0.05)
        for process in self.processes:
            if process.stdout:
                process.stdout.close()
        self.processes = []
        shutil.rmtree(self.directory, ignore_errors=True)


def listing(folder):
    try:
        return set(os.listdir(folder))
    except FileNotFoundError:
        return set()

"""Processes and what /proc says of them."""

import os
import signal
import time

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def alive(pid):
    """True while the process exists and is not a zombie (nobody reaps one in some containers)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(") ", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def stop(pid, grace):
    """Waits `grace` seconds for the process to end, then SIGTERM, then SIGKILL. False if it survives."""
    def wait(seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not alive(pid):
                return True
            time.sleep(0.1)
        return not alive(pid)

    if wait(grace):
        return True
    for sig, seconds in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return True
        if wait(seconds):
            return True
    return False


def children_of(pid):
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == str(pid):
            kids.append(int(entry))
    return kids


def kill_tree(pid):
    """SIGTERM to the process and, by id, every process it had started."""
    kids = children_of(pid)
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    for kid in kids:
        kill_tree(kid)


def status_kib(pid, key):
    """A kB figure of /proc/PID/status (VmRSS, VmHWM)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {key} for process {pid}")


def cpu_seconds(pid):
    """User plus system CPU seconds the process has used."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(") ", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def written_bytes(pid):
    """The bytes the process has handed to write calls (/proc/PID/io `wchar`): to files
    (page cache or not), sockets and the FUSE device alike, so a read's bytes count too,
    as the replies that carry them. None where that file is not readable."""
    try:
        with open(f"/proc/{pid}/io") as f:
            for line in f:
                if line.startswith("wchar:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def find_process(predicate):
    """The first live process whose argument list satisfies `predicate`, or None."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = [a.decode(errors="replace") for a in f.read().split(b"\0")]
        except OSError:
            continue
        if predicate(args) and alive(int(entry)):
            return int(entry)
    return None


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])

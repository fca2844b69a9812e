"""Timing, medians, per-operation daemon figures and the result rows."""

import math
import statistics
import subprocess
import sys
import time


class BenchFailure(Exception):
    """A case broke (a command failed, timed out, or left the wrong result): the case is
    reported FAIL and the next one runs."""


def log(message):
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# The umask of every measured command: a user's shell's usual one. The bench keeps 077 for
# its own files; under it every file a command makes would be 0600, a mode the mount then
# sends the server apart from the file (on sitefs-server a PATCH after each POST), which is
# not what a person's `touch` or save costs.
MEASURED_UMASK = 0o022


def timed(command, timeout, stdout=subprocess.DEVNULL, **kwargs):
    """Runs a command (an argument list) under a timeout, with the umask MEASURED_UMASK;
    returns the wall-clock seconds around it. A Python callable is timed as is (each request
    in it has its own timeout)."""
    started = time.perf_counter()
    if callable(command):
        command()
    else:
        try:
            result = subprocess.run(command, stdout=stdout, timeout=timeout, umask=MEASURED_UMASK, **kwargs)
        except subprocess.TimeoutExpired:
            raise BenchFailure(f"timed out after {timeout} s: {describe(command)}")
        if result.returncode != 0:
            raise BenchFailure(f"exit {result.returncode}: {describe(command)}")
    return time.perf_counter() - started


def describe(command):
    return " ".join(command) if isinstance(command, list) else repr(command)


def median(values):
    return statistics.median(values)


class Samples:
    """Times of one measured command over the runs, and for mount operations the daemon's
    CPU seconds, peak RSS (VmHWM), the bytes it wrote (where readable) and the server
    requests each run made."""

    def __init__(self):
        self.seconds = []
        self.cpu = []
        self.peak_kib = []
        self.written = []
        self.requests = []

    def add(self, seconds):
        self.seconds.append(seconds)
        return seconds

    @property
    def median(self):
        return median(self.seconds)

    def notes(self):
        if not self.cpu:
            return ""
        wrote = f", wrote {median(self.written) / 1048576:.1f} MiB" if self.written else ""
        return (f"cpu {median(self.cpu):.2f} s, peak {max(self.peak_kib) // 1024} MiB{wrote}, "
                f"{median(self.requests):g} req")


def ceil_hundredths(x):
    """Rounded up to hundredths without float dust (1.301 shows as 1.31, 1.3 as 1.30)."""
    return math.ceil(x * 100 - 1e-7) / 100


class Recorder:
    """The rows of one run, in order. A row compares a measured median with a baseline's
    median from the same run. Kind: ("max", X) ratio measured/baseline at most X; ("min", X)
    throughput ratio baseline/measured at least X; ("info",) the ratio only. Every row says
    which backend it measured: the one `backend` names when it is recorded."""

    def __init__(self):
        self.rows = []
        self.backend = "sitefs"

    def add(self, row):
        self.rows.append({"backend": self.backend, **row})

    def compare(self, label, measured, baseline_label, baseline, kind, notes="", size_bytes=None):
        m, b = measured.median, baseline.median
        if kind[0] == "min":
            ratio = b / m
            # Rounded away from the target, so the figure agrees with PASS/MISS (69.6% shows as 69%).
            ratio_text = f"{int(100 * ratio)}%"
            target = f">= {100 * kind[1]:.0f}%"
            ok = ratio >= kind[1]
        else:
            ratio = m / b
            ratio_text = f"{ceil_hundredths(ratio):.2f}x"
            target = f"<= {kind[1]}x" if kind[0] == "max" else ""
            ok = kind[0] == "info" or ratio <= kind[1]
        self.add({
            "case": label,
            "measured_seconds": m,
            "baseline": baseline_label,
            "baseline_seconds": b,
            "bytes": size_bytes,
            "ratio": ratio,
            "ratio_text": ratio_text,
            "kind": kind[0],
            "target": target,
            "result": "" if kind[0] == "info" else ("PASS" if ok else "MISS"),
            "notes": notes,
            "samples": {"measured": measured.seconds, "baseline": baseline.seconds},
        })

    def figure(self, label, value, unit, target="", result="", notes="", baseline_label="", baseline_value=None,
               ratio_text=""):
        """A row of a figure that is not a time (memory): value and baseline in `unit`."""
        self.add({
            "case": label,
            "value": value,
            "unit": unit,
            "baseline": baseline_label,
            "baseline_value": baseline_value,
            "ratio_text": ratio_text,
            "kind": "figure",
            "target": target,
            "result": result,
            "notes": notes,
        })

    def failed(self, name, why):
        self.add({"case": name, "kind": "failed", "result": "FAIL", "notes": why, "baseline": "", "ratio_text": "",
                  "target": ""})

    def skipped(self, name, why):
        """A case that makes no sense on this backend, or a backend that cannot run here."""
        self.add({"case": name, "kind": "skipped", "result": "SKIP", "notes": why, "baseline": "", "ratio_text": "",
                  "target": ""})

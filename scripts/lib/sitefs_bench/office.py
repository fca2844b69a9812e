"""office-save: LibreOffice's save of a document on the mount, until the server has it.

A headless LibreOffice (the mount tests' office_session.py, over UNO) opens
office/minutes.odt from the mount (a text document of the seed), appends a line of the run's own and calls store(). Timed:
store() itself (measured around the call by the helper), and from store()'s start until the
server has the saved document, polled from outside the mount every 5 ms without `sitefs
sync`: the file changed (sitefs-server: a new etag in its change feed; Apache: a new file in
the served directory) and its content.xml holds the run's line. Then, untimed: the document
is closed, `sitefs sync` sends anything still pending, and the server's content must be the
bytes the mount holds (what LibreOffice wrote); on sitefs-server its versions are counted:
one store() should make exactly one new version. Baseline: the same open, change and store()
on a copy in a local directory (store()'s time). A SKIP row without soffice or python3-uno.
"""

import io
import os
import select
import shutil
import signal
import subprocess
import time
import zipfile
from pathlib import Path

from . import procs
from .measure import MEASURED_UMASK, BenchFailure, Samples, log, median

# The mount tests' LibreOffice driver, which has the `save` command this case times.
HELPER = Path(__file__).resolve().parents[3] / "Tests" / "SitefsMountTests" / "Support" / "office_session.py"
PYTHON = "/usr/bin/python3"
FOLDER, NAME = "office", "minutes.odt"
# LibreOffice's first start makes its profile: tens of seconds on a busy 2-core machine.
START_TIMEOUT = 180
ANSWER_TIMEOUT = 120


def unavailable():
    """Why LibreOffice cannot be driven here, or None."""
    if not shutil.which("soffice"):
        return "soffice not installed (apt-get install libreoffice-writer-nogui python3-uno)"
    if not os.path.exists(PYTHON) or subprocess.run([PYTHON, "-c", "import uno"], stdout=subprocess.DEVNULL,
                                                    stderr=subprocess.DEVNULL, timeout=60).returncode != 0:
        return "python3-uno not installed (apt-get install python3-uno)"
    return None


class Office:
    """The helper and its LibreOffice, with a profile of their own; `close` always ends both."""

    def __init__(self, profile):
        self.process = subprocess.Popen([PYTHON, str(HELPER), str(profile)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
                                        umask=MEASURED_UMASK)
        self.buffer = b""
        try:
            ready = self.line(START_TIMEOUT)
        except BenchFailure:
            self.close()
            raise
        if ready != "ready":
            self.close()
            raise BenchFailure(f"LibreOffice did not start: {ready}")

    def line(self, timeout):
        """The helper's next line, waiting up to `timeout` seconds (None: not waiting)."""
        deadline = time.monotonic() + (timeout or 0)
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            readable, _, _ = select.select([self.process.stdout], [], [], max(left, 0))
            if not readable:
                if timeout is None:
                    return None
                raise BenchFailure(f"LibreOffice did not answer within {timeout} s")
            chunk = os.read(self.process.stdout.fileno(), 4096)
            if not chunk:
                raise BenchFailure("LibreOffice's helper ended")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode(errors="replace")

    def send(self, command):
        self.process.stdin.write((command + "\n").encode())
        self.process.stdin.flush()

    def ask(self, command, expected):
        self.send(command)
        answer = self.line(ANSWER_TIMEOUT)
        if not answer.startswith(expected):
            raise BenchFailure(f"LibreOffice, {command.split()[0]}: {answer}")
        return answer

    def close(self):
        """`quit`, then up to 40 s for LibreOffice to end; then its whole tree is stopped."""
        if self.process.poll() is None:
            try:
                self.send("quit")
            except OSError:
                pass
            try:
                self.process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                procs.kill_tree(self.process.pid)
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(self.process.pid, signal.SIGKILL)
                    self.process.wait(timeout=10)
        # soffice.bin outlives a helper killed above: its process group goes too.
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


def document_text(content):
    """The text of an ODF document's content.xml, or b"" when it is not a whole document."""
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            return archive.read("content.xml")
    except (zipfile.BadZipFile, KeyError, OSError):
        return b""


def save(office, path, marker):
    """Opens `path`, appends `marker`, stores; returns store()'s seconds and when it began
    (perf_counter), leaving the document open."""
    office.ask(f"open {path}", "opened readonly=False")
    office.send(f"save {marker}")
    answer = office.line(ANSWER_TIMEOUT)
    if answer != "storing":
        raise BenchFailure(f"LibreOffice, save: {answer}")
    return time.perf_counter()


def stored(answer):
    if not answer.startswith("stored "):
        raise BenchFailure(f"LibreOffice, store(): {answer}")
    return float(answer.split()[1])


def office_save(world, rec):
    s, t, server = world.s, world.s.op_timeout, world.server
    label = "LibreOffice store() of a document"
    why = unavailable()
    if why:
        rec.skipped(label, why)
        return
    world.ensure_mounted()
    mounted = world.site_dir / FOLDER / NAME
    local = world.local / FOLDER / NAME
    if not local.exists():
        local.parent.mkdir(exist_ok=True)
        shutil.copy(world.seed / FOLDER / NAME, local)
    returned, on_server, local_store = Samples(), Samples(), Samples()
    new_versions = []
    profile = world.work / f"office-profile-{server.key}"
    started_office = time.perf_counter()
    office = Office(profile)
    log(f"  LibreOffice answers after {time.perf_counter() - started_office:.1f} s")
    try:
        for run in range(1, s.runs + 1):
            marker = f"Saved by the sitefs bench, run {run} on {server.key}."
            versions = server.versions(f"{FOLDER}/{NAME}") if server.key == "sitefs" else None
            watch = server.watch([FOLDER])
            try:
                before = watch.files(FOLDER)[NAME].tag
                checked = set()

                def saved():
                    found = (watch.files(FOLDER) or {}).get(NAME)
                    if found is None or found.tag == before or found.tag in checked:
                        return False
                    try:
                        content = watch.read(FOLDER, NAME)
                    except (BenchFailure, OSError, KeyError):
                        return False
                    checked.add(found.tag)
                    return marker.encode() in document_text(content)

                with world.operation(on_server, watch):
                    started = save(office, mounted, marker)
                    took, seen = None, None
                    while took is None or seen is None:
                        answer = office.line(None)
                        if answer is not None:
                            took = stored(answer)
                        if seen is None:
                            watch.poll()
                            if saved():
                                seen = time.perf_counter() - started
                        if time.perf_counter() - started > t:
                            raise BenchFailure(f"the save of {FOLDER}/{NAME}: "
                                               + ("store() did not return" if took is None else "not on the server")
                                               + f" within {t} s")
                        if took is None or seen is None:
                            time.sleep(0.005)
                log(f"  office-save run {run}/{s.runs}: store() returned after {took:.4f} s, on the server after {seen:.4f} s")
                returned.add(took)
                on_server.add(seen)
            finally:
                watch.close()
            office.ask("close", "closed")
            subprocess.run(world.sync_command() + ["--timeout", str(t)], check=True, timeout=t + 30,
                           stdout=subprocess.DEVNULL)
            held, saved_bytes = server.read(f"{FOLDER}/{NAME}"), mounted.read_bytes()
            if held != saved_bytes:
                raise BenchFailure(f"after close and sitefs sync, the server's {FOLDER}/{NAME} ({len(held)} bytes, "
                                   f"run {run}'s line {'in' if marker.encode() in document_text(held) else 'not in'} it) "
                                   f"is not what the mount holds ({len(saved_bytes)} bytes, the line "
                                   f"{'in' if marker.encode() in document_text(saved_bytes) else 'not in'} it)")
            if marker.encode() not in document_text(held):
                raise BenchFailure(f"the server's {FOLDER}/{NAME} does not have run {run}'s change")
            if versions is not None:
                new_versions.append(len(server.versions(f"{FOLDER}/{NAME}")) - len(versions))
                log(f"  new versions on the server: {new_versions[-1]}")

            save(office, local, marker)
            local_store.add(stored(office.line(ANSWER_TIMEOUT)))
            office.ask("close", "closed")
    finally:
        office.close()
    notes = on_server.notes() + "; no sitefs sync; issue 37: 0.5 s"
    rec.compare(f"{label}: until on the server", on_server, "local: the same store()", local_store, ("info",), notes)
    rec.compare(f"{label}: returned", returned, "local: the same store()", local_store, ("info",),
                "store()'s own time" + ("" if new_versions else "; WebDAV: no versions to count"))
    if new_versions:
        most, fewest = max(new_versions), min(new_versions)
        rec.figure("  new versions on the server per store()", most, "", target="1",
                   result="PASS" if most == fewest == 1 else "MISS",
                   notes=f"max of {s.runs} runs (min {fewest}, median {median(new_versions):g}); "
                         "counted after close + sitefs sync")

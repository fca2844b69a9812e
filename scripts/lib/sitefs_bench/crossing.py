"""The server-load case's last step, on the two instances of one PostgreSQL store it has just
loaded: how long a change made through instance A takes to reach a mount of instance B, with
the mount long-polling its change feed (`--change-wait 25`, the default) and with it polling
(`--change-wait 0`, every --poll-interval). B hears A's commit through PostgreSQL
(LISTEN/NOTIFY) and answers B's held request at once; a polling mount sees it at its next poll.
And, while the mount is idle, how many change-feed requests it sends B a minute in each mode.

Each run makes a new folder through A's API (urllib, as remote_change does, so the clock
starts at A's answer rather than at a curl process ending) and lists its parent on B's mount
every 5 ms until the folder is there. Before each run a pause of 0.2 s plus a random part of
up to one poll interval goes by (the same pauses in both modes): the long-poll is then always
re-armed and waiting, as it is when an edit comes along out of the blue, and a change lands at
a random point of the polling mount's interval instead of just after its poll.

The mount signs in to B as the store's user (`sitefs login`, the password on stdin) and lives
at its own mountpoint and cache under the bench's folder; it is unmounted however a run ends
(World.unmount: `sitefs unmount`, its --no-wait, then `fusermount3 -u -z`), and World.close
unmounts anything still mounted under that folder.
"""

import os
import random
import re
import shutil
import subprocess
import sys
import time

from .measure import BenchFailure, Samples, log, median
from .servers import api

# The polling mount's interval (the default, given explicitly: the pauses are drawn from it).
POLL_INTERVAL = 3.0
# The modes, in order: (key, the row's wording, `sitefs mount` options). The second is the
# first's baseline.
MODES = [
    ("long-poll", "long-poll", ["--change-wait", "25"]),
    ("polled", "polled (--change-wait 0)", ["--change-wait", "0", "--poll-interval", f"{POLL_INTERVAL:g}"]),
]
# A change through A that B's mount has not listed after this long is a failure.
LISTED_TIMEOUT = 60
# The site's folder the changes are made in: small, so reading its listing every 5 ms is cheap.
PARENT = "changes"
CHANGE_FEED = re.compile(r" GET /v1/changes\S* (\d{3}) \d+ (\d+)ms")


def idle_window(world):
    """Seconds the idle mount's change-feed requests are counted, from 1 s after the last
    change: long enough in a full run for the held request armed then (25 s) to end in it;
    quick runs shorten it, and long-poll then counts none."""
    return 10 if world.s.quick else 30


class BMount:
    """A mount of instance B at a mountpoint of its own, in one change-feed mode."""

    def __init__(self, world, url, key, options):
        self.world = world
        self.url = url
        self.mp = world.work / f"load-mnt-{key}"
        self.cache = world.work / f"load-mount-cache-{key}"
        self.log = world.work / f"load-daemon-{key}.log"
        self.options = options

    def start(self):
        self.mp.mkdir(exist_ok=True)
        shutil.rmtree(self.cache, ignore_errors=True)
        done = self.world.sitefs("mount", self.url, str(self.mp), "--cache-dir", str(self.cache), "--log-file",
                                 str(self.log), *self.world.s.mount_args, *self.options, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True, timeout=120)
        if done.returncode != 0:
            raise BenchFailure(f"sitefs mount of instance B failed: {done.stderr.strip()[-500:]}")
        if not self.world.is_mounted(self.mp):
            raise BenchFailure(f"sitefs mount returned but {self.mp} is not mounted")

    def stop(self):
        self.world.unmount(self.mp)

    @property
    def site(self):
        return self.mp / "Load"

    def log_tail(self):
        if not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-8:])


def until_listed(parent, name):
    """Seconds until `name` is in the listing of `parent`, read every 5 ms (bounded)."""
    start = time.monotonic()
    while name not in os.listdir(parent):
        if time.monotonic() - start > LISTED_TIMEOUT:
            raise BenchFailure(f"{name}, made through instance A, not listed by the mount on B within {LISTED_TIMEOUT} s")
        time.sleep(0.005)
    return time.monotonic() - start


def latencies(world, a_url, token, parent_id, mount, key, samples):
    """`runs` folders made through A, each timed from A's answer until B's mount lists it."""
    pauses = random.Random(20261127)  # the same pauses in both modes
    parent = mount.site / PARENT
    for run in range(1, world.s.runs + 1):
        time.sleep(0.2 + pauses.uniform(0, POLL_INTERVAL))
        name = f"from-a-{key}-{run}"
        api(a_url, "POST", f"/v1/items/{parent_id}/children", token, {"name": name, "kind": "folder"})
        seconds = samples.add(until_listed(parent, name))
        log(f"  remote change on A until listed on B ({key}) run {run}/{world.s.runs}: {seconds:.4f} s")


def change_feed_lines(log_path, offset):
    """(status, milliseconds) of each change-feed request B logged after `offset` (a request
    is logged once its answer has gone out: a held one when its wait ends)."""
    with open(log_path, "rb") as f:
        f.seek(offset)
        text = f.read().decode(errors="replace")
    return [(int(m.group(1)), int(m.group(2))) for m in map(CHANGE_FEED.search, text.splitlines()) if m]


def duration_text(ms):
    return f"{ms / 1000:.1f} s" if ms >= 1000 else f"{ms:.0f} ms"


def idle_requests(world, b_log, key):
    """B's change-feed requests while the mount sits idle for the window: (per minute, notes)."""
    window = idle_window(world)
    time.sleep(1)  # the last run's requests answered and logged
    offset = b_log.stat().st_size
    time.sleep(window)
    lines = change_feed_lines(b_log, offset)
    if any(status != 200 for status, _ in lines):
        raise BenchFailure(f"idle mount ({key}): change-feed answers other than 200: {sorted({s for s, _ in lines})}")
    per_minute = round(len(lines) * 60 / window, 1)
    notes = f"{len(lines)} in {window} s"
    if lines:
        notes += f", answered after {duration_text(median([ms for _, ms in lines]))} (median)"
    log(f"  idle mount on B ({key}): {notes}")
    return per_minute, notes


def prepare(world, instances, token, site, password):
    """The folder the changes go in (made through A) and the sign-in to B: the parent's id."""
    parent_id = api(instances[0].url, "POST", f"/v1/items/{site}/children", token, {"name": PARENT, "kind": "folder"})["id"]
    done = world.sitefs("login", instances[1].url, "--user", "bench", input=password + "\n", text=True,
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
    if done.returncode != 0:
        raise BenchFailure(f"sitefs login to instance B failed: {done.stderr.strip()[-500:]}")
    return parent_id


def measure_mode(world, instances, token, parent_id, key, options, samples):
    """Mounts B in one mode, times the runs, counts the idle requests, unmounts (whatever broke)."""
    mount = BMount(world, instances[1].url, key, options)
    try:
        mount.start()
        until_listed(mount.site, PARENT)
        os.listdir(mount.site / PARENT)  # listed, so what the mount knows of it is current
        latencies(world, instances[0].url, token, parent_id, mount, key, samples)
        figures = idle_requests(world, instances[1].log_path, key)
    except BaseException:
        tail = mount.log_tail()
        if tail:
            print(f"bench: the mount on B ({key}): its log ends with:\n{tail}", file=sys.stderr, flush=True)
        try:
            mount.stop()
        except BenchFailure as error:  # said, but the first error is the one raised
            print(f"bench: {error}", file=sys.stderr, flush=True)
        raise
    mount.stop()
    return figures


def remote_change(world, rec, instances, token, site, password):
    """The rows: the latency of a change crossing from A to B's mount, long-poll vs polling,
    then the idle mount's change-feed requests a minute in each mode."""
    parent_id = prepare(world, instances, token, site, password)
    samples = {key: Samples() for key, _, _ in MODES}
    idle = {}
    for key, _, options in MODES:
        log(f"server-load: a mount of instance B, {key}")
        idle[key] = measure_mode(world, instances, token, parent_id, key, options, samples[key])
    (held, held_label, _), (polled, polled_label, _) = MODES
    rec.compare(f"remote change on instance A until a mount on instance B lists it ({held_label})", samples[held],
                polled_label, samples[polled], ("info",),
                f"listing read every 5 ms; a pause of 0.2-{0.2 + POLL_INTERVAL:g} s before each change")
    (held_rate, held_notes), (polled_rate, polled_notes) = idle[held], idle[polled]
    rec.figure(f"  change-feed requests of the idle mount on B ({held_label})", held_rate, "req/min",
               baseline_label=polled_label, baseline_value=polled_rate,
               ratio_text=f"{held_rate / polled_rate:.2f}x" if polled_rate else "",
               notes=f"B's log, the mount idle: {held_notes}; polled: {polled_notes}; counted when answered "
                     "(a held request after up to 25 s)")

"""The bench's world: binaries, the seed, the server, the sign-in, the mount, API helpers.

Everything it starts and creates lives under one temporary directory and is removed by
`close` (even after a failure or a signal); nothing is left mounted; traffic goes to
127.0.0.1 only; secrets never appear on a command line (curl reads the token from a 0600
file, the sign-ins read the password on standard input).
"""

import base64
import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from . import procs
from .measure import BenchFailure, log

# Traffic stays on loopback: no proxy for curl, urllib or the daemon's libcurl.
for variable in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "ftp_proxy", "FTP_PROXY"):
    os.environ.pop(variable, None)
os.environ["no_proxy"] = os.environ["NO_PROXY"] = "*"
os.environ["LC_ALL"] = "C"
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class World:
    def __init__(self, settings, repository):
        self.s = settings
        self.repository = repository
        self.work = Path(tempfile.mkdtemp(prefix="sitefs-bench."))
        self.mp = self.work / "mnt"
        self.cache = self.work / "mount-cache"
        self.seed = self.work / "seed"
        self.local = self.work / "local"
        self.curl_dir = self.work / "curl"
        self.auth = self.work / "auth"
        for directory in (self.mp, self.work / "xdg-config", self.work / "xdg-cache", self.local, self.curl_dir):
            directory.mkdir(parents=True)
        self.bin = None
        self.server = None
        self.base = None
        self.token = None
        self.daemon_pid = None
        self.shm_dir = None
        self.seed_seconds = 0.0
        self.ids = {}

    # --- commands -----------------------------------------------------------------------

    @property
    def curl(self):
        return ["curl", "-q", "-sS", "--noproxy", "*", "--max-time", str(self.s.op_timeout)]

    @property
    def curl_auth(self):
        return self.curl + ["-H", f"@{self.auth}"]

    @property
    def site_dir(self):
        return self.mp / "Bench"

    def sitefs(self, *args, timeout=120, **kwargs):
        return subprocess.run([str(self.bin / "sitefs"), *args], timeout=timeout, **kwargs)

    # --- build, seed, serve ---------------------------------------------------------------

    def build(self):
        log(f"building ({self.s.config})")
        # One plain build of every product: one --product at a time plans again for each.
        with open(self.work / "build.log", "w") as out:
            result = subprocess.run(["swift", "build", "-c", self.s.config], cwd=self.repository, stdout=out,
                                    stderr=subprocess.STDOUT, timeout=3600)
        if result.returncode != 0:
            print((self.work / "build.log").read_text()[-4000:])
            raise BenchFailure(f"swift build -c {self.s.config} failed")
        path = subprocess.run(["swift", "build", "-c", self.s.config, "--show-bin-path"], cwd=self.repository,
                              capture_output=True, text=True, check=True, timeout=600).stdout.strip()
        self.bin = Path(path)
        # sitefs keeps its sign-in and default cache under these; set only now, SwiftPM uses them too.
        os.environ["XDG_CONFIG_HOME"] = str(self.work / "xdg-config")
        os.environ["XDG_CACHE_HOME"] = str(self.work / "xdg-cache")

    def make_seed(self):
        s = self.s
        log(f"seeding: {s.n_small} small files, {s.n_empty} empty files, a {s.big_mb} MiB file, documents")
        for name in ("small", "empty", "big", "docs", "write", "scratch", "curl"):
            (self.seed / name).mkdir(parents=True)
        for i in range(s.n_small):
            (self.seed / "small" / f"f{i:05d}.txt").write_text(f"small file {i} of the bench\n")
        for i in range(1, s.n_empty + 1):
            (self.seed / "empty" / f"e{i:06d}").touch()
        write_random(self.seed / "big" / "big.bin", s.big_mb << 20)
        docs = self.seed / "docs"
        notes = "".join(f"note {i:04d}: concrete pour on level {i % 40} checked, slump within tolerance\n" for i in range(1, 601))
        report = "row,level,room,status,inspector,remarks\n" + "".join(
            f"row {i},{i % 40},R{i % 300:03d},open,anna,awaiting sign-off\n" for i in range(1, 3001))
        plan = base64.encodebytes(os.urandom(160000)).decode()
        for name, text, size in (("notes.txt", notes, 20480), ("report.csv", report, 102400), ("plan.odt", plan, 204800)):
            data = text.encode()[:size]
            (docs / name).write_bytes(data + b"\0" * (size - len(data)))
        (self.seed / "write" / "target.bin").write_bytes(b"x")
        # The curl baselines change their own copies, so the mount's next edit never starts
        # from a version the curl baseline has just replaced.
        for source in (self.seed / "write" / "target.bin", docs / "report.csv", docs / "plan.odt"):
            shutil.copy(source, self.seed / "curl" / source.name)
        shutil.copytree(docs, self.local / "docs")  # the local baselines edit copies
        write_random(self.work / "write-src.bin", s.write_mb << 20)

    def import_and_serve(self):
        password = secrets.token_urlsafe(24)
        data = self.work / "data"
        # The import makes one fsynced transaction per file (minutes for 110,000 files on a
        # disk): on tmpfs when there is room, then the data directory is copied to the disk
        # the server runs on. Nothing has it open in between, so the copy is consistent.
        import_data = data
        if os.path.isdir("/dev/shm"):
            stat = os.statvfs("/dev/shm")
            if stat.f_bavail * stat.f_frsize > (self.s.big_mb + 1024) << 20:
                self.shm_dir = Path(tempfile.mkdtemp(prefix="sitefs-bench-seed.", dir="/dev/shm"))
                import_data = self.shm_dir / "data"
        server = str(self.bin / "sitefs-server")
        started = time.perf_counter()
        subprocess.run([server, "user", "add", "bench", "--data", str(import_data)], input=password + "\n", text=True,
                       stdout=subprocess.DEVNULL, check=True, timeout=120)
        with open(self.work / "import.log", "w") as out:
            subprocess.run([server, "site", "add", "Bench", "--data", str(import_data), "--import", str(self.seed)],
                           stdout=out, check=True, timeout=3600)
        subprocess.run([server, "grant", "bench", "Bench", "--data", str(import_data)], stdout=subprocess.DEVNULL,
                       check=True, timeout=120)
        if import_data != data:
            shutil.copytree(import_data, data, symlinks=True)
            shutil.rmtree(self.shm_dir)
            self.shm_dir = None
        self.seed_seconds = time.perf_counter() - started
        last = (self.work / "import.log").read_text().strip().splitlines()[-1:]
        log(f"import: {' '.join(last)} in {self.seed_seconds:.1f} s{' (on tmpfs, then copied)' if import_data != data else ''}")

        out = open(self.work / "server.out", "w")
        err = open(self.work / "server.log", "w")
        self.server = subprocess.Popen([server, "serve", "--data", str(data), "--host", "127.0.0.1", "--port", "0"],
                                       stdout=out, stderr=err)
        deadline = time.monotonic() + 60
        line = None
        while time.monotonic() < deadline and self.server.poll() is None:
            match = re.search(r"^listening on (\S+)$", (self.work / "server.out").read_text(), re.M)
            if match:
                line = match.group(1)
                break
            time.sleep(0.1)
        if line is None:
            raise BenchFailure("the server did not start: " + (self.work / "server.log").read_text()[-2000:])
        if not re.fullmatch(r"http://127\.0\.0\.1:[0-9]+", line):
            raise BenchFailure(f"the server is not on 127.0.0.1: {line}")
        self.base = line
        log(f"server {self.base} (pid {self.server.pid})")

        answer = self.request("POST", "/v1/session", {"username": "bench", "password": password}, authorized=False)
        self.token = answer["token"]
        fd = os.open(self.auth, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"Authorization: Bearer {self.token}\n")
        self.sitefs("login", self.base, "--user", "bench", input=password + "\n", text=True, stdout=subprocess.DEVNULL,
                    check=True, timeout=60)

        site = self.request("GET", "/v1/sites")["items"][0]["id"]
        ids = {"site": site}
        for name in ("small", "empty", "docs", "scratch", "curl"):
            ids[name] = self.child_id(site, name)
        ids["big"] = self.child_id(self.child_id(site, "big"), "big.bin")
        ids["target"] = self.child_id(self.child_id(site, "write"), "target.bin")
        ids["report"] = self.child_id(ids["docs"], "report.csv")
        ids["plan"] = self.child_id(ids["docs"], "plan.odt")
        for name, file in (("curl_target", "target.bin"), ("curl_report", "report.csv"), ("curl_plan", "plan.odt")):
            ids[name] = self.child_id(ids["curl"], file)
        self.ids = ids

    # --- the API, for setting up and checking (never timed) -----------------------------

    def request(self, method, path, body=None, authorized=True, raw=False, headers=None):
        request = urllib.request.Request(self.base + path, method=method)
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            request.add_header("Content-Type", "application/json")
        if authorized:
            request.add_header("Authorization", f"Bearer {self.token}")
        for key, value in (headers or {}).items():
            request.add_header(key, value)
        try:
            with NO_PROXY.open(request, data=data, timeout=60) as response:
                payload = response.read()
        except urllib.error.HTTPError as error:
            raise BenchFailure(f"HTTP {error.code} for {method} {path}: {error.read()[:300]!r}")
        if raw:
            return payload
        return json.loads(payload) if payload else None

    def children(self, folder):
        """(id, name) of every child, following next_cursor (bounded)."""
        result, cursor = [], None
        for _ in range(100000):
            query = {"limit": 1000}
            if cursor:
                query["cursor"] = cursor
            page = self.request("GET", f"/v1/items/{folder}/children?{urllib.parse.urlencode(query)}")
            result += [(item["id"], item["name"]) for item in page["items"]]
            cursor = page.get("next_cursor")
            if not cursor:
                return result
        raise BenchFailure(f"listing of {folder} does not end")

    def child_id(self, folder, name):
        for identifier, child in self.children(folder):
            if child == name:
                return identifier
        raise BenchFailure(f"no item {name!r} in folder {folder}")

    def item(self, identifier):
        return self.request("GET", f"/v1/items/{identifier}")

    def content(self, identifier, byte_range=None):
        headers = {"Range": f"bytes={byte_range}"} if byte_range else None
        return self.request("GET", f"/v1/items/{identifier}/content", raw=True, headers=headers)

    def page_urls(self, folder):
        """The URLs of a folder's listing pages at the mount's page size, in order."""
        urls, cursor = [], None
        for _ in range(100000):
            query = {"limit": self.s.page_size}
            if cursor:
                query["cursor"] = cursor
            path = f"/v1/items/{folder}/children?{urllib.parse.urlencode(query)}"
            urls.append(self.base + path)
            cursor = self.request("GET", path).get("next_cursor")
            if not cursor:
                return urls
        raise BenchFailure(f"listing of {folder} does not end")

    def curl_config(self, name, settings, urls):
        """A curl config file: one curl process, one connection, a request to each URL with
        the token's header and `settings`, every body discarded."""
        lines = [f'header = "@{self.auth}"'] + settings
        for url in urls:
            lines += [f'url = "{url}"', 'output = "/dev/null"']
        path = self.curl_dir / name
        path.write_text("".join(line + "\n" for line in lines))
        return path

    # --- the server's log: requests an operation made -----------------------------------

    def log_offset(self):
        return (self.work / "server.log").stat().st_size

    def requests_since(self, offset):
        """Server requests logged after `offset`, change-feed polls excluded."""
        time.sleep(0.2)  # a request is logged once its response body has gone out
        with open(self.work / "server.log", "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
        pattern = re.compile(r" (GET|POST|PUT|PATCH|DELETE) /v1/")
        return sum(1 for line in text.splitlines() if pattern.search(line) and "/v1/changes" not in line)

    @contextmanager
    def operation(self, samples):
        """Around one operation on the mount: its daemon CPU, peak RSS and server requests
        go to `samples`."""
        cpu, offset = procs.cpu_seconds(self.daemon_pid), self.log_offset()
        yield
        samples.cpu.append(procs.cpu_seconds(self.daemon_pid) - cpu)
        samples.requests.append(self.requests_since(offset))
        samples.peak_kib.append(procs.status_kib(self.daemon_pid, "VmHWM"))

    # --- the mount ------------------------------------------------------------------------

    def is_mounted(self):
        with open("/proc/self/mounts") as f:
            return any(line.split()[1] == str(self.mp) for line in f)

    def find_daemon(self):
        mp = str(self.mp)
        return procs.find_process(lambda a: len(a) > 4 and a[1] == "mount" and a[3] == mp and a[4] == "--daemon-child")

    def unmount(self):
        """Normal unmount (waits for uploads), fallbacks, and the daemon is gone after."""
        pid = self.find_daemon()
        if self.is_mounted():
            result = self.sitefs("unmount", str(self.mp), "--timeout", "300", timeout=330, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
            if result.returncode != 0:
                log(f"sitefs unmount failed: {result.stderr.strip()}")
                fallback = self.sitefs("unmount", "--no-wait", str(self.mp), timeout=30, capture_output=True)
                if fallback.returncode != 0:
                    subprocess.run(["fusermount3", "-u", "-z", str(self.mp)], timeout=30)
        if pid and not procs.stop(pid, 60):
            raise BenchFailure(f"the mount daemon (pid {pid}) does not end")
        if self.is_mounted():
            raise BenchFailure(f"{self.mp} is still mounted")

    def mount_cold(self):
        """A fresh mount with an empty cache."""
        self.unmount()
        shutil.rmtree(self.cache, ignore_errors=True)
        self.sitefs("mount", self.base, str(self.mp), "--cache-dir", str(self.cache), "--log-file",
                    str(self.work / "daemon.log"), *self.s.mount_args, stdout=subprocess.DEVNULL, check=True)
        if not self.is_mounted():
            raise BenchFailure(f"sitefs mount returned but {self.mp} is not mounted")
        self.daemon_pid = self.find_daemon()
        if not self.daemon_pid:
            raise BenchFailure(f"no daemon process for {self.mp}")
        time.sleep(0.5)  # the first change-feed poll passes: cold means an empty cache, not a mount in progress

    def ensure_mounted(self):
        """Warm cases keep the current mount when there is one."""
        if self.is_mounted():
            self.daemon_pid = self.find_daemon()
            if self.daemon_pid:
                return
        self.mount_cold()

    def warm_path(self, path):
        """Cold cases compare with requests that already know the item's id: the walk to it
        (the site's and parents' listings) is done untimed first."""
        os.stat(path)

    def sync_command(self):
        return [str(self.bin / "sitefs"), "sync", str(self.mp)]

    # --- the end ----------------------------------------------------------------------------

    def close(self):
        """Unmounts, stops what it started and removes the work directory (kept with
        SITEFS_BENCH_KEEP=1). False when something stayed mounted."""
        if self.bin and self.is_mounted():
            self.sitefs("unmount", "--no-wait", str(self.mp), timeout=30, capture_output=True)
        if self.is_mounted():
            subprocess.run(["fusermount3", "-u", "-z", str(self.mp)], timeout=30)
        pid = self.find_daemon()
        if pid:
            procs.stop(pid, 10)
        if self.server and self.server.poll() is None:
            procs.stop(self.server.pid, 0)
            self.server.wait(timeout=10)
        if self.shm_dir:
            shutil.rmtree(self.shm_dir, ignore_errors=True)
        with open("/proc/self/mounts") as f:
            if any(line.split()[1].startswith(str(self.work) + "/") for line in f):
                print(f"bench: something is still mounted under {self.work}; not deleting it")
                return False
        if self.s.keep:
            log(f"kept {self.work}")
        else:
            shutil.rmtree(self.work, ignore_errors=True)
        return True


def write_random(path, size):
    with open(path, "wb") as f:
        left = size
        while left:
            chunk = min(left, 1 << 20)
            f.write(os.urandom(chunk))
            left -= chunk

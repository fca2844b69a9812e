"""The server-load case: sitefs-server alone under wrk, no mount. How many listing and upload
requests per second it answers with its metadata in SQLite (the baseline), in PostgreSQL,
and in PostgreSQL shared by two instances on this machine, and what the CPU went to meanwhile
(on a small machine the load tool, the servers and PostgreSQL share the same cores: that,
not the server, is usually the limit here). Then, while the two instances still run, the one
mount of the case (see crossing): a change made through one instance reaching a mount of the
other, long-poll vs polling.

Each configuration gets a fresh store: a user, a site imported from a folder of small files,
the user granted it. Every configuration sees the same load: `connections` HTTP/1.1
keep-alive connections from wrk's threads (one wrk for one instance; two at once, each with
half the connections and threads, for two), for `load_seconds` per run. The requests are
built by a wrk Lua script written to the bench's directory (0600: it holds the token): the
Authorization header, the method, the body, and a `done` hook printing wrk's figures in a
line this module parses.

PostgreSQL is a throwaway cluster of the bench's own, made like scripts/lib/postgres-cluster.sh
makes one (initdb, pg_ctl, the `postgres` account when root) but with fsync on: SQLite runs
with synchronous=FULL, and a PostgreSQL that skips its WAL flushes would win the upload rows
for the wrong reason. A watchdog shell started before initdb stops the cluster and deletes
its folder when the bench tells it to, or when its standard input ends because the bench
died, however it died. The servers run under setpriv --pdeathsig TERM for the same reason.
"""

import os
import pwd
import re
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import crossing, procs
from .measure import BenchFailure, log, median
from .servers import api, write_private

# The same total load everywhere: two instances get half each.
CONNECTIONS = 8
THREADS = 2
LISTING_LIMIT = 100
UPLOAD_BYTES = 4096
# Files the upload rows PUT to, in turn (a new version of each every few requests).
UPLOAD_FILES = 8
# wrk's request timeout: a request slower than this is an error, not a latency.
WRK_TIMEOUT = 10

# The rows' configurations, in order: (key, label, store engine, instances). The first is the
# baseline of the others.
CONFIGURATIONS = [
    ("sqlite", "SQLite, 1 instance", "sqlite", 1),
    ("pg1", "PostgreSQL, 1 instance", "postgres", 1),
    ("pg2", "PostgreSQL, 2 instances", "postgres", 2),
]


# --- tools ----------------------------------------------------------------------------------

def install_missing():
    """wrk (and PostgreSQL, for its rows) from Debian when root and missing, as scripts/test
    installs its packages; one at a time, so PostgreSQL failing to install leaves wrk. Returns
    why wrk cannot run here, or None. A failed install is a SKIP with its reason, not a
    failure: the other cases' figures stand."""
    missing = [package for package, present in (("wrk", shutil.which("wrk")), ("postgresql", postgres_bin()))
               if not present]
    if missing and os.geteuid() == 0:
        if "postgresql" in missing and not os.path.exists("/etc/postgresql-common/createcluster.conf"):
            # Debian's postgresql would make and start a cluster on port 5432; the bench makes its own.
            os.makedirs("/etc/postgresql-common", exist_ok=True)
            Path("/etc/postgresql-common/createcluster.conf").write_text("create_main_cluster = false\n")
        updated = False
        for package in missing:
            log(f"server-load: installing {package} (apt-get)")
            if not apt_install(package) and not updated:  # a stale package list: update it once, then try again
                updated = True
                apt_run(["apt-get", "update", "-qq"])
                apt_install(package)
    if shutil.which("wrk"):
        return None
    if os.geteuid() != 0:
        return "wrk is not installed and the bench is not root (apt-get install wrk)"
    return "wrk is not installed and apt-get install wrk failed (see the log above)"


def apt_run(command):
    """True when the apt-get command succeeded; its error is logged, not raised."""
    try:
        done = subprocess.run(command, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}, capture_output=True,
                              text=True, timeout=900)
    except subprocess.TimeoutExpired:
        log(f"server-load: {' '.join(command)} timed out")
        return False
    if done.returncode != 0:
        log(f"server-load: {' '.join(command)} failed: {done.stderr.strip()[-500:]}")
    return done.returncode == 0


def apt_install(package):
    return apt_run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", package])


def postgres_bin():
    """The newest /usr/lib/postgresql/*/bin with initdb and pg_ctl, or None."""
    found = []
    for version in os.listdir("/usr/lib/postgresql") if os.path.isdir("/usr/lib/postgresql") else []:
        path = Path("/usr/lib/postgresql") / version / "bin"
        if version.isdigit() and (path / "initdb").exists() and (path / "pg_ctl").exists():
            found.append((int(version), path))
    return max(found)[1] if found else None


def postgres_unavailable():
    """Why the PostgreSQL rows cannot run here, or None."""
    if not postgres_bin() or not shutil.which("psql"):
        return "PostgreSQL is not installed (apt-get install postgresql)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "PostgreSQL refuses to run as root, and there is no 'postgres' account to run it as"
    return None


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- PostgreSQL -----------------------------------------------------------------------------

class PostgresCluster:
    """A throwaway cluster on 127.0.0.1 (see the module's docstring). `url` and `password`
    once started; `stop` is safe to call twice."""

    def __init__(self):
        self.bin = postgres_bin()
        self.directory = None
        self.watchdog = None
        self.url = None
        self.password = None
        self.port = None
        # Run as `postgres` when root (PostgreSQL refuses root); in its folder, which the
        # `postgres` account can enter (the bench's own cannot be).
        self.as_owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def pg_ctl(self, *args, timeout=60):
        return subprocess.run([*self.as_owner, str(self.bin / "pg_ctl"), "-D", str(self.directory / "data"), *args],
                              cwd=self.directory, capture_output=True, text=True, timeout=timeout,
                              start_new_session=True)

    def start(self):
        self.directory = Path(tempfile.mkdtemp(prefix="sitefs-bench-pg."))
        # The watchdog first, so whatever happens below leaves nothing running. A line on its
        # input is `stop` from here; the end of its input without one means the bench died:
        # it then gives the servers (SIGTERM by their parent-death signal) a few seconds to
        # end before their database goes (one stuck in a query of a vanished database does
        # not end on SIGTERM).
        stop = ('read -r _ || sleep 3; cd "$1" && '
                f'timeout 60 {" ".join(self.as_owner)} "$2/pg_ctl" -D "$1/data" -m immediate -w -t 30 stop '
                '>/dev/null 2>&1; cd / && rm -rf "$1"')
        self.watchdog = subprocess.Popen(["bash", "-c", stop, "_", str(self.directory), str(self.bin)],
                                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         start_new_session=True)
        if self.as_owner:
            shutil.chown(self.directory, "postgres", "postgres")
        self.password = secrets.token_hex(16)
        password_file = self.directory / "password"
        write_private(password_file, self.password + "\n")
        if self.as_owner:
            shutil.chown(password_file, "postgres", "postgres")
        initdb = subprocess.run([*self.as_owner, str(self.bin / "initdb"), "-D", str(self.directory / "data"), "-U", "sitefs",
                                 "--auth=scram-sha-256", f"--pwfile={password_file}", "-E", "UTF8", "--locale=C.UTF-8",
                                 "--no-sync"],
                                cwd=self.directory, capture_output=True, text=True, timeout=120)
        password_file.unlink()
        if initdb.returncode != 0:
            raise BenchFailure(f"initdb failed: {initdb.stdout[-1000:]}{initdb.stderr[-1000:]}")
        # The port is free when picked; another process may bind it first (the server then exits).
        for _ in range(3):
            self.port = free_port()
            started = self.pg_ctl("-l", str(self.directory / "log"), "-o",
                                  f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c max_connections=100",
                                  "-w", "-t", "30", "start")
            if started.returncode == 0:
                self.url = f"postgres://sitefs@127.0.0.1:{self.port}"
                return
            self.pg_ctl("-m", "immediate", "-w", "-t", "30", "stop")
        log_text = (self.directory / "log").read_text(errors="replace")[-1500:] if (self.directory / "log").exists() else ""
        raise BenchFailure(f"PostgreSQL did not start: {started.stderr.strip()[-500:]} {log_text}")

    @property
    def environment(self):
        """The password for psql and sitefs-server: in their environment, never their arguments."""
        return {**os.environ, "PGPASSWORD": self.password}

    def create_database(self, name):
        subprocess.run(["psql", "-q", "-h", "127.0.0.1", "-p", str(self.port), "-U", "sitefs", "-d", "postgres",
                        "-v", "ON_ERROR_STOP=1", "-c", f"CREATE DATABASE {name}"],
                       env=self.environment, check=True, capture_output=True, timeout=60)
        return f"{self.url}/{name}"

    def version(self):
        out = subprocess.run([str(self.bin / "postgres"), "--version"], capture_output=True, text=True, timeout=30).stdout
        match = re.search(r"(\d+(?:\.\d+)*)", out)
        return match.group(1) if match else "?"

    def postmaster_pid(self):
        try:
            return int((self.directory / "data" / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def cpu_by_process(self):
        """CPU seconds of the postmaster and each of its children (the connections' backends,
        the WAL writer, the checkpointer) by pid: PostgreSQL's share of the machine."""
        master = self.postmaster_pid()
        if not master:
            return {}
        result = {}
        for pid in [master, *procs.children_of(master)]:
            try:
                result[pid] = procs.cpu_seconds(pid)
            except (OSError, IndexError):
                pass
        return result

    def stop(self):
        """Tells the watchdog to stop the cluster and delete its folder. If it does not end in
        time, by the postmaster's pid and from here."""
        if not self.watchdog:
            return
        watchdog, self.watchdog = self.watchdog, None
        try:
            watchdog.stdin.write(b"stop\n")
            watchdog.stdin.close()
        except OSError:
            pass
        try:
            watchdog.wait(timeout=90)
        except subprocess.TimeoutExpired:
            watchdog.kill()
            watchdog.wait(timeout=10)
        master = self.postmaster_pid()
        if master and procs.alive(master):
            os.kill(master, signal.SIGKILL)  # its backends see it gone and exit
        shutil.rmtree(self.directory, ignore_errors=True)


# --- a store and its servers ----------------------------------------------------------------

class Store:
    """Where one configuration keeps its data: a SQLite data folder, or a PostgreSQL database
    with a blob folder its instances share. `arguments` are sitefs-server's storage flags."""

    def __init__(self, world, key, cluster=None):
        self.world = world
        self.directory = world.work / f"load-{key}"
        self.directory.mkdir()
        self.environment = dict(os.environ)
        if cluster:
            url = cluster.create_database(f"bench_{key}")
            self.arguments = ["--database", url, "--blobs", str(self.directory / "blobs")]
            self.environment = cluster.environment
        else:
            self.arguments = ["--data", str(self.directory / "data")]

    def admin(self, *args, input=None):
        out = subprocess.run([str(self.world.bin / "sitefs-server"), *args, *self.arguments], input=input, text=True,
                             env=self.environment, capture_output=True, timeout=600)
        if out.returncode != 0:
            raise BenchFailure(f"sitefs-server {' '.join(args[:2])} failed: {out.stderr.strip()[-1000:]}")

    def seed(self, folder, password):
        """A user, the site "Load" imported from `folder`, the user granted it."""
        self.admin("user", "add", "bench", input=password + "\n")
        self.admin("site", "add", "Load", "--import", str(folder))
        self.admin("grant", "bench", "Load")


class Instance:
    """One `sitefs-server serve` on the store, on a port of its own. Under setpriv
    --pdeathsig when there is one: it gets SIGTERM if the bench dies without stopping it."""

    def __init__(self, store, index):
        self.store = store
        self.name = f"{store.directory.name}-{index}"
        self.process = None
        self.url = None

    @property
    def log_path(self):
        """Its standard error: a line per request it answered."""
        return self.store.world.work / f"{self.name}.log"

    def start(self):
        w = self.store.world
        out_path, log_path = w.work / f"{self.name}.out", self.log_path
        with open(out_path, "w") as out, open(log_path, "w") as err:
            guard = ["setpriv", "--pdeathsig", "TERM", "--"] if shutil.which("setpriv") else []  # it execs: same pid
            self.process = subprocess.Popen([*guard, str(w.bin / "sitefs-server"), "serve", *self.store.arguments, "--host",
                                             "127.0.0.1", "--port", "0"], stdout=out, stderr=err,
                                            env=self.store.environment)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.process.poll() is None:
            match = re.search(r"^listening on (http://127\.0\.0\.1:[0-9]+)$", out_path.read_text(), re.M)
            if match:
                self.url = match.group(1)
                return
            time.sleep(0.02)
        raise BenchFailure(f"sitefs-server ({self.name}) did not start: " + log_path.read_text(errors="replace")[-1500:])

    @property
    def pid(self):
        return self.process.pid

    def stop(self):
        if self.process and self.process.poll() is None:
            procs.stop(self.process.pid, 0)
            self.process.wait(timeout=10)


# --- wrk ------------------------------------------------------------------------------------

def lua_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def wrk_script(path, token, method, paths, body=None):
    """The Lua script of one kind of request: the Authorization header, the method, the body;
    several paths are taken in turn, starting at the offset given after `--` (so two wrk
    processes do not start on the same file). `done` prints the figures as one line."""
    lines = [
        f"wrk.method = {lua_string(method)}",
        f"wrk.headers[\"Authorization\"] = {lua_string('Bearer ' + token)}",
    ]
    if body is not None:
        lines += ['wrk.headers["Content-Type"] = "application/octet-stream"', f"wrk.body = string.rep(\"x\", {len(body)})"]
    lines += [
        f"local paths = {{{', '.join(lua_string(p) for p in paths)}}}",
        "local prepared = {}",
        "local turn = 0",
        "function init(args)",
        "  turn = tonumber(args[1] or \"0\")",
        "  for i, p in ipairs(paths) do prepared[i] = wrk.format(nil, p) end",
        "end",
        "function request()",
        "  turn = turn + 1",
        "  return prepared[turn % #prepared + 1]",
        "end",
        "function done(summary, latency, requests)",
        "  local e = summary.errors",
        "  io.write(string.format(\"SITEFS-BENCH %d %d %d %d %d %d %d %d %d\\n\", summary.requests, summary.duration,",
        "    e.connect, e.read, e.write, e.status, e.timeout, latency:percentile(50), latency:percentile(99)))",
        "end",
    ]
    write_private(path, "\n".join(lines) + "\n")
    return path


def parse_wrk(text, what):
    """wrk's figures from the `done` line: requests, microseconds, errors, p50/p99 (us)."""
    match = re.search(r"^SITEFS-BENCH ((?:\d+ ?){9})$", text, re.M)
    if not match:
        raise BenchFailure(f"{what}: no figures in wrk's output: {text[-500:]}")
    requests, duration, connect, read, write, status, timeout, p50, p99 = map(int, match.group(1).split())
    errors = {"connect": connect, "read": read, "write": write, "non-2xx": status, "timeout": timeout}
    if any(errors.values()):
        raise BenchFailure(f"{what}: wrk counted errors: {', '.join(f'{k} {v}' for k, v in errors.items() if v)}")
    return {"requests": requests, "seconds": duration / 1e6, "p50_ms": p50 / 1000, "p99_ms": p99 / 1000}


def machine_busy():
    """(busy, total) jiffies of all CPUs since boot, from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:9]]  # user .. steal (guest time is in user already)
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def run_wrk(world, instances, script, seconds, what, cluster=None):
    """One measured load: a wrk per instance at once, the connections and threads split
    evenly, for `seconds`. Returns the summed requests/s, the worst p50/p99 of the wrks, and
    the CPU seconds of each server, of PostgreSQL and of wrk during it, and how busy the
    machine was."""
    share = len(instances)
    servers_before = [procs.cpu_seconds(i.pid) for i in instances]
    postgres_before = cluster.cpu_by_process() if cluster else {}
    wrk_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy_before = machine_busy()
    running = []
    try:
        for index, instance in enumerate(instances):
            out = open(world.work / f"wrk-{index}.out", "w")
            command = ["wrk", "-t", str(THREADS // share), "-c", str(CONNECTIONS // share), "-d", f"{seconds}s",
                       "--timeout", f"{WRK_TIMEOUT}s", "-s", str(script), instance.url, "--", str(index * UPLOAD_FILES // share)]
            running.append((subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT), out))
        for process, out in running:
            try:
                code = process.wait(timeout=seconds + 60)
            except subprocess.TimeoutExpired:
                raise BenchFailure(f"{what}: wrk did not end {seconds + 60} s after it started")
            if code != 0:
                raise BenchFailure(f"{what}: wrk exit {code}: {Path(out.name).read_text()[-500:]}")
    finally:
        for process, out in running:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
            out.close()
    busy_after, wrk_after = machine_busy(), resource.getrusage(resource.RUSAGE_CHILDREN)
    postgres_after = cluster.cpu_by_process() if cluster else {}
    figures = [parse_wrk((world.work / f"wrk-{index}.out").read_text(), what) for index in range(share)]
    return {
        "rate": sum(f["requests"] / f["seconds"] for f in figures),
        "p50_ms": max(f["p50_ms"] for f in figures),
        "p99_ms": max(f["p99_ms"] for f in figures),
        "server_cpu": [procs.cpu_seconds(i.pid) - before for i, before in zip(instances, servers_before)],
        "postgres_cpu": sum(cpu - postgres_before.get(pid, 0.0) for pid, cpu in postgres_after.items()),
        "wrk_cpu": (wrk_after.ru_utime + wrk_after.ru_stime) - (wrk_before.ru_utime + wrk_before.ru_stime),
        "busy": (busy_after[0] - busy_before[0]) / max(1, busy_after[1] - busy_before[1]),
    }


# --- the case -------------------------------------------------------------------------------

def make_seed(world):
    """The site's folder: `load_files` small files, made once for every store."""
    folder = world.work / "load-seed"
    folder.mkdir()
    for i in range(world.s.load_files):
        (folder / f"f{i:04d}.txt").write_text(f"small file {i} of the server-load case\n")
    return folder


def start_configuration(world, key, engine, count, cluster, seed):
    """A fresh store seeded with the site, its instances serving, a session: (instances,
    token, site id, the upload targets' ids, seconds the seeding took, the user's password)."""
    store = Store(world, key, cluster if engine == "postgres" else None)
    password = secrets.token_urlsafe(24)
    started = time.perf_counter()
    store.seed(seed, password)
    seeded = time.perf_counter() - started
    instances = [Instance(store, index) for index in range(1, count + 1)]
    try:
        for instance in instances:
            instance.start()
        url = instances[0].url
        token = api(url, "POST", "/v1/session", body={"username": "bench", "password": password})["token"]
        site = api(url, "GET", "/v1/sites", token)["items"][0]["id"]
        page = api(instances[-1].url, "GET", f"/v1/items/{site}/children?limit={LISTING_LIMIT}", token)["items"]
        if len(page) != min(LISTING_LIMIT, world.s.load_files):
            raise BenchFailure(f"{key}: the listing page has {len(page)} entries, expected {LISTING_LIMIT}")
    except BaseException:
        for instance in instances:
            instance.stop()
        raise
    files = [item["id"] for item in page[:UPLOAD_FILES]]
    log(f"server-load: {key}: seeded {world.s.load_files} files in {seeded:.1f} s; "
        f"{count} instance(s) {' '.join(i.url for i in instances)}")
    return instances, token, site, files, seeded, password


def measure(world, instances, script, what, cluster):
    """`runs` wrk loads of the same kind: each figure's median over them."""
    results = []
    for run in range(1, world.s.runs + 1):
        result = run_wrk(world, instances, script, world.s.load_seconds, what, cluster)
        log(f"  {what} run {run}/{world.s.runs}: {result['rate']:.0f} req/s, p50 {result['p50_ms']:.2f} ms, "
            f"p99 {result['p99_ms']:.2f} ms, machine {100 * result['busy']:.0f}% busy")
        results.append(result)
    pick = lambda key: median([r[key] for r in results])  # noqa: E731
    return {"rate": pick("rate"), "p50_ms": pick("p50_ms"), "p99_ms": pick("p99_ms"), "postgres_cpu": pick("postgres_cpu"),
            "wrk_cpu": pick("wrk_cpu"), "busy": pick("busy"),
            "server_cpu": [median([r["server_cpu"][i] for r in results]) for i in range(len(instances))]}


def notes_of(figures, seconds):
    servers = " + ".join(f"{cpu:.2f}" for cpu in figures["server_cpu"])
    parts = [f"p50 {figures['p50_ms']:.2f} ms, p99 {figures['p99_ms']:.2f} ms",
             f"cpu s in {seconds} s: server{'s' if len(figures['server_cpu']) > 1 else ''} {servers}"]
    if figures["postgres_cpu"]:
        parts[-1] += f", postgres {figures['postgres_cpu']:.2f}"
    parts[-1] += f", wrk {figures['wrk_cpu']:.2f}; machine {100 * figures['busy']:.0f}% busy"
    return "; ".join(parts)


def run_configuration(world, rec, key, label, engine, count, cluster, seed, baselines, broken):
    """Seeds a store, serves it, and records its listing and upload rows; with two instances,
    then the rows of a change crossing from one to a mount of the other (see crossing)."""
    instances, token, site, files, seeded, password = start_configuration(world, key, engine, count, cluster, seed)
    try:
        listing = wrk_script(world.work / f"wrk-{key}-list.lua", token, "GET", [f"/v1/items/{site}/children?limit={LISTING_LIMIT}"])
        upload = wrk_script(world.work / f"wrk-{key}-put.lua", token, "PUT", [f"/v1/items/{f}/content" for f in files],
                            body=b"x" * UPLOAD_BYTES)
        # Untimed: every connection opened, the server's and the database's caches warm.
        run_wrk(world, instances, listing, 1, f"{key} warm-up", cluster)
        for kind, script, row in (("list", listing, f"list {LISTING_LIMIT} of {world.s.load_files}"),
                                  ("put", upload, f"PUT {UPLOAD_BYTES // 1024} KiB")):
            figures = measure(world, instances, script, f"{label}: {row}", cluster)
            rate = round(figures["rate"])
            notes = notes_of(figures, world.s.load_seconds)
            baseline = baselines.get(kind)
            if baseline is None:
                baselines[kind] = rate
                rec.figure(f"{row}: {label}", rate, "req/s", notes=notes)
            else:
                rec.figure(f"{row}: {label}", rate, "req/s", baseline_label=f"{CONFIGURATIONS[0][1]}", baseline_value=baseline,
                           ratio_text=f"{rate / baseline:.2f}x" if baseline else "", notes=notes)
        size = api(instances[0].url, "GET", f"/v1/items/{files[0]}", token)["size"]
        if size != UPLOAD_BYTES:
            raise BenchFailure(f"{key}: an uploaded file has {size} bytes on the server, expected {UPLOAD_BYTES}")
        if count == 2:
            cross_instances(world, rec, instances, token, site, password, broken)
    finally:
        for instance in instances:
            instance.stop()
    return seeded


def cross_instances(world, rec, instances, token, site, password, broken):
    """crossing's rows on the running instances. Its failure is a FAIL row of its own: the
    load rows above it stand."""
    try:
        crossing.remote_change(world, rec, instances, token, site, password)
    except (BenchFailure, OSError, ValueError, KeyError, subprocess.SubprocessError) as error:
        print(f"bench: server-load: remote change across instances: {error}", file=sys.stderr)
        broken.append("server-load remote change across instances")
        rec.failed("remote change on instance A until a mount on instance B lists it",
                   f"see the error above ({type(error).__name__})")


def server_load(world, rec, result):
    """The case: each configuration in turn, the SQLite single instance first (the others'
    baseline). A configuration that breaks is a FAIL row and the next one runs; rows are SKIP
    where a tool is missing. The cluster and every server are gone on return."""
    title = (f"sitefs-server under wrk, no mount: {CONNECTIONS} connections, {THREADS} wrk threads, "
             f"{world.s.load_seconds} s per run, {os.cpu_count()} CPUs shared by wrk, the servers and PostgreSQL; "
             "then a change across its two instances, to a mount")
    result["servers"]["server-load"] = title
    why = install_missing()
    if why:
        print(f"bench: server-load: {why}", file=sys.stderr)
        rec.skipped("server-load", why)
        return
    seed = make_seed(world)
    postgres_why = postgres_unavailable()
    cluster = None
    baselines = {}
    result["setup_seconds"]["server-load"] = 0.0
    try:
        for key, label, engine, count in CONFIGURATIONS:
            if engine == "postgres" and postgres_why:
                rec.skipped(f"server-load: {label}", postgres_why)
                continue
            log(f"server-load: {label}")
            try:
                if engine == "postgres" and cluster is None:
                    cluster = PostgresCluster()
                    cluster.start()
                    result["servers"]["server-load"] = title + f"; PostgreSQL {cluster.version()}, fsync on"
                    log(f"server-load: PostgreSQL {cluster.version()} on {cluster.url}")
                result["setup_seconds"]["server-load"] += run_configuration(world, rec, key, label, engine, count,
                                                                            cluster, seed, baselines, result["broken"])
            except (BenchFailure, OSError, ValueError, KeyError, subprocess.SubprocessError) as error:
                print(f"bench: server-load: {label}: {error}", file=sys.stderr)
                result["broken"].append(f"server-load {key}")
                rec.failed(f"server-load: {label}", f"see the error above ({type(error).__name__})")
                if engine == "postgres" and cluster and not cluster.url:
                    postgres_why = "PostgreSQL did not start (see the error above)"
    finally:
        if cluster:
            cluster.stop()

"""`scripts/bench [run]`, `scripts/bench compare A.json B.json`, `scripts/bench list`."""

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from . import extract, load, procs, report, search, servers
from .cases import all_cases
from .measure import BenchFailure, Recorder, log
from .settings import SERVER_CASES, Settings, SettingsError
from .world import World

USAGE = """Options of a run are environment variables:
  SITEFS_BENCH_CONFIG      release (default) or debug
  SITEFS_BENCH_RUNS        runs per case, medians reported (default 3)
  SITEFS_BENCH_QUICK       1: smaller sizes for a smoke run (1k/10k files, 32 MiB, 100 creates,
                           an offline session of 20 new files + 10 edits, 3 s offline, 50 files
                           in the Files window, 2 s wrk runs and a 10 s idle window for
                           server-load; a 10-page document for extract; search over 2,000
                           documents, 10 requests a query)
  SITEFS_BENCH_MB          size of the server upload case in MiB (default 1024; quick 128)
  SITEFS_BENCH_CASES       only these cases, space-separated (default all): upload ls-small
                           ls-empty stat head read write create-rm sed rename edit office-save
                           pin-small pin-large replay remote-change lock-crossing files-window
                           search-vs-find server-load search (servers of their own:
                           once, after the backends; alone, no seed is made and no backend's
                           turn runs) extract (the same: no seed, no server)
  SITEFS_BENCH_BACKEND     the servers the mount is measured against: all (default: sitefs, then
                           apache), sitefs (sitefs-server) or apache (Apache mod_dav, WebDAV);
                           server-load and search run only when sitefs is among them
  SITEFS_BENCH_MOUNT_ARGS  extra `sitefs mount` options, word-split
  SITEFS_BENCH_BIN         a folder with sitefs and sitefs-server to measure instead of building
                           (an earlier build kept for an A/B run; its JSON says which)
  SITEFS_BENCH_KEEP        1: keep the temporary directory (logs) after the run
  SITEFS_BENCH_RESULTS     where each run's JSON is kept (default bench-results/ in the repository)
"""


class Terminated(Exception):
    pass


def main(repository):
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__, epilog=USAGE,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("run", help="run the cases (the default)")
    compare = commands.add_parser("compare", help="print two kept runs side by side")
    compare.add_argument("a", type=Path)
    compare.add_argument("b", type=Path)
    listing = commands.add_parser("list", help="list the kept runs")
    listing.add_argument("directory", type=Path, nargs="?")
    args = parser.parse_args()

    try:
        settings = Settings.from_environment(repository)
    except SettingsError as error:
        print(f"bench: {error}", file=sys.stderr)
        return 2
    if args.command == "compare":
        try:
            report.compare(args.a, args.b)
        except (OSError, ValueError) as error:
            print(f"bench: {error}", file=sys.stderr)
            return 2
        return 0
    if args.command == "list":
        report.list_runs(args.directory or settings.results_dir)
        return 0
    return run(settings, repository)


def run(settings, repository):
    """Builds and seeds; for each backend serves the seed, mounts and runs each case; prints
    the table and keeps the JSON. A missed target is a report, not a failure: non-zero only
    when something broke."""
    def terminate(signum, frame):
        raise Terminated()
    signal.signal(signal.SIGTERM, terminate)
    os.umask(0o077)
    started = time.perf_counter()
    result = report.new_result(settings, repository)
    result["load_before"] = procs.load_average()  # other work on the machine makes the numbers noisy
    world = World(settings, repository)
    recorder = Recorder()
    status = 0
    try:
        # extract builds and runs the test bundle itself: alone, it needs no binaries.
        if settings.cases != ["extract"]:
            world.build()
        if all(case in SERVER_CASES for case in settings.cases):
            result["backends"] = []  # no mount case: no backend's turn runs
        else:
            world.make_seed()
            for backend in settings.backends:
                recorder.backend = backend
                run_backend(world, backend, recorder, result)
        if "server-load" in settings.cases:
            recorder.backend = "server-load"
            run_server_load(world, recorder, result)
        if "extract" in settings.cases:
            recorder.backend = "extract"
            run_extract(world, recorder, result)
        if "search" in settings.cases:
            recorder.backend = "search"
            run_search(world, recorder, result)
    except BenchFailure as error:
        print(f"bench: {error}", file=sys.stderr)
        result["broken"].append("setup")
        status = 1
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        status = 130
    except Terminated:
        print("bench: terminated", file=sys.stderr)
        status = 143
    finally:
        if not world.close():
            status = status or 1
    result["total_seconds"] = time.perf_counter() - started
    result["load_after"] = procs.load_average()
    result["rows"] = recorder.rows
    if status in (130, 143):
        return status
    report.print_run(result)
    path = report.save(result, settings.results_dir)
    print(f"\nkept: {path} (compare two runs: scripts/bench compare A.json B.json)")
    if result["broken"]:
        print(f"\nbroken: {' '.join(result['broken'])}")
        return 1
    return status


def run_backend(world, backend, recorder, result):
    """Serves the seed from the backend's server, runs each case on a mount of it, then
    unmounts and stops the server. A server that cannot start breaks this backend only; a
    backend not installed here is a note in the table, unless it was asked for by name."""
    kind = servers.SERVERS[backend]
    why = kind.unavailable()
    if why:
        print(f"bench: {kind.title}: {why}", file=sys.stderr)
        recorder.skipped(kind.title, why)
        if world.s.backend_named:
            result["broken"].append(f"{backend} setup")
        return
    log(f"backend: {kind.title}")
    try:
        world.serve(backend)
    except (BenchFailure, OSError, subprocess.SubprocessError) as error:
        print(f"bench: {kind.title}: {error}", file=sys.stderr)
        result["broken"].append(f"{backend} setup")
        recorder.failed(kind.title, f"the server did not start or sign-in failed ({type(error).__name__})")
        try:
            world.stop_server()
        except BenchFailure as stop_error:
            print(f"bench: {stop_error}", file=sys.stderr)
        return
    result["servers"][backend] = world.server.description
    result["setup_seconds"][backend] = world.server.setup_seconds
    for option, name, case in all_cases(world.s):
        if option not in world.s.cases:
            continue
        skip = world.server.skips.get(option)
        if skip:
            recorder.skipped(name, skip)
            continue
        log(f"case: {name} on {backend} (load average {procs.load_average().split()[0]})")
        try:
            case(world, recorder)
        except (BenchFailure, OSError, ValueError, KeyError, subprocess.SubprocessError) as error:
            print(f"bench: {name} ({backend}): {error}", file=sys.stderr)
            if world.daemon_log.exists():
                tail = world.daemon_log.read_text(errors="replace").splitlines()[-8:]
                print("bench: the daemon log ends with:\n" + "\n".join(tail), file=sys.stderr)
            result["broken"].append(f"{name} ({backend})")
            recorder.failed(name, f"see the error above ({type(error).__name__})")
            try:
                world.unmount()
            except BenchFailure as unmount_error:
                print(f"bench: {unmount_error}", file=sys.stderr)
    try:
        world.stop_server()
    except BenchFailure as error:
        print(f"bench: {error}", file=sys.stderr)
        result["broken"].append(f"final unmount ({backend})")


def run_search(world, recorder, result):
    """GET /v1/search latency on sitefs-server alone (see search), once per run, after
    server-load; its servers and PostgreSQL are stopped when it returns."""
    if "sitefs" not in world.s.backends:
        recorder.skipped("search", "measures sitefs-server: SITEFS_BENCH_BACKEND leaves sitefs out")
        return
    log(f"case: search (load average {procs.load_average().split()[0]})")
    try:
        search.search_latency(world, recorder, result)
    except (BenchFailure, OSError, subprocess.SubprocessError) as error:
        print(f"bench: search: {error}", file=sys.stderr)
        result["broken"].append("search")
        recorder.failed("search", f"see the error above ({type(error).__name__})")


def run_server_load(world, recorder, result):
    """sitefs-server alone under wrk (see load), once per run: its servers and PostgreSQL
    are stopped when it returns, whatever broke. sitefs-server's case: not run when
    SITEFS_BENCH_BACKEND leaves sitefs out."""
    if "sitefs" not in world.s.backends:
        recorder.skipped("server-load", "measures sitefs-server: SITEFS_BENCH_BACKEND leaves sitefs out")
        return
    log(f"case: server-load (load average {procs.load_average().split()[0]})")
    try:
        load.server_load(world, recorder, result)
    except (BenchFailure, OSError, subprocess.SubprocessError) as error:
        print(f"bench: server-load: {error}", file=sys.stderr)
        result["broken"].append("server-load")
        recorder.failed("server-load", f"see the error above ({type(error).__name__})")


def run_extract(world, recorder, result):
    """The server's document text extraction, timed in-process (see extract), once per run."""
    log(f"case: extract (load average {procs.load_average().split()[0]})")
    try:
        extract.extract(world, recorder, result)
    except (BenchFailure, OSError, ValueError, KeyError, subprocess.SubprocessError) as error:
        print(f"bench: extract: {error}", file=sys.stderr)
        result["broken"].append("extract")
        recorder.failed("extract", f"see the error above ({type(error).__name__})")

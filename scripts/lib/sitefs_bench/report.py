"""The results of a run: the table printed at the end, the JSON file kept per run, and
comparing two kept runs side by side."""

import json
import os
import platform
import subprocess
import time
from pathlib import Path

SCHEMA = 1
# How the table names each backend's setup and section (a run that did not start the
# server has no description of it).
SETUP = {"sitefs": "seed import into sitefs-server", "apache": "seed copied for Apache",
         "server-load": "server-load stores seeded", "search": "search stores seeded"}
TITLES = {"sitefs": "sitefs-server (the project's API)", "apache": "Apache mod_dav (WebDAV)",
          "server-load": "sitefs-server under wrk; a change across two instances",
          "extract": "sitefs-server's document text for search, timed in-process",
          "search": "sitefs-server's GET /v1/search over synthetic documents"}


def seconds_text(seconds, size_bytes=None):
    if seconds is None:
        return ""
    text = f"{seconds:.3f} s"
    if size_bytes:
        text += f" {size_bytes / 1048576 / seconds:5.0f} MiB/s"
    return text


def measured_text(row):
    if row["kind"] == "figure":
        return f"{row['value']} {row['unit']}"
    if row["kind"] in ("failed", "skipped"):
        return "-"
    return seconds_text(row["measured_seconds"], row.get("bytes"))


def baseline_text(row):
    if row["kind"] == "figure":
        return "" if row.get("baseline_value") is None else f"{row['baseline_value']} {row['unit']}"
    if row["kind"] in ("failed", "skipped"):
        return ""
    return seconds_text(row["baseline_seconds"], row.get("bytes"))


def table(lines, right_aligned):
    """Columns padded to their widest cell; trailing spaces dropped. A line that is a string,
    not a list of cells, is a heading printed as it is."""
    rows = [line for line in lines if not isinstance(line, str)]
    widths = [max(len(line[i]) for line in rows) for i in range(len(rows[0]))]
    out = []
    for line in lines:
        if isinstance(line, str):
            out.append(line)
            continue
        cells = []
        for i, cell in enumerate(line):
            if i == len(line) - 1:
                cells.append(cell)
            elif i in right_aligned:
                cells.append(cell.rjust(widths[i]))
            else:
                cells.append(cell.ljust(widths[i]))
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)


def print_run(result):
    quick = "quick sizes" if result["quick"] else "full sizes"
    print()
    print(f"sitefs bench: {result['config']} build, {result['runs']} runs per case (medians), {quick}, "
          f"{result['cpus']} CPUs, {result['started']}, commit {result['commit']}")
    setup = "; ".join(f"{SETUP.get(backend, backend)}: {seconds:.1f} s" for backend, seconds in result["setup_seconds"].items())
    print(f"{setup + '; ' if setup else ''}whole run: {result['total_seconds']:.0f} s. "
          "Ratio: measured / baseline time; % rows: throughput as a share of the baseline's.")
    print("Notes: daemon CPU seconds per operation (median), daemon peak RSS, server requests per operation "
          "(median; sitefs-server: its log, change-feed polls excluded; Apache: its access log).")
    if any(row.get("unit") == "req/s" for row in result["rows"]):
        print("req/s rows (server-load): wrk's requests per second (median of the runs); ratio: over the SQLite single "
              "instance's; notes: wrk's latency p50/p99, the CPU seconds each process used during a run, and how busy "
              "the whole machine was.")
    print(f"Load average (1/5/15 min) when the bench started: {result['load_before']}; at the end (the bench's own "
          f"load included): {result['load_after']}.")
    print()
    lines = [["case", "median", "baseline (same run)", "median", "ratio", "target", "result", "notes"]]
    backend = None
    for row in result["rows"]:
        if row.get("backend", "sitefs") != backend:
            backend = row.get("backend", "sitefs")
            lines.append(f"--- {backend}: {result.get('servers', {}).get(backend, TITLES.get(backend, backend))}")
        lines.append([row["case"], measured_text(row), row["baseline"], baseline_text(row), row["ratio_text"],
                      row["target"], row["result"], row["notes"]])
    print(table(lines, right_aligned={1, 3, 4}))


def git_commit(repository):
    try:
        commit = subprocess.run(["git", "-C", str(repository), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repository), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return (commit or "unknown") + ("+changes" if dirty else "")


def new_result(settings, repository):
    return {
        "schema": SCHEMA,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": git_commit(repository),
        "host": platform.node(),
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
        "config": settings.config,
        "binaries": str(settings.binaries) if settings.binaries else None,
        "runs": settings.runs,
        "quick": settings.quick,
        "cases": settings.cases,
        "backends": settings.backends,
        "servers": {},
        "setup_seconds": {},
        "mount_args": settings.mount_args,
        "rows": [],
        "broken": [],
    }


def save(result, directory):
    """Writes the run's JSON beside the earlier ones (never overwriting one); returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    stem = result["started"].replace(":", "").replace("-", "")
    only = "" if len(result.get("backends", [])) != 1 else f"-{result['backends'][0]}"
    path = directory / f"{stem}-{result['config']}{'-quick' if result['quick'] else ''}{only}.json"
    counter = 2
    while path.exists():
        path = directory / f"{stem}-{result['config']}-{counter}.json"
        counter += 1
    with open(path, "x") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    return path


def load(path):
    with open(path) as f:
        result = json.load(f)
    if result.get("schema") != SCHEMA:
        raise ValueError(f"{path}: not a sitefs bench result of schema {SCHEMA}")
    return result


def list_runs(directory):
    paths = sorted(Path(directory).glob("*.json"))
    if not paths:
        print(f"no runs kept in {directory}")
        return
    lines = [["file", "started", "commit", "config", "runs", "sizes", "backends", "cases failed"]]
    for path in paths:
        try:
            r = load(path)
        except (ValueError, json.JSONDecodeError, OSError) as error:
            lines.append([path.name, f"unreadable: {error}", "", "", "", "", "", ""])
            continue
        lines.append([path.name, r["started"], r["commit"], r["config"], str(r["runs"]), "quick" if r["quick"] else "full",
                      " ".join(r.get("backends", ["sitefs"])) or "-", " ".join(r["broken"]) or "-"])
    print(table(lines, right_aligned={4}))


def row_key(row):
    """Rows of two runs are matched by their backend, case and baseline labels (a run kept
    before there were backends measured sitefs-server)."""
    return (row.get("backend", "sitefs"), row["case"], row["baseline"])


def compare(a_path, b_path):
    """Prints two runs side by side: each row's median and ratio in both, and how the
    measured median changed (B / A: below 1 is faster)."""
    a, b = load(a_path), load(b_path)
    print(f"A: {a_path} ({a['started']}, commit {a['commit']}, {a['config']}, {'quick' if a['quick'] else 'full'} sizes)")
    print(f"B: {b_path} ({b['started']}, commit {b['commit']}, {b['config']}, {'quick' if b['quick'] else 'full'} sizes)")
    if a["quick"] != b["quick"] or a["config"] != b["config"]:
        print("note: the runs differ in sizes or build configuration; their figures are not comparable one to one")
    print("B/A: B's median over A's (times: below 1 is faster; req/s: above 1 is faster)")
    print()
    b_rows = {row_key(row): row for row in b["rows"]}
    lines = [["backend", "case", "baseline", "A median", "A ratio", "B median", "B ratio", "B/A", "B result"]]
    seen = set()
    for row in a["rows"]:
        key = row_key(row)
        seen.add(key)
        other = b_rows.get(key)
        lines.append([key[0], row["case"], row["baseline"], measured_text(row), row["ratio_text"],
                      measured_text(other) if other else "(absent)", other["ratio_text"] if other else "",
                      change(row, other), other["result"] if other else ""])
    for row in b["rows"]:
        if row_key(row) not in seen:
            lines.append([row_key(row)[0], row["case"], row["baseline"], "(absent)", "", measured_text(row), row["ratio_text"],
                          "", row["result"]])
    print(table(lines, right_aligned={3, 4, 5, 6, 7}))


def change(a_row, b_row):
    if not b_row or a_row["kind"] != b_row["kind"]:
        return ""
    if a_row["kind"] == "figure":
        before, after = a_row["value"], b_row["value"]
    elif a_row["kind"] in ("failed", "skipped"):
        return ""
    else:
        before, after = a_row["measured_seconds"], b_row["measured_seconds"]
    if not before or not all(isinstance(value, (int, float)) for value in (before, after)):
        return ""  # a figure that is not a number ("-": not timed)
    return f"{after / before:.2f}x"

"""The bench's options, read once from the environment and checked."""

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

ALL_CASES = ["upload", "ls-small", "ls-empty", "stat", "head", "read", "write", "create-rm", "sed", "rename", "edit",
             "office-save", "pin-small", "pin-large", "replay", "remote-change", "lock-crossing", "files-window",
             "search-vs-find", "server-load", "extract", "search"]
# The cases that need neither the seed nor a backend's server: they run once per run, after
# the backends. server-load and search: sitefs-server on servers of its own, only when the
# sitefs backend is among the backends (under a load tool; over synthetic documents).
# extract: the server's document text extraction, in-process through the test bundle,
# whatever the backends.
SERVER_CASES = ["server-load", "extract", "search"]
# The servers the mount is measured against, in the order they run: sitefs-server (the
# project's API) and Apache mod_dav (WebDAV). Each runs every case; its baselines speak its
# protocol to the same server.
ALL_BACKENDS = ["sitefs", "apache"]


class SettingsError(Exception):
    """A bad option: the bench exits 2 with this message."""


@dataclass
class Settings:
    config: str = "release"
    runs: int = 3
    quick: bool = False
    keep: bool = False
    cases: list = field(default_factory=lambda: list(ALL_CASES))
    backends: list = field(default_factory=lambda: list(ALL_BACKENDS))
    # True when SITEFS_BENCH_BACKEND names backends: one that cannot run here is then an error.
    backend_named: bool = False
    mount_args: list = field(default_factory=list)
    results_dir: Path = Path("bench-results")
    # Sizes (full, or quick for a smoke run).
    n_small: int = 10000
    n_empty: int = 100000
    big_mb: int = 256
    write_mb: int = 64
    n_create: int = 1000
    upload_mb: int = 1024
    # The files-window case's folder of pictures, PDFs and office documents.
    n_photos: int = 200
    # The offline session of the replay case: new files created and existing files
    # overwritten while the server is down, and how long it stays down after them (seconds).
    n_replay_new: int = 200
    n_replay_edit: int = 50
    offline_hold: float = 10.0
    # The mount's default --page-size; the curl baselines use the same.
    page_size: int = 200
    # The server-load case: the files of its site, and how long each wrk run loads it (seconds).
    load_files: int = 1000
    load_seconds: int = 5
    # The search case: the sizes of its site (documents), and requests per query.
    search_documents: list = field(default_factory=lambda: [10000, 100000])
    search_requests: int = 50
    # No single measured operation may take longer than this (seconds).
    op_timeout: int = 600
    # Binaries measured instead of building them (SITEFS_BENCH_BIN): an earlier build kept
    # for an A/B run against this one.
    binaries: Optional[Path] = None

    @staticmethod
    def from_environment(repository: Path, env=os.environ) -> "Settings":
        s = Settings()
        s.config = env.get("SITEFS_BENCH_CONFIG", "release")
        if s.config not in ("debug", "release"):
            raise SettingsError("SITEFS_BENCH_CONFIG must be debug or release")
        runs = env.get("SITEFS_BENCH_RUNS", "3")
        if not runs.isdigit() or int(runs) < 1:
            raise SettingsError("SITEFS_BENCH_RUNS must be a positive whole number")
        s.runs = int(runs)
        s.quick = env.get("SITEFS_BENCH_QUICK", "0") == "1"
        s.keep = env.get("SITEFS_BENCH_KEEP", "0") == "1"
        if s.quick:
            s.n_small, s.n_empty, s.big_mb, s.write_mb, s.n_create, s.upload_mb = 1000, 10000, 32, 32, 100, 128
            s.n_replay_new, s.n_replay_edit, s.offline_hold = 20, 10, 3.0
            s.load_seconds = 2
            s.n_photos = 50
            s.search_documents, s.search_requests = [2000], 10
        upload = env.get("SITEFS_BENCH_MB")
        if upload is not None:
            if not upload.isdigit() or int(upload) < 1:
                raise SettingsError("SITEFS_BENCH_MB must be a positive whole number")
            s.upload_mb = int(upload)
        wanted = env.get("SITEFS_BENCH_CASES", "").split()
        unknown = [name for name in wanted if name not in ALL_CASES]
        if unknown:
            raise SettingsError(f"unknown case(s) in SITEFS_BENCH_CASES: {' '.join(unknown)} (known: {' '.join(ALL_CASES)})")
        s.cases = [name for name in ALL_CASES if not wanted or name in wanted]
        s.backends = backends_from(env.get("SITEFS_BENCH_BACKEND", "all"))
        s.backend_named = env.get("SITEFS_BENCH_BACKEND", "all").split() not in ([], ["all"])
        s.mount_args = env.get("SITEFS_BENCH_MOUNT_ARGS", "").split()
        s.results_dir = Path(env.get("SITEFS_BENCH_RESULTS", str(repository / "bench-results")))
        binaries = env.get("SITEFS_BENCH_BIN")
        if binaries is not None:
            s.binaries = Path(binaries).resolve()
            missing = [name for name in ("sitefs", "sitefs-server") if not os.access(s.binaries / name, os.X_OK)]
            if missing:
                raise SettingsError(f"SITEFS_BENCH_BIN: no executable {' or '.join(missing)} in {s.binaries}")
        return s


def backends_from(value):
    """SITEFS_BENCH_BACKEND: `all` (the default), or backend names, space-separated."""
    wanted = value.split()
    if wanted in ([], ["all"]):
        return list(ALL_BACKENDS)
    unknown = [name for name in wanted if name not in ALL_BACKENDS]
    if unknown:
        raise SettingsError(f"unknown backend(s) in SITEFS_BENCH_BACKEND: {' '.join(unknown)} "
                            f"(known: all {' '.join(ALL_BACKENDS)})")
    return [name for name in ALL_BACKENDS if name in wanted]

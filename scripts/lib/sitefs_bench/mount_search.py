"""Finding a document by name on a cold mount: `sitefs search` (one request to the server's
index) against `find -iname` (a walk that lists every folder), for the same query."""

import os

from .measure import BenchFailure, Samples, log, timed


def paths(listing):
    return {entry for entry in listing.read_bytes().split(b"\0") if entry}


def search_vs_find(world, rec):
    label = "find a document by name, cold"
    if world.server.key != "sitefs":
        rec.skipped(label, "WebDAV servers here do not search: the mount searches names over what it has listed")
        return
    t = world.s.op_timeout
    search, find = Samples(), Samples()
    searched, walked = world.work / "search.out", world.work / "find.out"
    for run in range(1, world.s.runs + 1):
        world.mount_cold()
        with world.operation(search), open(searched, "w") as out:
            seconds = search.add(timed([str(world.bin / "sitefs"), "search", str(world.mp), "report", "-0"], t, stdout=out))
        log(f"  sitefs search run {run}/{world.s.runs}: {seconds:.4f} s")
        world.mount_cold()
        with world.operation(find), open(walked, "w") as out:
            seconds = find.add(timed(["find", str(world.mp), "-iname", "*report*", "-print0"], t, stdout=out))
        log(f"  find -iname run {run}/{world.s.runs}: {seconds:.4f} s")
        # The same files: what the walk finds, the search finds (it also matches text).
        missing = paths(walked) - paths(searched)
        if missing:
            raise BenchFailure(f"sitefs search missed what find found: {sorted(missing)[:5]}")
    rec.compare(f"{label}: sitefs search", search, "find -iname (walks every folder)", find, ("info",), search.notes())

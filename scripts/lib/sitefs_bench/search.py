"""The search case: latency of GET /v1/search on sitefs-server alone (no mount), over a site of
synthetic documents, with the metadata in SQLite and in PostgreSQL.

Each store is seeded straight into the database by `sitefs-server bench-seed` (hidden; the
documents already indexed, in folders of 1,000: going through the API and the indexer would
make the seeding, not the searches, the bench's time), then served by one instance. Each query
is sent `search_requests` times on one keep-alive connection (after one untimed round that
warms the caches), one request at a time; the rows are the median (p50) and the 99th
percentile (p99) of those times, with the PostgreSQL rows' ratio over SQLite's. The figures
are reports, never asserted: what a search costs grows with the items the caller can see
(a name is a substring test, which no index serves).

The queries (limit 50, the first page):
  name: the two words a file's name starts with (rank class 0/1 hits, few);
  common word: a word in most documents' text (many hits: ranking and snippets of a full page);
  prefix: the first three letters of a rarer word (text prefix match);
  two words: the common word and the rarer one (AND);
  filtered: the common word in one folder, type txt;
  no match: a word in no name and no text (the whole scan, nothing found).
"""

import http.client
import json
import secrets
import subprocess
import sys
import time
from collections import Counter
from urllib.parse import quote, urlparse

from .load import Instance, PostgresCluster, Store, postgres_unavailable
from .measure import BenchFailure, log, median

LIMIT = 50


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


class Client:
    """One keep-alive HTTP/1.1 connection to an instance, timing each request."""

    def __init__(self, url, token):
        parts = urlparse(url)
        self.connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        self.token = token

    def get(self, path):
        started = time.perf_counter()
        self.connection.request("GET", path, headers={"Authorization": f"Bearer {self.token}"})
        response = self.connection.getresponse()
        body = response.read()
        elapsed = time.perf_counter() - started
        if response.status != 200:
            raise BenchFailure(f"GET {path}: {response.status} {body[:300]!r}")
        return json.loads(body), elapsed

    def close(self):
        self.connection.close()


def queries(client, site):
    """The queries, from what the seed made: the names and texts of the first folder."""
    folders, _ = client.get(f"/v1/items/{site}/children?limit=10")
    folder = folders["items"][0]["id"]
    files, _ = client.get(f"/v1/items/{folder}/children?limit=200")
    names = [item["name"] for item in files["items"]]
    if not names:
        raise BenchFailure("the seeded folder is empty")
    # Names are "WORD NUMBER FIRST-WORD-OF-TEXT.txt"; the texts' first words are drawn with a skew.
    first_words = Counter(name.rsplit(" ", 1)[1][:-len(".txt")] for name in names)
    common = first_words.most_common(1)[0][0]
    rare = min(first_words, key=lambda word: (first_words[word], word))
    name_words = " ".join(names[len(names) // 2].split(" ")[:2])
    return [
        ("name", {"q": name_words}),
        ("common word", {"q": common}),
        ("prefix", {"q": rare[:3]}),
        ("two words", {"q": f"{common} {rare}"}),
        ("filtered", {"q": common, "folder": folder, "type": "txt"}),
        ("no match", {"q": "zzqqxxjj"}),
    ]


def path_of(parameters):
    return "/v1/search?" + "&".join(f"{key}={quote(value, safe='')}" for key, value in
                                    sorted({**parameters, "limit": str(LIMIT)}.items()))


def run_store(world, rec, engine, label, documents, cluster, baselines):
    """Seeds one store with `documents`, serves it and records a p50 and a p99 row per query."""
    key = f"search_{engine}_{documents}"
    store = Store(world, key, cluster if engine == "postgres" else None)
    started = time.perf_counter()
    store.admin("bench-seed", "--site", "Search", "--documents", str(documents), "--user", "bench")
    seeded = time.perf_counter() - started
    log(f"search: {label}: seeded {documents} documents in {seeded:.1f} s")
    instance = Instance(store, 1)
    instance.start()
    client = None
    try:
        token = None
        conn = Client(instance.url, "")
        conn.connection.request("POST", "/v1/session", body=json.dumps({"username": "bench", "password": "bench"}),
                                headers={"Content-Type": "application/json"})
        response = conn.connection.getresponse()
        grant = json.loads(response.read())
        conn.close()
        token = grant["token"]
        client = Client(instance.url, token)
        sites, _ = client.get("/v1/sites")
        site = sites["items"][0]["id"]
        for name, parameters in queries(client, site):
            path = path_of(parameters)
            page, _ = client.get(path)  # untimed: caches warm
            times = [client.get(path)[1] for _ in range(world.s.search_requests)]
            p50, p99 = median(times) * 1000, percentile(times, 0.99) * 1000
            hits = len(page["results"])
            notes = f"{hits}{'+' if page['next_cursor'] else ''} results on the page; {len(times)} requests; seeded in {seeded:.0f} s"
            for which, value in (("p50", p50), ("p99", p99)):
                row = f"search {documents} docs, {name}: {which}"
                baseline = baselines.get((documents, name, which))
                if baseline is None:
                    baselines[(documents, name, which)] = value
                    rec.figure(f"{row}: {label}", round(value, 2), "ms", notes=notes)
                else:
                    rec.figure(f"{row}: {label}", round(value, 2), "ms", baseline_label="SQLite", baseline_value=round(baseline, 2),
                               ratio_text=f"{value / baseline:.2f}x" if baseline else "", notes=notes)
            log(f"search: {label}, {documents} docs, {name}: p50 {p50:.2f} ms, p99 {p99:.2f} ms ({hits} results)")
    finally:
        if client:
            client.close()
        instance.stop()
    return seeded


def search_latency(world, rec, result):
    """The case: each size on SQLite, then on PostgreSQL (a throwaway cluster, fsync on, gone
    when this returns). A store that breaks is a FAIL row; the next one runs."""
    sizes = world.s.search_documents
    result["servers"]["search"] = (f"sitefs-server alone, one instance, GET /v1/search?limit={LIMIT} one request at a time "
                                   f"on one connection, {world.s.search_requests} requests per query")
    result["setup_seconds"]["search"] = 0.0
    postgres_why = postgres_unavailable()
    cluster = None
    baselines = {}
    try:
        for engine, label in (("sqlite", "SQLite"), ("postgres", "PostgreSQL")):
            if engine == "postgres" and postgres_why:
                rec.skipped(f"search: {label}", postgres_why)
                continue
            for documents in sizes:
                try:
                    if engine == "postgres" and cluster is None:
                        cluster = PostgresCluster()
                        cluster.start()
                        log(f"search: PostgreSQL {cluster.version()} on {cluster.url}")
                    result["setup_seconds"]["search"] += run_store(world, rec, engine, label, documents, cluster, baselines)
                except (BenchFailure, OSError, ValueError, KeyError, subprocess.SubprocessError) as error:
                    print(f"bench: search: {label} {documents}: {error}", file=sys.stderr)
                    result["broken"].append(f"search {engine} {documents}")
                    rec.failed(f"search: {label}, {documents} documents", f"see the error above ({type(error).__name__})")
    finally:
        if cluster:
            cluster.stop()

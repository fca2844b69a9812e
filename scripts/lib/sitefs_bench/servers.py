"""The servers the mount is measured against, one class per backend. Each starts its server
on 127.0.0.1 serving the seed as the folder (site) "Bench", signs the mount in, counts the
requests an operation made in its log, checks what it holds (never timed), and builds the
curl baselines' requests in its own protocol, to the same server and for the same work as
the mount's operation:

- SitefsServer: sitefs-server and the project's API (listing pages, items by id, POST, PATCH);
- ApacheServer: Apache 2.4's mod_dav_fs behind HTTP Basic, WebDAV (PROPFIND, GET, PUT, MOVE,
  DELETE, MKCOL).

Paths given to a server are relative to the site: "docs/report.csv". Secrets never appear
on a command line: the password goes on standard input, curl reads the Authorization
header from a 0600 file (`world.auth`).
"""

import base64
import http.client
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from . import procs
from .measure import BenchFailure, log

NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def write_private(path, text):
    """A file only its owner reads (a token, a password's hash, an Authorization header)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def api(url, method, path, token=None, body=None):
    """One request for setting up and checking (never timed): the decoded JSON answer."""
    request = urllib.request.Request(url + path, method=method)
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with NO_PROXY.open(request, data=data, timeout=60) as response:
            payload = response.read()
    except urllib.error.HTTPError as error:
        raise BenchFailure(f"HTTP {error.code} for {method} {path}: {error.read()[:300]!r}")
    return json.loads(payload) if payload else None


class Server:
    """What every backend has: a name for the table, the URL the mount signs in to, its
    request log, and the cases that make no sense on it (with why)."""
    key = ""
    title = ""
    # case option -> why it is not run on this backend (a note in the table)
    skips = {}

    def __init__(self, world):
        self.world = world
        self.s = world.s
        self.mount_url = None
        self.setup_seconds = 0.0
        self.description = self.title

    @staticmethod
    def unavailable():
        """Why this server cannot run on this machine, or None."""
        return None

    @property
    def log_path(self):
        raise NotImplementedError

    def log_offset(self):
        return self.log_path.stat().st_size

    def requests_since(self, offset):
        """Requests logged after `offset` that the operation made (see `counted`)."""
        time.sleep(0.2)  # a request is logged once its response body has gone out
        with open(self.log_path, "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
        return sum(1 for line in text.splitlines() if self.counted(line))

    def counted(self, line):
        raise NotImplementedError

    def transfers_since(self, offset):
        """What the server sent after `offset` (its log): {"content": [answers, body bytes],
        "thumbnail": [answers, body bytes]}, counting 200 and 206 answers (see `transfer`)."""
        time.sleep(0.2)  # a request is logged once its response body has gone out
        with open(self.log_path, "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
        sent = {"content": [0, 0], "thumbnail": [0, 0]}
        for line in text.splitlines():
            found = self.transfer(line)
            if found and found[1] in (200, 206):
                sent[found[0]][0] += 1
                sent[found[0]][1] += found[2]
        return sent

    def transfer(self, line):
        """(\"content\" or \"thumbnail\", status, body bytes) of a log line that sent a file's
        content or a thumbnail of it, else None."""
        raise NotImplementedError

    def thumbnail_offers(self, folder_path, size):
        """({name: thumbnail bytes} of the files in the folder the server has a picture of at
        `size`, why it offers none by design or None). Asked outside any timing."""
        return {}, "the server has no thumbnail API"

    def sign_in(self, password):
        """`sitefs login` as a user would: the password on standard input."""
        self.world.sitefs("login", self.mount_url, "--user", "bench", input=password + "\n", text=True,
                          stdout=subprocess.DEVNULL, check=True, timeout=60)

    # The replay case makes the server unreachable by stopping it (`pause`: connections are
    # then refused) and starts it again on the same port and data (`resume`, which returns
    # once it serves): what the mount and curl talk to after it is the same server.

    def pause(self):
        self.stop()

    def resume(self):
        raise NotImplementedError

    def running(self):
        return self.process is not None and self.process.poll() is None


class SitefsServer(Server):
    """sitefs-server with a fresh data directory the seed is imported into."""
    key = "sitefs"
    title = "sitefs-server (the project's API)"

    def __init__(self, world):
        super().__init__(world)
        self.process = None
        self.token = None
        self.shm_dir = None
        self.data = None

    @property
    def log_path(self):
        return self.world.work / "server.log"

    @property
    def pid(self):
        return self.process.pid

    def counted(self, line):
        """Requests of the API, the change feed's polls excluded (they come every few seconds
        whatever the operation)."""
        return re.search(r" (GET|POST|PUT|PATCH|DELETE) /v1/", line) is not None and "/v1/changes" not in line

    # `GET /v1/items/ID/content?version=V 206 141978 2ms`: the number after the status is the
    # body's bytes (RequestLogMiddleware).
    TRANSFER = re.compile(r" GET /v1/items/[^/\s?]+/(content|thumbnail)(?:\?\S*)? (\d{3}) (\d+) \d+ms")

    def transfer(self, line):
        match = self.TRANSFER.search(line)
        return (match.group(1), int(match.group(2)), int(match.group(3))) if match else None

    def thumbnail_offers(self, folder_path, size):
        """GET /v1/items/ID/thumbnail?size=N of each file: 200 (offered) or 404 (none); a
        busy server (503, 429) is asked again, up to 5 times a second apart. The server makes
        and keeps each picture on this first request (an upload would have had it made ahead)."""
        offers = {}
        for identifier, name in self.children(self.id_of(folder_path)):
            for attempt in range(5):
                request = urllib.request.Request(f"{self.mount_url}/v1/items/{identifier}/thumbnail?size={size}")
                request.add_header("Authorization", f"Bearer {self.token}")
                try:
                    with NO_PROXY.open(request, timeout=60) as response:
                        offers[name] = len(response.read())
                    break
                except urllib.error.HTTPError as error:
                    error.read()
                    if error.code == 404:
                        break
                    if error.code not in (429, 503) or attempt == 4:
                        raise BenchFailure(f"HTTP {error.code} for the thumbnail of {folder_path}/{name}")
                    time.sleep(1)
        return offers, None

    # --- start and stop -----------------------------------------------------------------

    def start(self):
        w = self.world
        password = secrets.token_urlsafe(24)
        data = w.work / "data"
        # The import makes one fsynced transaction per file (minutes for 110,000 files on a
        # disk): on tmpfs when there is room, then the data directory is copied to the disk
        # the server runs on. Nothing has it open in between, so the copy is consistent.
        import_data = data
        if os.path.isdir("/dev/shm"):
            stat = os.statvfs("/dev/shm")
            if stat.f_bavail * stat.f_frsize > (self.s.big_mb + 1024) << 20:
                self.shm_dir = Path(tempfile.mkdtemp(prefix="sitefs-bench-seed.", dir="/dev/shm"))
                import_data = self.shm_dir / "data"
        server = str(w.bin / "sitefs-server")
        started = time.perf_counter()
        subprocess.run([server, "user", "add", "bench", "--data", str(import_data)], input=password + "\n", text=True,
                       stdout=subprocess.DEVNULL, check=True, timeout=120)
        with open(w.work / "import.log", "w") as out:
            subprocess.run([server, "site", "add", "Bench", "--data", str(import_data), "--import", str(w.seed)],
                           stdout=out, check=True, timeout=3600)
        subprocess.run([server, "grant", "bench", "Bench", "--data", str(import_data)], stdout=subprocess.DEVNULL,
                       check=True, timeout=120)
        if import_data != data:
            shutil.copytree(import_data, data, symlinks=True)
            shutil.rmtree(self.shm_dir)
            self.shm_dir = None
        self.setup_seconds = time.perf_counter() - started
        last = (w.work / "import.log").read_text().strip().splitlines()[-1:]
        log(f"import: {' '.join(last)} in {self.setup_seconds:.1f} s{' (on tmpfs, then copied)' if import_data != data else ''}")

        self.data = data
        line = self.launch("0", "w")
        if not re.fullmatch(r"http://127\.0\.0\.1:[0-9]+", line):
            raise BenchFailure(f"the server is not on 127.0.0.1: {line}")
        self.mount_url = line
        log(f"server {self.mount_url} (pid {self.process.pid})")

        answer = self.request("POST", "/v1/session", {"username": "bench", "password": password}, authorized=False)
        self.token = answer["token"]
        write_private(w.auth, f"Authorization: Bearer {self.token}\n")
        self.sign_in(password)
        self.site = self.request("GET", "/v1/sites")["items"][0]["id"]

    def launch(self, port, log_mode):
        """Starts `sitefs-server serve` on the data directory and returns the URL it prints
        once it listens (it prints that when ready); its log goes to `log_path`."""
        w = self.world
        with open(w.work / "server.out", "w") as out, open(self.log_path, log_mode) as err:
            self.process = subprocess.Popen([str(w.bin / "sitefs-server"), "serve", "--data", str(self.data), "--host",
                                             "127.0.0.1", "--port", port], stdout=out, stderr=err)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.process.poll() is None:
            match = re.search(r"^listening on (\S+)$", (w.work / "server.out").read_text(), re.M)
            if match:
                return match.group(1)
            time.sleep(0.02)
        raise BenchFailure("the server did not start: " + self.log_path.read_text()[-2000:])

    def resume(self):
        """The same data directory on the same port; the log is appended to (the request
        counts read it from an offset)."""
        port = self.mount_url.rsplit(":", 1)[1]
        line = self.launch(port, "a")
        if line != self.mount_url:
            raise BenchFailure(f"the server came back on {line}, not on {self.mount_url}")

    def stop(self):
        if self.process and self.process.poll() is None:
            procs.stop(self.process.pid, 0)
            self.process.wait(timeout=10)
        if self.shm_dir:
            shutil.rmtree(self.shm_dir, ignore_errors=True)
            self.shm_dir = None

    # --- the API, for setting up and checking (never timed) -----------------------------

    def request(self, method, path, body=None, authorized=True, raw=False, headers=None):
        request = urllib.request.Request(self.mount_url + path, method=method)
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
        return [(item["id"], item["name"]) for item in self.children_items(folder)]

    def children_items(self, folder):
        """Every child as the API gives it (id, name, size, etag ...), following next_cursor (bounded)."""
        result, cursor = [], None
        for _ in range(100000):
            query = {"limit": 1000}
            if cursor:
                query["cursor"] = cursor
            page = self.request("GET", f"/v1/items/{folder}/children?{urllib.parse.urlencode(query)}")
            result += page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return result
        raise BenchFailure(f"listing of {folder} does not end")

    def id_of(self, path, missing_ok=False):
        """The id of the item at `path` in the site, walked name by name (small folders only:
        the bench never walks through the big ones)."""
        identifier = self.site
        for name in path.split("/"):
            found = [child for child, child_name in self.children(identifier) if child_name == name]
            if not found:
                if missing_ok:
                    return None
                raise BenchFailure(f"no item {name!r} on the server (looking for {path})")
            identifier = found[0]
        return identifier

    def names(self, path):
        """The names in the folder at `path`, or None when the server has no such folder."""
        identifier = self.id_of(path, missing_ok=True)
        return None if identifier is None else [name for _, name in self.children(identifier)]

    def size(self, path):
        return self.request("GET", f"/v1/items/{self.id_of(path)}")["size"]

    def versions(self, path):
        """The etags of the file's stored versions, newest first."""
        return [version["etag"] for version in self.request("GET", f"/v1/items/{self.id_of(path)}/versions")["versions"]]

    def watch(self, folders):
        """What the server holds in these folders (paths in the site, existing), kept current
        from its change feed: see FeedWatch."""
        return FeedWatch(self, folders)

    def read(self, path, length=None):
        headers = {"Range": f"bytes=0-{length - 1}"} if length else None
        return self.request("GET", f"/v1/items/{self.id_of(path)}/content", raw=True, headers=headers)

    # --- the baselines' requests ----------------------------------------------------------

    def page_urls(self, folder):
        """The URLs of a folder's listing pages at the mount's page size, in order."""
        urls, cursor = [], None
        for _ in range(100000):
            query = {"limit": self.s.page_size}
            if cursor:
                query["cursor"] = cursor
            path = f"/v1/items/{folder}/children?{urllib.parse.urlencode(query)}"
            urls.append(self.mount_url + path)
            cursor = self.request("GET", path).get("next_cursor")
            if not cursor:
                return urls
        raise BenchFailure(f"listing of {folder} does not end")

    def listing_baselines(self, path, entries):
        """A folder's listing as the mount fetches it, page by page: first on one connection
        (the target's baseline), then with a curl per page (for information: it mostly
        measures curl starting). (label, command) each."""
        folder = self.id_of(path)
        urls = self.page_urls(folder)
        config = self.world.curl_config(f"{path.replace('/', '-')}-pages.conf", ["fail"], urls)
        return [(f"curl: {len(urls)} pages, one connection", self.world.curl + ["-K", str(config)]),
                (f"curl: {len(urls)} pages, a curl per page", self.curl_pages(folder, len(urls)))]

    def curl_pages(self, folder, expected):
        """Every listing page with a new curl per page, following next_cursor (returns a callable)."""
        w = self.world

        def fetch():
            cursor, pages = None, 0
            while True:
                url = f"{self.mount_url}/v1/items/{folder}/children?limit={self.s.page_size}" + (f"&cursor={cursor}" if cursor else "")
                out = subprocess.run(w.curl_auth + ["-f", url], capture_output=True, timeout=self.s.op_timeout)
                if out.returncode != 0:
                    raise BenchFailure(f"curl page {pages + 1} of {folder}: exit {out.returncode}")
                pages += 1
                cursor = json.loads(out.stdout).get("next_cursor")
                if not cursor:
                    break
                if pages >= 100000:
                    raise BenchFailure(f"listing of {folder} does not end")
            if pages != expected:
                raise BenchFailure(f"curl fetched {pages} pages of {self.s.page_size}, expected {expected}")
        return fetch

    def item_baseline(self, path):
        """One file's metadata: (label, command)."""
        url = f"{self.mount_url}/v1/items/{self.id_of(path)}"
        return "curl GET /v1/items/ID", self.world.curl_auth + ["-f", "-o", "/dev/null", url]

    def content_url(self, path):
        return f"{self.mount_url}/v1/items/{self.id_of(path)}/content"

    def put_target(self, path):
        """Where a baseline PUTs a file's new content, and the status that means done."""
        return self.content_url(path), "200"

    def create_requests(self, folder_path, names, body):
        """Makes the folder (untimed) and returns the creation of each file in it, on one
        connection: (what, curl settings, urls, expected status)."""
        parent, _, name = folder_path.rpartition("/")
        folder = self.request("POST", f"/v1/items/{self.id_of(parent)}/children", {"name": name, "kind": "folder"})["id"]
        urls = [f"{self.mount_url}/v1/items/{folder}/children?name={urllib.parse.quote(n)}" for n in names]
        return "POSTs", ['header = "Content-Type: application/octet-stream"', f'data-binary = "@{body}"'], urls, "201"

    def delete_requests(self, folder_path):
        """The deletion of each file in the folder: (curl settings, urls, expected status)."""
        urls = [f"{self.mount_url}/v1/items/{identifier}" for identifier, _ in self.children(self.id_of(folder_path))]
        return ['request = "DELETE"'], urls, "204"

    def folder_delete_request(self, folder_path):
        """The deletion of the folder with everything in it, one request: (curl settings, [url], expected status)."""
        return ['request = "DELETE"'], [f"{self.mount_url}/v1/items/{self.id_of(folder_path)}"], "204"

    def file_urls(self, folder_path):
        """The content URL of every file in the folder, by name: {name: url}."""
        return {name: f"{self.mount_url}/v1/items/{identifier}/content"
                for identifier, name in self.children(self.id_of(folder_path))}

    def edit_requests(self, folder_path, body):
        """A new version of each file in the folder, `body` its content, on one connection:
        (curl settings, urls, expected status)."""
        urls = sorted(self.file_urls(folder_path).values())
        return ['request = "PUT"', 'header = "Content-Type: text/plain"', f'data-binary = "@{body}"'], urls, "200"

    def rename_baseline(self, path, new_name):
        """A file's rename: (label, command printing the HTTP status, expected status)."""
        url = f"{self.mount_url}/v1/items/{self.id_of(path)}"
        body = json.dumps({"name": new_name})
        return "curl PATCH name", self.world.curl_auth + [
            "-o", "/dev/null", "-w", "%{http_code}", "-X", "PATCH", "-H", "Content-Type: application/json",
            "--data-binary", body, url], "200"


class ApacheServer(Server):
    """Apache 2.4 with mod_dav_fs (Debian's apache2), in the foreground on a configuration of
    its own: the seed copied to DIR/dav/Bench and served as http://127.0.0.1:PORT/dav/,
    behind HTTP Basic (a password file made with htpasswd). No import: Apache serves files on
    disk. Its logs, pid file, mutexes and lock database are in DIR, so nothing of the
    system's Apache (its config, apache2ctl, systemd) is involved.

    Apache refuses to serve as root: started by root it serves as www-data, so the served
    tree, the lock database and the password file are handed to www-data, and the folders
    above them are made searchable (0711). The bench, being root, still reads everything."""
    key = "apache"
    title = "Apache mod_dav (WebDAV)"
    skips = {"upload": "measures sitefs-server's own memory while an upload streams: not sitefs's to bound on Apache",
             "remote-change": "WebDAV has no change feed to hold or poll: changes show once --cache-ttl passes"}
    EXECUTABLE = "/usr/sbin/apache2"
    MODULES = "/usr/lib/apache2/modules"
    # What the mount asks of a listing (Sources/SitefsWebDAVBackend/WebDAVListing.swift): the
    # PROPFIND baselines send the same body, so Apache does the same work for both.
    PROPFIND_BODY = ('<?xml version="1.0" encoding="utf-8"?>\n'
                     '<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop>'
                     '<d:resourcetype/><d:getcontentlength/><d:getcontenttype/><d:getlastmodified/><d:getetag/>'
                     '<d:displayname/><oc:fileid/></d:prop></d:propfind>')

    def __init__(self, world):
        super().__init__(world)
        self.directory = world.work / "apache"
        self.root = self.directory / "dav"
        self.process = None
        self.origin = None
        self.header = None
        self.propfind_body = world.work / "propfind.xml"

    @staticmethod
    def unavailable():
        """Why Apache cannot run here, or None."""
        missing = [path for path in (ApacheServer.EXECUTABLE, "/usr/bin/htpasswd", f"{ApacheServer.MODULES}/mod_dav_fs.so")
                   if not os.path.exists(path)]
        return f"not installed: {' '.join(missing)} (apt-get install apache2)" if missing else None

    @property
    def log_path(self):
        return self.directory / "access.log"

    def counted(self, line):
        """Every request: WebDAV has no change feed, nothing polls."""
        return line.strip() != ""

    # `127.0.0.1 bench "GET /dav/Bench/photos/a.jpg HTTP/1.1" 200 89630 1234` (%b is "-" for none).
    TRANSFER = re.compile(r'"GET (\S+) HTTP/[^"]*" (\d{3}) (\d+|-)')

    def transfer(self, line):
        """Every GET of a file is its content: WebDAV has no thumbnails."""
        match = self.TRANSFER.search(line)
        if not match or match.group(1).endswith("/"):
            return None
        return "content", int(match.group(2)), 0 if match.group(3) == "-" else int(match.group(3))

    def thumbnail_offers(self, folder_path, size):
        return {}, "WebDAV has no thumbnail API"

    @property
    def site_root(self):
        return self.root / "Bench"

    def url(self, path, collection=False):
        return self.mount_url + "Bench/" + urllib.parse.quote(path) + ("/" if collection else "")

    # --- start and stop -----------------------------------------------------------------

    def start(self):
        w = self.world
        if self.unavailable():
            raise BenchFailure(f"Apache is {self.unavailable()}")
        owner = pwd.getpwnam("www-data") if os.geteuid() == 0 else None
        (self.directory / "locks").mkdir(parents=True)
        self.root.mkdir()
        started = time.perf_counter()
        subprocess.run(["cp", "-a", str(w.seed), str(self.site_root)], check=True, timeout=1800)
        self.setup_seconds = time.perf_counter() - started
        log(f"apache: the seed copied to {self.site_root} in {self.setup_seconds:.1f} s")
        password = secrets.token_urlsafe(24)
        htpasswd = self.directory / "htpasswd"
        subprocess.run(["htpasswd", "-i", "-c", "-m", str(htpasswd), "bench"], input=password, text=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True, timeout=60)
        os.chmod(htpasswd, 0o600)
        if owner:
            subprocess.run(["chown", "-R", f"{owner.pw_uid}:{owner.pw_gid}", str(self.root), str(self.directory / "locks"),
                            str(htpasswd)], check=True, timeout=600)
            for folder in (w.work, self.directory):
                os.chmod(folder, 0o711)
        self.header = "Basic " + base64.b64encode(f"bench:{password}".encode()).decode()
        write_private(w.auth, f"Authorization: {self.header}\n")
        self.propfind_body.write_text(self.PROPFIND_BODY)
        self.launch(owner)
        version = subprocess.run([self.EXECUTABLE, "-v"], capture_output=True, text=True, timeout=30).stdout
        match = re.search(r"Apache/(\S+)", version)
        self.description = f"{self.title}, Apache {match.group(1) if match else '(version unknown)'}"
        log(f"apache {self.mount_url} (pid {self.process.pid})")
        self.sign_in(password)

    def launch(self, owner):
        """Starts Apache on an unused port and waits until it serves a marker file; another
        process may take the port between the pick and Apache's bind (Apache then exits), so
        up to three ports are tried."""
        for _ in range(3):
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            configuration = self.directory / "httpd.conf"
            configuration.write_text(self.configuration(port, owner))
            # Its own session: the master and its workers are one process group, stopped together.
            with open(self.directory / "console.log", "w") as console:
                self.process = subprocess.Popen([self.EXECUTABLE, "-f", str(configuration), "-DFOREGROUND"], stdout=console,
                                                stderr=subprocess.STDOUT, start_new_session=True)
            self.origin = f"http://127.0.0.1:{port}"
            self.mount_url = self.origin + "/dav/"
            if self.serves():
                return
            self.stop()
        raise BenchFailure("Apache did not start: " + self.text("console.log")[-1500:] + self.text("error.log")[-1500:])

    def resume(self):
        """The same configuration (port, served tree, logs); returns once it serves."""
        with open(self.directory / "console.log", "a") as console:
            self.process = subprocess.Popen([self.EXECUTABLE, "-f", str(self.directory / "httpd.conf"), "-DFOREGROUND"],
                                            stdout=console, stderr=subprocess.STDOUT, start_new_session=True)
        if not self.serves():
            self.stop()
            raise BenchFailure("Apache did not start again: " + self.text("console.log")[-1500:] + self.text("error.log")[-1500:])

    def serves(self):
        marker = self.root / f".sitefs-bench-ready-{secrets.token_hex(8)}"
        marker.write_text("ready")
        os.chmod(marker, 0o644)
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and self.process.poll() is None:
                try:
                    if self.dav("GET", self.mount_url + marker.name) == b"ready":
                        return True
                except (OSError, BenchFailure):
                    pass
                time.sleep(0.05)
            return False
        finally:
            marker.unlink()

    def configuration(self, port, owner):
        """Only the modules the collection needs: the event MPM, mod_dav with its filesystem
        provider, mod_alias for /dav, mod_mime for content types, Basic auth from a file.
        One worker process, a second only under load (as the test kit's). Keep-alive without
        a request limit: the daemon and the many-request baselines each keep one connection
        for a whole operation. One access log line per request: the requests an operation made."""
        d = self.directory
        modules = ["mpm_event", "authz_core", "authn_core", "alias", "mime", "dav", "dav_fs", "auth_basic", "authn_file",
                   "authz_user"]
        lines = [f"LoadModule {m}_module {self.MODULES}/mod_{m}.so" for m in modules] + [
            f'ServerRoot "{d}"',
            "ServerName 127.0.0.1",
            f"Listen 127.0.0.1:{port}",
            f'PidFile "{d}/httpd.pid"',
            f'DefaultRuntimeDir "{d}"',
            f"Mutex file:{d} default",
            f'ErrorLog "{d}/error.log"',
            "LogLevel warn",
            f'CustomLog "{d}/access.log" "%h %u \\"%r\\" %>s %b %D"',
            "TypesConfig /etc/mime.types",
            "StartServers 1", "ServerLimit 2", "ThreadsPerChild 16", "MaxRequestWorkers 32",
            "MinSpareThreads 1", "MaxSpareThreads 32",
            "KeepAlive On", "MaxKeepAliveRequests 0", "KeepAliveTimeout 15",
        ] + ([f"User #{owner.pw_uid}", f"Group #{owner.pw_gid}"] if owner else []) + [
            f'DavLockDB "{d}/locks/DavLock"',
            f'Alias /dav "{self.root}"',
            f'<Directory "{self.root}">',
            "    Dav On",
            "    Options None",
            "    AllowOverride None",
            "    AuthType Basic",
            '    AuthName "sitefs bench"',
            "    AuthBasicProvider file",
            f'    AuthUserFile "{d}/htpasswd"',
            "    Require valid-user",
            "</Directory>",
        ]
        return "\n".join(lines) + "\n"

    def text(self, name):
        try:
            return (self.directory / name).read_text(errors="replace")
        except OSError:
            return ""

    def stop(self):
        """SIGTERM to the master, which stops its workers; after 10 s, SIGKILL to the group
        (a master killed alone leaves its workers serving)."""
        if not self.process or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(timeout=10)

    # --- WebDAV and the disk, for setting up and checking (never timed) -------------------

    def dav(self, method, url, headers=None, data=None):
        request = urllib.request.Request(url, method=method, data=data)
        request.add_header("Authorization", self.header)
        for key, value in (headers or {}).items():
            request.add_header(key, value)
        try:
            with NO_PROXY.open(request, timeout=self.s.op_timeout) as response:
                return response.read()
        except urllib.error.HTTPError as error:
            raise BenchFailure(f"HTTP {error.code} for {method} {url}: {error.read()[:300]!r}")

    def names(self, path):
        """The names Apache lists in the folder at `path` (it hides its own .DAV folders and
        upload temporaries), or None when there is no such folder."""
        folder = self.site_root / path
        if not folder.is_dir():
            return None
        return [name for name in os.listdir(folder) if name != ".DAV" and not name.startswith(".davfs.tmp")]

    def size(self, path):
        return (self.site_root / path).stat().st_size

    def read(self, path, length=None):
        with open(self.site_root / path, "rb") as f:
            return f.read(length) if length else f.read()

    def watch(self, folders):
        """What Apache holds in these folders, read from the served directory: see DiskWatch."""
        return DiskWatch(self.site_root)

    # --- the baselines' requests ----------------------------------------------------------

    def propfind(self, url, depth):
        return self.world.curl_auth + ["-f", "-o", "/dev/null", "-X", "PROPFIND", "-H", f"Depth: {depth}", "-H",
                                       "Content-Type: application/xml; charset=utf-8", "--data-binary",
                                       f"@{self.propfind_body}", url]

    def listing_baselines(self, path, entries):
        """A folder's listing as the mount fetches it: one PROPFIND Depth 1 with the mount's
        body (WebDAV has no pages). Checked once, untimed, to list every entry."""
        url = self.url(path, collection=True)
        answer = self.dav("PROPFIND", url, {"Depth": "1", "Content-Type": "application/xml; charset=utf-8"},
                          self.PROPFIND_BODY.encode())
        hrefs = len(re.findall(rb"<(?:\w+:)?href>", answer))
        if hrefs != entries + 1:
            raise BenchFailure(f"PROPFIND of {path} lists {hrefs - 1} entries, expected {entries}")
        return [("curl: one PROPFIND Depth 1", self.propfind(url, "1"))]

    def item_baseline(self, path):
        return "curl PROPFIND Depth 0", self.propfind(self.url(path), "0")

    def content_url(self, path):
        return self.url(path)

    def put_target(self, path):
        return self.url(path), "204"  # 204: an existing file replaced

    def create_requests(self, folder_path, names, body):
        self.dav("MKCOL", self.url(folder_path, collection=True))
        urls = [self.url(f"{folder_path}/{name}") for name in names]
        return "PUTs", ['request = "PUT"', 'header = "Content-Type: application/octet-stream"', f'data-binary = "@{body}"'], urls, "201"

    def delete_requests(self, folder_path):
        return ['request = "DELETE"'], [self.url(f"{folder_path}/{name}") for name in self.names(folder_path)], "204"

    def folder_delete_request(self, folder_path):
        """DELETE of the collection (Depth: infinity, WebDAV's only depth for a DELETE)."""
        return ['request = "DELETE"'], [self.url(folder_path, collection=True)], "204"

    def file_urls(self, folder_path):
        return {name: self.url(f"{folder_path}/{name}") for name in self.names(folder_path)}

    def edit_requests(self, folder_path, body):
        urls = sorted(self.file_urls(folder_path).values())
        return ['request = "PUT"', 'header = "Content-Type: text/plain"', f'data-binary = "@{body}"'], urls, "204"

    def rename_baseline(self, path, new_name):
        """MOVE with a Destination header, not overwriting (as the mount sends it)."""
        target = self.url(path.rpartition("/")[0] + "/" + new_name)
        return "curl MOVE (Destination)", self.world.curl_auth + [
            "-o", "/dev/null", "-w", "%{http_code}", "-X", "MOVE", "-H", f"Destination: {target}", "-H", "Overwrite: F",
            self.url(path)], "201"


# --- what the server holds, watched while a change travels ---------------------------------
#
# A change made on the mount is "on the server" once the server would give it to anyone who
# asks. The cases poll for it from outside the mount, every few milliseconds, through a watch
# of the folders the change is in: `poll()` brings the watch up to date, then `names(folder)`
# and `files(folder)` say what the folder holds ({name: File(size, tag)}; None once the folder
# is gone), `tag` changing whenever the file's content may have, and `read(folder, name,
# length)` reads a file's content as the server has it. `own_requests`: requests the watch
# sent the server other than the change feed's (content reads), which an operation's request
# count leaves out.


class File:
    __slots__ = ("size", "tag")

    def __init__(self, size, tag):
        self.size, self.tag = size, tag


class FeedWatch:
    """sitefs-server's view of some folders, kept from its change feed: the cursor of "now" is
    taken first, then the folders are listed (each item as the API gives it), and every
    `poll()` asks the feed (wait=0, one keep-alive connection) what changed since, which is
    each changed item as it is now or its deletion, committed. An empty answer is a few
    hundred bytes, so polling every 5 ms costs the server little even while the watched
    folder holds thousands of files. `tag` is the item's etag."""

    def __init__(self, server, folders):
        self.server = server
        self.own_requests = 0
        origin = urllib.parse.urlsplit(server.mount_url)
        self.connection = http.client.HTTPConnection(origin.hostname, origin.port, timeout=60)
        self.cursor = self.get("/v1/changes")["next_cursor"]
        self.folders = {path: server.id_of(path) for path in folders}
        self.watched = set(self.folders.values())
        self.items = {}  # id -> item: the watched folders' children
        self.gone = set()  # watched folders deleted since
        for folder in self.watched:
            for item in server.children_items(folder):
                self.items[item["id"]] = item

    def get(self, path, headers=None):
        """One GET on the watch's connection (opened again once if the server closed it)."""
        for attempt in (1, 2):
            try:
                self.connection.request("GET", path, headers={"Authorization": f"Bearer {self.server.token}",
                                                              **(headers or {})})
                response = self.connection.getresponse()
                body = response.read()
                break
            except (http.client.HTTPException, ConnectionError):
                self.connection.close()
                if attempt == 2:
                    raise
        if response.status not in (200, 206):
            raise BenchFailure(f"HTTP {response.status} for GET {path}: {body[:300]!r}")
        return body if path.endswith("/content") else json.loads(body)

    def poll(self):
        for _ in range(100000):
            page = self.get(f"/v1/changes?cursor={urllib.parse.quote(self.cursor, safe='')}")
            for change in page["changes"]:
                item = change.get("item")
                if item is None:
                    self.items.pop(change["deleted"], None)
                    if change["deleted"] in self.watched:
                        self.gone.add(change["deleted"])
                elif item["parent_id"] in self.watched:
                    self.items[item["id"]] = item
                else:
                    self.items.pop(item["id"], None)  # moved out, or not ours
            self.cursor = page["next_cursor"]
            if not page["has_more"]:
                return
        raise BenchFailure("the change feed does not end")

    def children(self, folder):
        identifier = self.folders[folder]
        if identifier in self.gone:
            return None
        return {item["name"]: item for item in self.items.values() if item["parent_id"] == identifier}

    def names(self, folder):
        children = self.children(folder)
        return None if children is None else set(children)

    def files(self, folder):
        children = self.children(folder)
        return None if children is None else {name: File(item["size"], item["etag"]) for name, item in children.items()}

    def read(self, folder, name, length=None):
        item = self.children(folder)[name]
        self.own_requests += 1
        return self.get(f"/v1/items/{item['id']}/content", {"Range": f"bytes=0-{length - 1}"} if length else None)

    def close(self):
        self.connection.close()


class DiskWatch:
    """Apache's view of some folders: the served directory itself. mod_dav_fs writes a PUT's
    body to a temporary file beside the target (`.davfs.tmp...`, left out here) and renames
    it over the target when the body is complete, so a name shows once its content is whole.
    `tag` is (inode, mtime_ns, size)."""
    own_requests = 0

    def __init__(self, root):
        self.root = root

    def poll(self):
        pass

    @staticmethod
    def ours(name):
        return name != ".DAV" and not name.startswith(".davfs.tmp")

    def names(self, folder):
        try:
            return {name for name in os.listdir(self.root / folder) if self.ours(name)}
        except (FileNotFoundError, NotADirectoryError):
            return None

    def files(self, folder):
        try:
            entries = list(os.scandir(self.root / folder))
        except (FileNotFoundError, NotADirectoryError):
            return None
        found = {}
        for entry in entries:
            if not self.ours(entry.name):
                continue
            try:
                status = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            found[entry.name] = File(status.st_size, (status.st_ino, status.st_mtime_ns, status.st_size))
        return found

    def read(self, folder, name, length=None):
        with open(self.root / folder / name, "rb") as f:
            return f.read(length) if length else f.read()

    def close(self):
        pass


SERVERS = {"sitefs": SitefsServer, "apache": ApacheServer}

"""The bench's world: binaries, the seed, the server of the backend being measured (see
servers), the mount, curl's configs.

Everything it starts and creates lives under one temporary directory and is removed by
`close` (even after a failure or a signal); nothing is left mounted or running; traffic goes
to 127.0.0.1 only; secrets never appear on a command line (curl reads the Authorization
header from a 0600 file, the sign-ins read the password on standard input).
"""

import base64
import os
import shutil
import struct
import subprocess
import tempfile
import time
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from . import procs, servers
from .measure import BenchFailure, log

# Traffic stays on loopback: no proxy for curl, urllib or the daemon's libcurl.
for variable in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "ftp_proxy", "FTP_PROXY"):
    os.environ.pop(variable, None)
os.environ["no_proxy"] = os.environ["NO_PROXY"] = "*"
os.environ["LC_ALL"] = "C"


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
        self.daemon_pid = None

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
        """Release: the binaries an installation gets (scripts/lib/release-build.sh's stage:
        the Swift runtime linked in, stripped), since their memory and speed are what users
        see; a plain `swift build -c release` links the toolchain's shared libraries, which
        alone map 5 MiB more. Debug (CI's quick pass): the build scripts/test made. With
        SITEFS_BENCH_BIN, the binaries there, built earlier."""
        if self.s.binaries:
            log(f"measuring the binaries in {self.s.binaries} (no build)")
            self.bin = self.s.binaries
        else:
            self.compile()
        # sitefs keeps its sign-in and default cache under these; set only now, SwiftPM uses them too.
        os.environ["XDG_CONFIG_HOME"] = str(self.work / "xdg-config")
        os.environ["XDG_CACHE_HOME"] = str(self.work / "xdg-cache")

    def compile(self):
        log(f"building ({self.s.config})")
        release = self.s.config == "release"
        # Debug: one plain build of every product (one --product at a time plans again for each).
        command = ["bash", "scripts/lib/release-build.sh"] if release else ["swift", "build", "-c", self.s.config]
        with open(self.work / "build.log", "w") as out:
            result = subprocess.run(command, cwd=self.repository, stdout=out, stderr=subprocess.STDOUT, timeout=3600)
        if result.returncode != 0:
            print((self.work / "build.log").read_text()[-4000:])
            raise BenchFailure(f"{' '.join(command)} failed")
        if release:
            self.bin = self.repository / ".build-release" / "stage" / "bin"
        else:
            path = subprocess.run(["swift", "build", "-c", self.s.config, "--show-bin-path"], cwd=self.repository,
                                  capture_output=True, text=True, check=True, timeout=600).stdout.strip()
            self.bin = Path(path)

    def make_seed(self):
        s = self.s
        log(f"seeding: {s.n_small} small files, {s.n_empty} empty files, a {s.big_mb} MiB file, documents, "
            f"{s.n_photos} pictures and documents")
        for name in ("small", "empty", "big", "docs", "write", "scratch", "curl", "photos", "office"):
            (self.seed / name).mkdir(parents=True)
        make_photos(self.seed / "photos", s.n_photos)
        # The office-save case's document, which LibreOffice opens and saves.
        odt_document(self.seed / "office" / "minutes.odt", "Minutes of the bench's site meeting", 7)
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
        for source in (self.seed / "write" / "target.bin", docs / "report.csv", docs / "plan.odt", docs / "notes.txt"):
            shutil.copy(source, self.seed / "curl" / source.name)
        shutil.copytree(docs, self.local / "docs")  # the local baselines edit copies
        write_random(self.work / "write-src.bin", s.write_mb << 20)

    def serve(self, backend):
        """Starts the backend's server serving the seed and signs the mount in to it."""
        self.server = servers.SERVERS[backend](self)
        self.server.start()

    def stop_server(self):
        """Unmounts and stops the current server, so the next backend runs alone."""
        try:
            self.unmount()
        finally:
            if self.server:
                self.server.stop()

    # --- curl -------------------------------------------------------------------------------

    def curl_config(self, name, settings, urls, outputs=None):
        """A curl config file: one curl process, one connection, a request to each URL with
        the Authorization header and `settings`, every body discarded (or written to the
        file of the same index in `outputs`)."""
        return self.curl_config_groups(name, [(settings, urls, outputs)])

    def curl_config_groups(self, name, groups):
        """One curl config of several groups of requests, each (settings, urls, outputs or
        None) as in `curl_config`, separated by `next`: still one curl process, and curl keeps
        its connection from one group to the next."""
        lines = []
        for index, (settings, urls, outputs) in enumerate(groups):
            if index:
                lines.append("next")
            lines += [f'header = "@{self.auth}"'] + settings
            for position, url in enumerate(urls):
                lines += [f'url = "{url}"', f'output = "{outputs[position] if outputs else "/dev/null"}"']
        path = self.curl_dir / name
        path.write_text("".join(line + "\n" for line in lines))
        return path

    @contextmanager
    def operation(self, samples, watch=None):
        """Around one operation on the mount: its daemon CPU, peak RSS, bytes written and
        server requests go to `samples`. `watch`: the server watch polled meanwhile, whose
        own requests (content reads) are not the operation's."""
        cpu, offset = procs.cpu_seconds(self.daemon_pid), self.server.log_offset()
        written = procs.written_bytes(self.daemon_pid)
        own = watch.own_requests if watch else 0
        yield
        samples.cpu.append(procs.cpu_seconds(self.daemon_pid) - cpu)
        now_written = procs.written_bytes(self.daemon_pid)
        if written is not None and now_written is not None:
            samples.written.append(now_written - written)
        samples.requests.append(self.server.requests_since(offset) - ((watch.own_requests - own) if watch else 0))
        samples.peak_kib.append(procs.status_kib(self.daemon_pid, "VmHWM"))

    # --- the mount ------------------------------------------------------------------------

    # The mountpoint is the bench's mount (`mp`) unless another is given: server-load mounts
    # a server instance of its own at its own mountpoint, and tears it down the same way.

    def is_mounted(self, mp=None):
        mp = str(mp or self.mp)
        with open("/proc/self/mounts") as f:
            return any(line.split()[1] == mp for line in f)

    def find_daemon(self, mp=None):
        mp = str(mp or self.mp)
        return procs.find_process(lambda a: len(a) > 4 and a[1] == "mount" and a[3] == mp and a[4] == "--daemon-child")

    def unmount(self, mp=None):
        """Normal unmount (waits for uploads), fallbacks, and the daemon is gone after."""
        mp = mp or self.mp
        pid = self.find_daemon(mp)
        if self.is_mounted(mp):
            result = self.sitefs("unmount", str(mp), "--timeout", "300", timeout=330, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
            if result.returncode != 0:
                log(f"sitefs unmount failed: {result.stderr.strip()}")
                fallback = self.sitefs("unmount", "--no-wait", str(mp), timeout=30, capture_output=True)
                if fallback.returncode != 0:
                    subprocess.run(["fusermount3", "-u", "-z", str(mp)], timeout=30)
        if pid and not procs.stop(pid, 60):
            raise BenchFailure(f"the mount daemon (pid {pid}) does not end")
        if self.is_mounted(mp):
            raise BenchFailure(f"{mp} is still mounted")

    def mount_cold(self, env=None):
        """A fresh mount with an empty cache; `env`: the daemon's environment, if not the bench's."""
        self.unmount()
        shutil.rmtree(self.cache, ignore_errors=True)
        self.sitefs("mount", self.server.mount_url, str(self.mp), "--cache-dir", str(self.cache), "--log-file",
                    str(self.daemon_log), *self.s.mount_args, stdout=subprocess.DEVNULL, check=True, env=env)
        if not self.is_mounted():
            raise BenchFailure(f"sitefs mount returned but {self.mp} is not mounted")
        self.daemon_pid = self.find_daemon()
        if not self.daemon_pid:
            raise BenchFailure(f"no daemon process for {self.mp}")
        time.sleep(0.5)  # the first change-feed poll passes: cold means an empty cache, not a mount in progress

    @property
    def daemon_log(self):
        """One log per backend's mounts."""
        return self.work / f"daemon-{self.server.key}.log"

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

    def mount_status(self):
        """What `sitefs status MOUNTPOINT` prints (never timed)."""
        result = self.sitefs("status", str(self.mp), timeout=60, capture_output=True, text=True)
        if result.returncode != 0:
            raise BenchFailure(f"sitefs status failed: {result.stderr.strip()}")
        return result.stdout

    def sync_command(self):
        return [str(self.bin / "sitefs"), "sync", str(self.mp)]

    # --- the end ----------------------------------------------------------------------------

    def mounts_under_work(self):
        with open("/proc/self/mounts") as f:
            return [Path(line.split()[1]) for line in f if line.split()[1].startswith(str(self.work) + "/")]

    def close(self):
        """Unmounts, stops what it started and removes the work directory (kept with
        SITEFS_BENCH_KEEP=1). False when something stayed mounted."""
        # Every mount under the work directory: the bench's, and any a case left at its own mountpoint.
        for mp in {self.mp, *self.mounts_under_work()}:
            if self.bin and self.is_mounted(mp):
                self.sitefs("unmount", "--no-wait", str(mp), timeout=30, capture_output=True)
            if self.is_mounted(mp):
                subprocess.run(["fusermount3", "-u", "-z", str(mp)], timeout=30)
            pid = self.find_daemon(mp)
            if pid:
                procs.stop(pid, 10)
        if self.server:
            self.server.stop()
        if self.mounts_under_work():
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


# --- the files-window case's folder: pictures, PDFs and office documents -----------------

def photo_mix(count):
    """(JPEG, PNG, PDF, ODT) counts of a folder of `count` files: 70% pictures (half each),
    15% PDFs, the rest ODF text documents."""
    pictures = count * 7 // 10
    pdfs = count * 15 // 100
    return pictures - pictures // 2, pictures // 2, pdfs, count - pictures - pdfs


def make_photos(folder, count):
    """`count` distinct files a file manager shows thumbnails of: JPEG photos (1024x768,
    ImageMagick's plasma fractal, 80-100 KB), PNG drawings (800x600, a gradient and a disc),
    one-page PDFs (a coloured panel and a title) and ODF text documents carrying their own
    preview picture (Thumbnails/thumbnail.png, as LibreOffice saves them). The pictures come
    from two ImageMagick processes side by side (one per kind, each making all of its kind);
    without ImageMagick, they are PNGs written here. A few seconds on 2 cores."""
    jpegs, pngs, pdfs, odts = photo_mix(count)
    if shutil.which("convert"):
        plasma = ["convert", "-size", "320x240"]
        for i in range(jpegs):
            plasma += ["(", "-seed", str(i + 1), "plasma:fractal", ")"]
        plasma += ["-resize", "1024x768", "-quality", "85", "+adjoin", str(folder / "photo-%03d.jpg")]
        drawing = ["convert", "-size", "800x600"]
        for i in range(pngs):
            a, b, c = (",".join(map(str, colour(i + k))) for k in (0, 101, 57))
            drawing += ["(", f"gradient:rgb({a})-rgb({b})", "-fill", f"rgb({c})", "-draw",
                        f"circle {100 + i * 7 % 600},{120 + i * 5 % 360} {180 + i * 7 % 600},{200 + i * 5 % 360}", ")"]
        drawing += ["-depth", "8", "+adjoin", str(folder / "drawing-%03d.png")]
        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(lambda command: subprocess.run(command, capture_output=True, text=True, timeout=600),
                                    [plasma, drawing] if jpegs and pngs else [plasma] if jpegs else [drawing]))
        for result in results:
            if result.returncode != 0:
                raise BenchFailure(f"convert failed making the photos folder: {result.stderr.strip()[-500:]}")
    else:
        for i in range(jpegs + pngs):
            (folder / f"drawing-{i:03d}.png").write_bytes(png_picture(800, 600, i))
    for i in range(pdfs):
        (folder / f"report-{i:03d}.pdf").write_bytes(pdf_document(f"Site report {i + 1}", colour(i + 31)))
    for i in range(odts):
        odt_document(folder / f"minutes-{i:03d}.odt", f"Minutes of site meeting {i + 1}", i)


def colour(i):
    """A colour of its own for each index: (r, g, b)."""
    return (i * 37 % 256, i * 91 % 256, (i * 53 + 128) % 256)


def png_picture(width, height, seed):
    """A PNG (RGB, 8 bits) of horizontal bands shading between two colours of the seed's."""
    a, b = colour(seed), colour(seed + 101)
    rows = []
    for y in range(height):
        mix = y / max(height - 1, 1)
        pixel = bytes(round(a[k] + (b[k] - a[k]) * mix) for k in range(3))
        rows.append(b"\0" + pixel * width)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(b"".join(rows), 6)) + chunk(b"IEND", b""))


def pdf_document(title, rgb):
    """A valid one-page A4 PDF: a coloured panel, a title in Helvetica and a few lines."""
    r, g, b = (round(v / 255, 3) for v in rgb)
    lines = [f"BT /F1 28 Tf 60 760 Td ({title}) Tj ET", f"{r} {g} {b} rg 60 420 475 300 re f",
             "0 0 0 rg"] + [f"BT /F1 12 Tf 60 {390 - 18 * k} Td (Item {k + 1}: inspected, within tolerance.) Tj ET"
                            for k in range(12)]
    stream = "\n".join(lines).encode()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def odt_document(path, title, seed):
    """An ODF text document as LibreOffice saves one: `mimetype` first and stored, the
    manifest, the content, and its preview picture (a 181x256 PNG) in Thumbnails/."""
    content = ('<?xml version="1.0" encoding="UTF-8"?>\n'
               '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
               'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2">'
               f'<office:body><office:text><text:h>{title}</text:h>'
               + "".join(f"<text:p>Point {k + 1}: agreed, to be followed up next week.</text:p>" for k in range(40))
               + '</office:text></office:body></office:document-content>')
    manifest = ('<?xml version="1.0" encoding="UTF-8"?>\n'
                '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" '
                'manifest:version="1.2">'
                '<manifest:file-entry manifest:full-path="/" manifest:version="1.2" '
                'manifest:media-type="application/vnd.oasis.opendocument.text"/>'
                '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
                '<manifest:file-entry manifest:full-path="Thumbnails/thumbnail.png" manifest:media-type="image/png"/>'
                '</manifest:manifest>')
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.text", zipfile.ZIP_STORED)
        archive.writestr("META-INF/manifest.xml", manifest, zipfile.ZIP_DEFLATED)
        archive.writestr("content.xml", content, zipfile.ZIP_DEFLATED)
        archive.writestr("Thumbnails/thumbnail.png", png_picture(181, 256, seed + 200), zipfile.ZIP_DEFLATED)

"""The extract case: how long sitefs-server takes to read the text of one version of a
50-page document for its search index (quick: 10 pages), as an .odt and as a .pdf, both
written by LibreOffice from the same generated text.

`DocumentText.extract` is internal to the server, so it is timed in-process by the test
bundle's `documentTextBench` (Tests/SitefsServerTests/DocumentTextBench.swift), which a
request file names (SITEFS_EXTRACT_BENCH) and which writes its figures back as JSON; the
suite skips it without the variable. It is built in the bench's configuration: debug in the
default build folder (scripts/test has built it; CI's quick run), release with testable
imports in a build folder of its own (.build-bench-tests), so the bench's release binaries
are not rebuilt with other flags (the first release run builds it: about 25 minutes on 2
cores, then only what changed).

Baselines, same run, same files:
  .pdf: pdftotext run alone on it (the child the server runs, without the server's part:
        spawning it, reading its pipe, collapsing whitespace);
  .odt: inflating content.xml alone (Python's zipfile: zlib, as ZIPFoundation), the floor
        under anything that reads the XML inside.
"""

import json
import os
import subprocess
import threading
import time
import zipfile

from .measure import BenchFailure, Samples, log

PAGES = 50
QUICK_PAGES = 10
SCRATCH_RELEASE = ".build-bench-tests"


def page_html(number):
    """One page's worth of text (about 500 words: a heading, five paragraphs, a small table),
    with a page break before it, so the document has exactly as many pages as this is
    called for (checked with pdfinfo)."""
    words = ("inspection of the fire door on level {n} found the closer adjusted, the seal intact and the "
             "signage present; Brandschutztür Prüfung café résumé naïve; the contractor will return to "
             "replace the damaged hinge cover before handover, and the site manager signs off once the ")
    paragraphs = "".join(f"<p>Paragraph {p} of page {number}: {words.format(n=number)}"
                         f"{words.format(n=number + p)}follow-up visit is booked.</p>" for p in range(1, 6))
    table = ("<table><tr><td>room</td><td>door</td><td>status</td></tr>"
             f"<tr><td>R{number:03d}</td><td>D{number:03d}</td><td>checked</td></tr></table>")
    style = ' style="page-break-before: always"' if number > 1 else ""
    return f"<h1{style}>Page {number}: fire doors</h1>{paragraphs}{table}"


def make_documents(world, pages):
    """The .odt and the .pdf, made by headless LibreOffice with a private profile."""
    folder = world.work / "extract"
    folder.mkdir(exist_ok=True)
    html = folder / "report.html"
    body = "".join(page_html(n) for n in range(1, pages + 1))
    html.write_text(f'<html><head><meta charset="utf-8"><title>Fire door report</title></head><body>{body}</body></html>',
                    encoding="utf-8")
    profile = (world.work / "extract-lo-profile").as_uri()
    for target in ("odt", "pdf"):
        command = ["soffice", f"-env:UserInstallation={profile}", "--headless", "--norestore",
                   "--infilter=HTML (StarWriter)", "--convert-to", target, "--outdir", str(folder), str(html)]
        try:
            subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300, check=True)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
            raise BenchFailure(f"LibreOffice could not write the {target}: {error}")
    odt, pdf = folder / "report.odt", folder / "report.pdf"
    for path in (odt, pdf):
        if not path.exists():
            raise BenchFailure(f"LibreOffice wrote no {path.name}")
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, timeout=60).stdout
    counted = next((line.split()[-1] for line in info.splitlines() if line.startswith("Pages:")), "?")
    return odt, pdf, counted


def run_harness(world, files, runs):
    """DocumentText.extract timed in-process by the test bundle; its figures by file name."""
    request = world.work / "extract-request.json"
    output = world.work / "extract-result.json"
    request.write_text(json.dumps({"files": [{"path": str(path), "name": path.name} for path in files],
                                   "runs": runs, "output": str(output)}))
    command = ["swift", "test", "-c", world.s.config, "--filter", "SitefsServerTests.documentTextBench"]
    if world.s.config == "release":
        command += ["--scratch-path", str(world.repository / SCRATCH_RELEASE)]
    log(f"extract: building and running the test bundle's harness ({world.s.config}; the first release build "
        "takes a while)")
    environment = dict(os.environ, SITEFS_EXTRACT_BENCH=str(request))
    with open(world.work / "extract-harness.log", "w") as out:
        result = subprocess.run(command, cwd=world.repository, stdout=out, stderr=subprocess.STDOUT,
                                env=environment, timeout=3600)
    if result.returncode != 0 or not output.exists():
        tail = (world.work / "extract-harness.log").read_text(errors="replace")[-3000:]
        raise BenchFailure(f"the extraction harness failed (exit {result.returncode}):\n{tail}")
    return {entry["name"]: entry for entry in json.loads(output.read_text())["files"]}


def run_alone(command, timeout):
    """Seconds from spawning `command` until it is reaped. Not `timed`: subprocess's wait
    with a timeout polls, sleeping up to 50 ms at a time, which is more than a pdftotext run
    of a 50-page PDF takes; this waits in waitpid, with a timer to kill it at `timeout`."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    timer = threading.Timer(timeout, process.kill)
    timer.start()
    try:
        status = process.wait()
    finally:
        timer.cancel()
    elapsed = time.perf_counter() - started
    if status != 0:
        raise BenchFailure(f"exit {status}: {' '.join(command)}")
    return elapsed


def extract(world, rec, result):
    s = world.s
    pages = QUICK_PAGES if s.quick else PAGES
    log(f"extract: LibreOffice writes a {pages}-page report as .odt and .pdf")
    odt, pdf, counted = make_documents(world, pages)
    figures = run_harness(world, [odt, pdf], s.runs)
    result.setdefault("extract", {})["pages"] = counted

    inflate = Samples()
    for _ in range(s.runs):
        started = time.perf_counter()
        with zipfile.ZipFile(odt) as archive:
            archive.read("content.xml")
        inflate.add(time.perf_counter() - started)
    pdftotext = Samples()
    for _ in range(s.runs):
        pdftotext.add(run_alone(["pdftotext", "-q", "-enc", "UTF-8", str(pdf), "-"], s.op_timeout))

    for path, label, baseline_label, baseline in (
            (odt, "odt", "inflating content.xml alone", inflate),
            (pdf, "pdf", "pdftotext alone", pdftotext)):
        entry = figures.get(path.name)
        if entry is None:
            raise BenchFailure(f"the harness gave no figures for {path.name}")
        if entry["outcome"] != "complete":
            raise BenchFailure(f"{path.name}: the extraction ended {entry['outcome']}")
        measured = Samples()
        for seconds in entry["seconds"]:
            measured.add(seconds)
        notes = (f"{counted} pages, {path.stat().st_size // 1024} KiB file, {entry['text_bytes'] // 1024} KiB of text; "
                 f"{s.config} build")
        rec.compare(f"extract text, {pages}-page .{label}", measured, baseline_label, baseline, ("info",), notes=notes)

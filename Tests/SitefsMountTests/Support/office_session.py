"""A LibreOffice (headless, over UNO) that a test drives line by line on stdin, as a person
would drive the application: open a document, edit and store it, close it.

    office_session.py PROFILE_DIR

Prints "ready" once LibreOffice answers, then for each command one answer line:
    open PATH     -> "opened readonly=True|False" (or "error ...")
    edit TEXT     -> "stored" once TEXT is appended to the open text document and stored
    save TEXT     -> the same, answering "storing" just before XStorable.store() and
                     "stored SECONDS" once it returns (SECONDS: store()'s own time; the
                     bench's office-save case, scripts/lib/sitefs_bench/office.py)
    close         -> "closed"
    quit          -> LibreOffice ends, and so does this script

Opened with no interaction handler, as a program loading through the API does: a document
whose lock file names someone else opens read-only (LibreOffice's own rule), which is what
the "Document in use" dialog offers a person first.
"""
import os, subprocess, sys, time, uno
from com.sun.star.beans import PropertyValue


def prop(name, value):
    p = PropertyValue(); p.Name = name; p.Value = value; return p


def answer(line):
    sys.stdout.write(line + "\n"); sys.stdout.flush()


def main():
    profile = sys.argv[1]
    pipe = "sitefs_office_%d" % os.getpid()
    office = subprocess.Popen(["soffice", "--headless", "--invisible", "--norestore", "--nologo", "--nodefault",
                               "-env:UserInstallation=" + uno.systemPathToFileUrl(profile),
                               "--accept=pipe,name=%s;urp;" % pipe],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    desktop = None
    try:
        local = uno.getComponentContext()
        resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
        for attempt in range(300):
            try:
                context = resolver.resolve("uno:pipe,name=%s;urp;StarOffice.ComponentContext" % pipe); break
            except Exception:
                time.sleep(0.2)
        else:
            answer("error LibreOffice did not start"); return
        desktop = context.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", context)
        answer("ready")
        doc = None
        for line in sys.stdin:
            command, _, argument = line.rstrip("\n").partition(" ")
            try:
                if command == "open":
                    doc = desktop.loadComponentFromURL(uno.systemPathToFileUrl(argument), "_blank", 0, (prop("Hidden", True),))
                    answer("error cannot open " + argument if doc is None else "opened readonly=%s" % doc.isReadonly())
                elif command == "edit":
                    text = doc.getText()
                    text.insertString(text.getEnd(), argument, False)
                    doc.store()
                    answer("stored")
                elif command == "save":
                    text = doc.getText()
                    text.insertString(text.getEnd(), argument, False)
                    answer("storing")
                    started = time.perf_counter()
                    doc.store()
                    answer("stored %.6f" % (time.perf_counter() - started))
                elif command == "close":
                    doc.close(True); doc = None
                    answer("closed")
                elif command == "quit":
                    return
                else:
                    answer("error unknown command " + command)
            except Exception as error:
                answer("error %s: %s" % (type(error).__name__, error))
    finally:
        try:
            if desktop is not None: desktop.terminate()
        except Exception:
            pass
        try: office.wait(timeout=30)
        except Exception: office.kill()


main()

"""sitefs in the file manager: what Files (Nautilus) and Nemo share.

Emblems: each item on a sitefs mount shows its state (the daemon's `user.sitefs.state`
attribute): only on the server, kept on this device, downloading, waiting to upload or
uploading, conflict copy, failed, only here. The daemon tells state changes on a Unix
socket (`user.sitefs.events` on the mount root names it; a JSON line per change), and
the item's information is invalidated, so the file manager asks again: an emblem
follows an upload or a download within a moment, and nothing polls.

Context menu: Keep on this device / Stop keeping on this device (`sitefs pin` /
`sitefs unpin`), Free up space (`sitefs evict`), Sync now (`sitefs sync`), and on a
conflict copy, Show the server's version (opens the file it was saved beside). Each
runs `sitefs` without blocking the window; a failure becomes a desktop notification.
On a folder (its menu, or the background of an open one), Search in this site asks for
words and opens the site's search folder, `MOUNT/.search/WORDS site:"SITE"`, whose
entries the daemon fills with what the server finds (see `search_folder_name`).

`SITEFS_DESKTOP_RECORD`: a file where every emblem set and every action run is written
as a JSON line (the tests read it).
"""

import json
import os
import re
import time

from gi.repository import Gio, GLib

STATE_ATTRIBUTE = "user.sitefs.state"
PINNED_ATTRIBUTE = "user.sitefs.pinned"
EVENTS_ATTRIBUTE = "user.sitefs.events"

# The daemon's states, the emblem each shows (icons installed by sitefs, hicolor theme) and
# what it means to a person.
EMBLEMS = {
    "online-only": ("emblem-sitefs-online-only", "Only on the server"),
    "downloaded": ("emblem-sitefs-kept", "Kept on this device"),
    "downloading": ("emblem-sitefs-downloading", "Downloading to keep on this device"),
    "on-device": ("emblem-sitefs-on-device", "On this device"),
    "pending": ("emblem-sitefs-uploading", "Waiting to upload"),
    "uploading": ("emblem-sitefs-uploading", "Uploading"),
    "conflict": ("emblem-sitefs-conflict", "Conflict copy: the server had a newer version"),
    "failed": ("emblem-sitefs-failed", "Upload failed: see `sitefs status`"),
    "local": ("emblem-sitefs-only-here", "Only on this device: never sent to the server"),
}

CONFLICT_NAME = re.compile(r"^(?P<stem>.*) \((?:conflict|rescued) \d{4}-\d{2}-\d{2} \d{6} [^)]*\)(?P<extension>\.[^.]*)?$")

# Seconds between tries to reach a mount's state events when a try failed.
LISTEN_RETRY = 5.0

# Items whose information the file manager gave us, by path, so a state change can
# invalidate them; bounded (the oldest are forgotten first).
MAXIMUM_KNOWN = 20000


def record(event):
    """Appends `event` to $SITEFS_DESKTOP_RECORD, when set."""
    target = os.environ.get("SITEFS_DESKTOP_RECORD")
    if not target:
        return
    event = dict(event, time=time.time())
    with open(target, "a", encoding="utf-8") as out:
        out.write(json.dumps(event, sort_keys=True) + "\n")


def decode_mountinfo_path(text):
    """/proc/self/mountinfo escapes space, tab, newline and backslash as \\NNN."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def sitefs_mounts(mountinfo="/proc/self/mountinfo"):
    """Mount points of fuse.sitefs filesystems, longest first."""
    points = []
    try:
        with open(mountinfo, encoding="utf-8", errors="surrogateescape") as lines:
            for line in lines:
                fields = line.split()
                if " - " not in line:
                    continue
                after = line.split(" - ", 1)[1].split()
                if after and after[0] == "fuse.sitefs":
                    points.append(decode_mountinfo_path(fields[4]))
    except OSError:
        return []
    return sorted(points, key=len, reverse=True)


def attribute(path, name):
    """An extended attribute's value as text, or None."""
    try:
        return os.getxattr(path, name).decode("utf-8", "replace")
    except OSError:
        return None


SEARCH_FOLDER = ".search"

# The longest name a folder may have (NAME_MAX), in bytes.
NAME_MAX = 255


def search_folder_name(words, site):
    r"""The search folder's name for `words` in `site`, as `sitefs search` makes it: the
    words (runs of blanks as one space), then ` site:"SITE"`, always quoted, with `\` and
    `"` escaped by a backslash. Raises ValueError saying what to change when it cannot be a
    folder name: no words, a `/` or a control character, more than 255 bytes."""
    text = " ".join(part for part in re.split(r"[ \t]+", words) if part)
    if not text:
        raise ValueError("give the words to search for")
    for part, value in (("the words", text), ("the site", site)):
        if "/" in value:
            raise ValueError(part + " may not contain '/': a search is a folder name")
        if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or c in "\u2028\u2029" for c in value):
            raise ValueError(part + " may not contain control characters")
    quoted = '"' + site.replace("\\", "\\\\").replace('"', '\\"') + '"'
    name = text + " site:" + quoted
    if text in (".", ".."):
        raise ValueError("'.' and '..' are no search")
    size = len(name.encode("utf-8", "surrogateescape"))
    if size > NAME_MAX:
        raise ValueError("the search is %d bytes as a folder name, and a folder name holds at most %d: "
                         "use fewer or shorter words" % (size, NAME_MAX))
    return name


def original_of_conflict(name):
    """`plan (conflict 2026-11-27 101500 anna).odt` -> `plan.odt`; None for other names."""
    match = CONFLICT_NAME.match(name)
    if not match:
        return None
    return match.group("stem") + (match.group("extension") or "")


class Desktop:
    """The file-manager-independent part: mounts, states, events, commands."""

    def __init__(self):
        self.mounts = []
        self.mounts_read = 0.0
        self.known = {}
        self.listeners = {}  # mount point -> (connection, stream)
        self.listen_tried = {}  # mount point -> when a connection was last tried
        self.sitefs = os.environ.get("SITEFS_COMMAND") or GLib.find_program_in_path("sitefs") or "sitefs"

    # Mounts and paths

    def mount_of(self, path):
        """The sitefs mount point `path` is on, or None. Re-reads the mount table at most
        once a second when nothing matches (a mount made since)."""
        for point in self.mounts:
            if path == point or path.startswith(point.rstrip("/") + "/"):
                return point
        now = time.monotonic()
        if now - self.mounts_read < 1.0:
            return None
        self.mounts_read = now
        self.mounts = sitefs_mounts()
        for point in self.mounts:
            if path == point or path.startswith(point.rstrip("/") + "/"):
                return point
        return None

    def site_of(self, path):
        """(mount, site name) for a path inside a site of a sitefs mount; None for the mount
        root, anything outside a mount, and the search folders (`MOUNT/.search/...`)."""
        mount = self.mount_of(path)
        if mount is None or path == mount:
            return None
        site = path[len(mount.rstrip("/")) + 1:].split("/", 1)[0]
        if not site or site == SEARCH_FOLDER:
            return None
        return mount, site

    @staticmethod
    def path_of(item):
        location = item.get_location()
        return location.get_path() if location is not None else None

    # Emblems

    def update(self, item):
        """Sets the emblem of one item (the file manager's InfoProvider call)."""
        path = self.path_of(item)
        if not path:
            return
        mount = self.mount_of(path)
        if mount is None or path == mount:
            return
        self.listen(mount)
        state = attribute(path, STATE_ATTRIBUTE)
        if state is None:
            return
        self.remember(path, item)
        emblem = EMBLEMS.get(state)
        if emblem:
            item.add_emblem(emblem[0])
            item.add_string_attribute("sitefs_state", emblem[1])
        record({"event": "emblem", "path": path, "state": state, "emblem": emblem[0] if emblem else None})

    def remember(self, path, item):
        self.known.pop(path, None)
        self.known[path] = item
        while len(self.known) > MAXIMUM_KNOWN:
            self.known.pop(next(iter(self.known)))

    # State changes from the daemon

    def listen(self, mount):
        """Connects to the mount's state events once (again after the daemon restarts); a
        failed try is not repeated for LISTEN_RETRY seconds."""
        if mount in self.listeners:
            return
        now = time.monotonic()
        if now - self.listen_tried.get(mount, -LISTEN_RETRY) < LISTEN_RETRY:
            return
        self.listen_tried[mount] = now
        socket_path = attribute(mount, EVENTS_ATTRIBUTE)
        if not socket_path:
            return
        try:
            connection = Gio.SocketClient().connect(Gio.UnixSocketAddress.new(socket_path), None)
        except GLib.Error as error:
            record({"event": "listen-failed", "mount": mount, "error": error.message})
            return
        stream = Gio.DataInputStream.new(connection.get_input_stream())
        self.listeners[mount] = (connection, stream)
        record({"event": "listening", "mount": mount})
        self.read_next(mount, stream)

    def read_next(self, mount, stream):
        stream.read_line_async(GLib.PRIORITY_DEFAULT, None, self.line_read, mount)

    def line_read(self, stream, result, mount):
        try:
            line, _ = stream.read_line_finish_utf8(result)
        except GLib.Error:
            line = None
        if line is None:
            # The daemon is gone (unmounted, restarted): listen again at the next update.
            self.listeners.pop(mount, None)
            self.listen_tried.pop(mount, None)
            record({"event": "listening-ended", "mount": mount})
            return
        try:
            change = json.loads(line)
            path = os.path.join(mount, change["path"])
        except (ValueError, KeyError, TypeError):
            path = None
        if path:
            item = self.known.get(path)
            record({"event": "change", "path": path, "state": change.get("state"), "known": item is not None})
            if item is not None:
                item.invalidate_extension_info()
        self.read_next(mount, stream)

    # The context menu

    def actions(self, items):
        """(name, label, tip, handler) for a selection, or [] when it is not all on sitefs."""
        paths = [self.path_of(item) for item in items]
        if not paths or any(p is None for p in paths):
            return []
        mounts = {self.mount_of(p) for p in paths}
        if None in mounts or len(mounts) != 1 or any(p == next(iter(mounts)) for p in paths):
            return []
        mount = next(iter(mounts))
        states = [attribute(p, STATE_ATTRIBUTE) for p in paths]
        # "1": pinned itself; "folder": kept by a pinned folder above (whose menu unpins it).
        pins = [attribute(p, PINNED_ATTRIBUTE) for p in paths]
        pinned = [pin == "1" for pin in pins]
        actions = []
        if any(pin is None for pin in pins):
            actions.append(("SitefsPin", "Keep on This Device", "Download and keep these, usable offline",
                            lambda: self.run(["pin"] + [p for p, pin in zip(paths, pins) if pin is None],
                                             "keep on this device")))
        if any(pinned):
            actions.append(("SitefsUnpin", "Stop Keeping on This Device", "Let these go back to online-only",
                            lambda: self.run(["unpin"] + [p for p, kept in zip(paths, pinned) if kept], "stop keeping")))
        actions.append(("SitefsEvict", "Free Up Space", "Remove the local copies of what is on the server",
                        lambda: self.run(["evict"] + paths, "free up space")))
        actions.append(("SitefsSync", "Sync Now", "Send every waiting save to the server now",
                        lambda: self.run(["sync", mount, "--timeout", "120"], "sync")))
        if len(paths) == 1 and os.path.isdir(paths[0]):
            actions += self.search_actions(paths[0])
        if len(paths) == 1 and states[0] == "conflict":
            original = original_of_conflict(os.path.basename(paths[0]))
            if original:
                server_version = os.path.join(os.path.dirname(paths[0]), original)
                actions.append(("SitefsShowServerVersion", "Show the Server's Version",
                                "Open " + original + ", the version the server kept",
                                lambda: self.open(server_version)))
        return actions

    def background_actions(self, folder):
        """The menu of an open folder's background: Search in this site, in a site."""
        path = self.path_of(folder)
        return self.search_actions(path) if path else []

    def search_actions(self, folder):
        """Search in this site, for a folder in a site of a sitefs mount; else nothing."""
        place = self.site_of(folder)
        if place is None:
            return []
        mount, site = place
        return [("SitefsSearch", "Search in This Site…", "Find documents in " + site + " by name and text",
                 lambda: self.ask_words(site, lambda words: self.open_search(mount, site, words)))]

    def search_target(self, folder, words):
        """The search folder that searching `words` from `folder` opens (ValueError when
        there is none: not in a site, or words that cannot be a folder name)."""
        place = self.site_of(folder)
        if place is None:
            raise ValueError(folder + " is not in a site of a sitefs mount")
        mount, site = place
        return os.path.join(mount, SEARCH_FOLDER, search_folder_name(words, site))

    def open_search(self, mount, site, words):
        """Opens the search folder in the file manager; a search that cannot be a folder
        name is a notification saying why."""
        try:
            path = os.path.join(mount, SEARCH_FOLDER, search_folder_name(words, site))
        except ValueError as error:
            self.notify("sitefs: cannot search", str(error))
            return
        record({"event": "search", "path": path})
        self.open(path)

    def ask_words(self, site, done):
        """Asks for the words in a small dialog (GTK 4 in Files, GTK 3 in Nemo: whichever
        the file manager loaded) and calls `done(words)` unless cancelled."""
        from gi.repository import Gtk

        dialog = Gtk.Dialog(title="Search in " + site, modal=True)
        dialog.add_button("_Cancel", Gtk.ResponseType.CANCEL)
        dialog.add_button("_Search", Gtk.ResponseType.OK)
        dialog.set_default_response(Gtk.ResponseType.OK)
        entry = Gtk.Entry(activates_default=True)
        entry.set_placeholder_text("Words in names or text")
        area = dialog.get_content_area()
        if hasattr(area, "append"):
            area.append(entry)
        else:
            area.pack_start(entry, True, True, 6)

        def answered(_dialog, response):
            words = entry.get_text()
            dialog.destroy()
            if response == Gtk.ResponseType.OK and words.strip():
                done(words)

        dialog.connect("response", answered)
        if hasattr(dialog, "show_all"):
            dialog.show_all()
        else:
            dialog.present()

    def run(self, arguments, what):
        """Runs `sitefs ARGUMENTS` without blocking; a failure is notified."""
        record({"event": "action", "arguments": arguments})
        try:
            process = Gio.Subprocess.new([self.sitefs] + arguments,
                                         Gio.SubprocessFlags.STDOUT_PIPE | Gio.SubprocessFlags.STDERR_PIPE)
        except GLib.Error as error:
            self.notify("sitefs: " + what + " failed", error.message)
            return
        process.communicate_utf8_async(None, None, self.finished, (arguments, what))

    def finished(self, process, result, context):
        arguments, what = context
        try:
            _, out, err = process.communicate_utf8_finish(result)
        except GLib.Error as error:
            out, err = "", error.message
        status = process.get_exit_status() if process.get_if_exited() else -1
        record({"event": "action-finished", "arguments": arguments, "status": status, "out": out, "err": err})
        if status != 0:
            message = (err or out or "").strip().replace("Error: ", "")
            self.notify("sitefs: " + what + " failed", message[:1000])

    def open(self, path):
        record({"event": "action", "arguments": ["open", path]})
        try:
            Gio.AppInfo.launch_default_for_uri(Gio.File.new_for_path(path).get_uri(), None)
        except GLib.Error as error:
            self.notify("sitefs: cannot open the server's version", error.message)

    def notify(self, summary, body):
        """A freedesktop notification, as the daemon sends them; the record has it too."""
        record({"event": "notification", "summary": summary, "body": body})
        try:
            bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
            bus.call("org.freedesktop.Notifications", "/org/freedesktop/Notifications",
                     "org.freedesktop.Notifications", "Notify",
                     GLib.Variant("(susssasa{sv}i)", ("sitefs", 0, "dialog-warning", summary, body, [], {}, -1)),
                     None, Gio.DBusCallFlags.NONE, 5000, None, None, None)
        except GLib.Error:
            pass


def providers(gobject, api, desktop):
    """The InfoProvider and MenuProvider classes for a file manager's extension API
    (`Nautilus` or `Nemo`): the same logic, its own GObject types. Nemo's MenuProvider
    calls also pass the window first: the selection (or the open folder) is always the last
    argument."""

    class SitefsEmblems(gobject.GObject, api.InfoProvider):
        def update_file_info(self, item):
            desktop.update(item)
            return api.OperationResult.COMPLETE

    class SitefsMenu(gobject.GObject, api.MenuProvider):
        def get_file_items(self, *arguments):
            items = arguments[-1]
            menu = []
            for name, label, tip, handler in desktop.actions(items):
                entry = api.MenuItem(name=name, label=label, tip=tip)
                entry.connect("activate", lambda _entry, run=handler: run())
                menu.append(entry)
            return menu

        def get_background_items(self, *arguments):
            menu = []
            for name, label, tip, handler in desktop.background_actions(arguments[-1]):
                entry = api.MenuItem(name=name, label=label, tip=tip)
                entry.connect("activate", lambda _entry, run=handler: run())
                menu.append(entry)
            return menu

    return SitefsEmblems, SitefsMenu

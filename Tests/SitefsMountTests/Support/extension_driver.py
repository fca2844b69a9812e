"""Drives sitefs's file manager extensions (scripts/packaging/desktop) outside the file
manager, against its real GObject types: each path becomes an object implementing
Nautilus.FileInfo (or Nemo.FileInfo), given to the extension's InfoProvider and
MenuProvider as the file manager would.

    extension_driver.py EXTENSION_DIR FILE_MANAGER emblems PATH...       -> {"PATH": [emblems], ...}
    extension_driver.py EXTENSION_DIR FILE_MANAGER menu PATH...          -> ["label", ...]
    extension_driver.py EXTENSION_DIR FILE_MANAGER activate NAME PATH... -> the finished
        action (JSON), once its `sitefs` run ended (a main loop runs until then, at most 60 s).
    extension_driver.py EXTENSION_DIR FILE_MANAGER background-menu FOLDER -> ["label", ...]
        of the open folder's background menu
    extension_driver.py EXTENSION_DIR FILE_MANAGER search-path FOLDER WORDS -> {"path": ...}
        or {"error": ...}: the search folder searching WORDS from FOLDER opens
    extension_driver.py EXTENSION_DIR FILE_MANAGER search item|background FOLDER WORDS ->
        what choosing Search in This Site did, the dialog answered with WORDS: {"opened":
        PATH} or {"notified": BODY}

FILE_MANAGER: nautilus (Nautilus 4.0 typelib, sitefs-nautilus.py) or nemo (Nemo 3.0,
sitefs-nemo.py, whose MenuProvider also takes the window).
"""

import importlib.util
import json
import os
import sys

import gi

FILE_MANAGER = sys.argv[2]
if FILE_MANAGER == "nemo":
    gi.require_version("Nemo", "3.0")
    from gi.repository import Nemo as Provider  # noqa: E402
else:
    gi.require_version("Nautilus", "4.0")
    from gi.repository import Nautilus as Provider  # noqa: E402
from gi.repository import Gio, GLib, GObject  # noqa: E402


class Item(GObject.Object, Provider.FileInfo):
    """A file as Files hands it to extensions: its location, and what they set on it."""

    def __init__(self, path):
        super().__init__()
        self.path = path
        self.emblems = []
        self.invalidated = 0

    def do_get_location(self):
        return Gio.File.new_for_path(self.path)

    def do_get_uri(self):
        return Gio.File.new_for_path(self.path).get_uri()

    def do_get_name(self):
        return os.path.basename(self.path)

    def do_is_directory(self):
        return os.path.isdir(self.path)

    def do_add_emblem(self, name):
        self.emblems.append(name)

    def do_add_string_attribute(self, name, value):
        pass

    def do_invalidate_extension_info(self):
        self.invalidated += 1


def load(directory):
    name = "sitefs-nemo.py" if FILE_MANAGER == "nemo" else "sitefs-nautilus.py"
    spec = importlib.util.spec_from_file_location("sitefs_extension", os.path.join(directory, name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    directory, command, rest = sys.argv[1], sys.argv[3], sys.argv[4:]
    extension = load(directory)

    def menu(items):
        provider = extension.SitefsMenu()
        return provider.get_file_items(None, items) if FILE_MANAGER == "nemo" else provider.get_file_items(items)

    if command == "emblems":
        items = [Item(path) for path in rest]
        provider = extension.SitefsEmblems()
        for item in items:
            provider.update_file_info(item)
        print(json.dumps({item.path: item.emblems for item in items}))
        return
    if command == "menu":
        entries = menu([Item(path) for path in rest])
        print(json.dumps([entry.props.label for entry in entries]))
        return
    if command == "background-menu":
        provider = extension.SitefsMenu()
        folder = Item(rest[0])
        entries = provider.get_background_items(None, folder) if FILE_MANAGER == "nemo" else provider.get_background_items(folder)
        print(json.dumps([entry.props.label for entry in entries]))
        return
    if command == "search-path":
        try:
            print(json.dumps({"path": extension.DESKTOP.search_target(rest[0], rest[1])}))
        except ValueError as error:
            print(json.dumps({"error": str(error)}))
        return
    if command == "search":
        where, folder, words = rest
        desktop = extension.DESKTOP
        outcome = {}
        # The dialog answered at once with WORDS; nothing is launched, what would be is told.
        desktop.ask_words = lambda site, done: done(words)
        desktop.open = lambda path: outcome.update(opened=path)
        desktop.notify = lambda summary, body: outcome.update(notified=body)
        provider = extension.SitefsMenu()
        if where == "background":
            entries = (provider.get_background_items(None, Item(folder)) if FILE_MANAGER == "nemo"
                       else provider.get_background_items(Item(folder)))
        else:
            entries = menu([Item(folder)])
        chosen = [entry for entry in entries if entry.props.name == "SitefsSearch"]
        if not chosen:
            print(json.dumps({"error": "no search entry", "entries": [e.props.name for e in entries]}))
            sys.exit(2)
        chosen[0].activate()
        print(json.dumps(outcome))
        return
    if command == "activate":
        name, paths = rest[0], rest[1:]
        entries = menu([Item(path) for path in paths])
        chosen = [entry for entry in entries if entry.props.name == name]
        if not chosen:
            print(json.dumps({"error": "no menu entry " + name, "entries": [e.props.name for e in entries]}))
            sys.exit(2)
        loop = GLib.MainLoop()
        outcome = {}
        original = extension.DESKTOP.finished

        def finished(process, result, context):
            original(process, result, context)
            outcome.update(status=process.get_exit_status(), arguments=context[0])
            loop.quit()

        extension.DESKTOP.finished = finished
        chosen[0].activate()
        GLib.timeout_add_seconds(60, loop.quit)
        loop.run()
        print(json.dumps(outcome))
        return
    sys.exit("unknown command " + command)


main()

"""Drives sitefs's Files extension (scripts/packaging/desktop) outside Files, against the
real Nautilus GObject types: each path becomes an object implementing Nautilus.FileInfo,
given to the extension's InfoProvider and MenuProvider as Files would.

    extension_driver.py EXTENSION_DIR emblems PATH...      -> {"PATH": [emblems], ...}
    extension_driver.py EXTENSION_DIR menu PATH...         -> ["label", ...]
    extension_driver.py EXTENSION_DIR activate NAME PATH... -> the finished action (JSON),
        once its `sitefs` run ended (a main loop runs until then, at most 60 s).
"""

import importlib.util
import json
import os
import sys

import gi

gi.require_version("Nautilus", "4.0")
from gi.repository import Gio, GLib, GObject, Nautilus  # noqa: E402


class Item(GObject.Object, Nautilus.FileInfo):
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
    spec = importlib.util.spec_from_file_location("sitefs_nautilus", os.path.join(directory, "sitefs-nautilus.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    directory, command, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    extension = load(directory)
    if command == "emblems":
        items = [Item(path) for path in rest]
        provider = extension.SitefsEmblems()
        for item in items:
            provider.update_file_info(item)
        print(json.dumps({item.path: item.emblems for item in items}))
        return
    if command == "menu":
        entries = extension.SitefsMenu().get_file_items([Item(path) for path in rest])
        print(json.dumps([entry.props.label for entry in entries]))
        return
    if command == "activate":
        name, paths = rest[0], rest[1:]
        entries = extension.SitefsMenu().get_file_items([Item(path) for path in paths])
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

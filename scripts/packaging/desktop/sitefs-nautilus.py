"""sitefs for Files (Nautilus 43+, python3-nautilus): emblems and the context menu.

The logic is shared with Nemo in sitefs_desktop.py, installed beside this file."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gi  # noqa: E402

gi.require_version("Nautilus", "4.0")
from gi.repository import GObject, Nautilus  # noqa: E402

import sitefs_desktop  # noqa: E402

DESKTOP = sitefs_desktop.Desktop("nautilus")


class SitefsEmblems(GObject.GObject, Nautilus.InfoProvider):
    def update_file_info(self, item):
        DESKTOP.update(item)
        return Nautilus.OperationResult.COMPLETE


class SitefsMenu(GObject.GObject, Nautilus.MenuProvider):
    def get_file_items(self, items):
        menu = []
        for name, label, tip, handler in DESKTOP.actions(items):
            entry = Nautilus.MenuItem(name=name, label=label, tip=tip)
            entry.connect("activate", lambda _entry, run=handler: run())
            menu.append(entry)
        return menu

    def get_background_items(self, folder):
        return []

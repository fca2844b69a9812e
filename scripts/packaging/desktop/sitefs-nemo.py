"""sitefs for Nemo (nemo-python): emblems and the context menu.

The logic is shared with Files in sitefs_desktop.py, installed beside this file."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gi  # noqa: E402

gi.require_version("Nemo", "3.0")
from gi.repository import GObject, Nemo  # noqa: E402

import sitefs_desktop  # noqa: E402

DESKTOP = sitefs_desktop.Desktop("nemo")


class SitefsEmblems(GObject.GObject, Nemo.InfoProvider):
    def update_file_info(self, item):
        DESKTOP.update(item)
        return Nemo.OperationResult.COMPLETE


class SitefsMenu(GObject.GObject, Nemo.MenuProvider):
    def get_file_items(self, window, items):
        menu = []
        for name, label, tip, handler in DESKTOP.actions(items):
            entry = Nemo.MenuItem(name=name, label=label, tip=tip)
            entry.connect("activate", lambda _entry, run=handler: run())
            menu.append(entry)
        return menu

    def get_background_items(self, window, folder):
        return []

"""sitefs for Files (Nautilus 43+, python3-nautilus): emblems and the context menu.

The logic is shared with Nemo in sitefs_desktop.py, installed beside this file."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gi  # noqa: E402

gi.require_version("Nautilus", "4.0")
from gi.repository import GObject, Nautilus  # noqa: E402

import sitefs_desktop  # noqa: E402

DESKTOP = sitefs_desktop.Desktop()
SitefsEmblems, SitefsMenu = sitefs_desktop.providers(GObject, Nautilus, DESKTOP)

"""sitefs for Nemo (nemo-python): emblems and the context menu.

The logic is shared with Files in sitefs_desktop.py, installed beside this file."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gi  # noqa: E402

gi.require_version("Nemo", "3.0")
from gi.repository import GObject, Nemo  # noqa: E402

import sitefs_desktop  # noqa: E402

DESKTOP = sitefs_desktop.Desktop()
SitefsEmblems, SitefsMenu = sitefs_desktop.providers(GObject, Nemo, DESKTOP)

"""Shared pytest setup: plots without a display, and the fixture notebooks kept out of collection."""

import os

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")

# Submission fixtures include notebooks that loop forever or are not JSON: never collect them as tests.
collect_ignore = ["fixtures"]

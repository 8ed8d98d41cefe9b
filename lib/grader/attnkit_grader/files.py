"""The grader's file operations: atomic writes, removal of whatever a path holds, and what a generated file says."""

import json
import os
import shutil
from pathlib import Path


def write(path, content):
    """Write ``content`` (text, as UTF-8, or bytes) to ``path`` atomically: a killed grader never leaves half
    a file. Used for the feedback pages and the autograded copies."""
    path = Path(path)
    data = content.encode("utf-8") if isinstance(content, str) else content
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return path


def remove(path):
    """Remove what ``path`` holds (a folder with its contents, a file, or a link itself, never its target)."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


# What a generated file says, without the stamps a tool writes into it: a committed file and a fresh generation
# are compared through this, never byte for byte, so that a new nbformat, nbconvert or nbgrader that lays out
# its JSON otherwise, numbers cells anew or records another kernel cannot fail a test while the content holds.
NOTEBOOK_STAMPS = ("language_info",)           # the kernel's name and version, written when a notebook runs
CELL_STAMPS = ("id", "execution")              # nbformat's cell ids (new ones at each upgrade), run timings


def content(data, name):
    """``data`` (a file's bytes) as what it says: a notebook (.ipynb) as its major format, its metadata less
    :data:`NOTEBOOK_STAMPS` and each cell's type, source (one string), metadata less :data:`CELL_STAMPS`,
    outputs and attachments; other JSON as its parsed value; any other file as its bytes."""
    suffix = Path(name).suffix
    if suffix not in (".ipynb", ".json"):
        return data
    try:
        value = json.loads(data)
    except ValueError:
        return data
    if suffix == ".json" or not isinstance(value, dict) or not isinstance(value.get("cells"), list):
        return value
    def text(source):
        return "".join(source) if isinstance(source, list) else source
    cells = [{"cell_type": cell.get("cell_type"), "source": text(cell.get("source", "")),
              "metadata": {k: v for k, v in cell.get("metadata", {}).items() if k not in CELL_STAMPS},
              "outputs": cell.get("outputs"), "attachments": cell.get("attachments")} for cell in value["cells"]]
    metadata = {k: v for k, v in value.get("metadata", {}).items() if k not in NOTEBOOK_STAMPS}
    return {"nbformat": value.get("nbformat"), "metadata": metadata, "cells": cells}

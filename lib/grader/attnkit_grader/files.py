"""The grader's file operations: atomic writes, and removal of whatever a path holds."""

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

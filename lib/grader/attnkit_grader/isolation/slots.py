"""Worker slots: which unprivileged uid each concurrent sandbox of this machine runs under.

RLIMIT_NPROC counts every process of a uid together, and the runner's reaping kills by uid, so two
sandboxes running at once must never share one. A slot N (uid :func:`~.limits.worker_uid` N) is held by an
flock on ``N.lock`` in :func:`slots_dir`, released when the file is closed or the process ends (kill -9
included). Every sandbox root starts, from a grading batch or from the :mod:`.door`, takes its slot in the
same root-only folder.
"""

import fcntl
import os
import stat
import tempfile
from pathlib import Path

ROOT_SLOTS = Path("/run/attnkit-sandbox-slots")


def slots_dir():
    """Root's own folder for root (nobody else can plant a link in it); one of the user's own otherwise."""
    if os.geteuid() == 0:
        folder = ROOT_SLOTS
    else:
        folder = Path(tempfile.gettempdir()) / f"attnkit-sandbox-slots-{os.geteuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise RuntimeError(f"{folder}: not a folder of this user's own that no one else may write")
    return folder


def claim(count, limit=1000):
    """[(slot, lock file)]: ``count`` slots that no other sandbox of this machine holds."""
    folder = slots_dir()
    claimed = []
    for slot in range(limit):
        handle = os.fdopen(os.open(folder / f"{slot}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                                   0o600), "r+b")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        claimed.append((slot, handle))
        if len(claimed) == count:
            return claimed
    for _, handle in claimed:
        handle.close()
    raise RuntimeError(f"no {count} free sandbox slots among {limit} (see {folder})")

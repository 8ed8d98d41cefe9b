"""Which assignments are installed, as the sandbox side sees them: the one rule, asked everywhere.

An assignment is a folder of the ``attnkit_assignments`` package whose name matches :data:`NAME` (a folder
and module name) and which holds a ``probes/`` package. The trusted grader's registry
(:mod:`attnkit_grader.registry`) adds the manifest; the staging of the sandbox's packages, the zygote that
imports every probe set before the first job, and the door that checks a request's assignment all list the
folders here, so they cannot disagree on which folder is an assignment.

Only ``os``, ``re`` and ``pathlib``: the root side of a door imports this and nothing of torch or numpy.
"""

import os
import re
from pathlib import Path

__all__ = ["NAME", "PACKAGE", "PROBES", "assignments"]

NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")   # an assignment's folder, module and notebook name
PACKAGE = "attnkit_assignments"              # the package holding the assignment folders
PROBES = "probes"                            # the one package of an assignment folder staged into a sandbox


def assignments(root):
    """Names of the assignment folders in ``root`` (the folder of :data:`PACKAGE`), sorted.

    A folder counts when its name matches :data:`NAME` and this process may read its ``probes/__init__.py``:
    a folder it may not enter (a ``__pycache__`` root wrote with umask 077, met by an unprivileged cluster
    worker) holds no assignment for it.
    """
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    return [name for name in names if NAME.fullmatch(name) and _readable(Path(root) / name / PROBES / "__init__.py")]


def _readable(path):
    try:
        return path.is_file() and os.access(path, os.R_OK)
    except OSError:
        return False

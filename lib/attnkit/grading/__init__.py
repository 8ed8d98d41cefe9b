"""Grading pipeline of the course kit: release, pre-check, autograde, feedback and reports, on nbgrader.

Command line: ``python -m attnkit.grading {release,grade,demo}`` (see :mod:`attnkit.grading.cli`).
Library: :func:`grade` runs the instructor's whole grading workflow; the autograde step sits behind
:class:`Autograder`, implemented by the sandboxed grader (:mod:`.sandboxed`, the default) and by
:class:`NbgraderAutograder` (plain nbgrader).

The names below are loaded on first use: the sandbox's runner and the public probes import this package
without nbgrader, whose import alone takes seconds.
"""

import importlib

_EXPORTS = {
    "Autograder": "autograder", "Job": "autograder", "NbgraderAutograder": "autograder", "Outcome": "autograder",
    "Course": "course",
    "GradingRun": "pipeline", "Submission": "pipeline", "demo": "pipeline", "grade": "pipeline",
    "Issue": "precheck", "check_submission": "precheck",
    "NbgraderError": "releases", "drift": "releases", "release": "releases",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))

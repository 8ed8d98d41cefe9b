"""The instructor's grader: release, pre-check, autograde, feedback and reports, on nbgrader.

Trusted code only: nothing here is staged into a sandbox or shipped to students (see
``attnkit_sandbox`` for what runs in the sandbox, ``attnkit_assignments`` for the assignments, which the
registry finds by their manifests and which import only :mod:`.authoring`).
Command line: ``attnkit`` or ``python -m attnkit_grader`` (release, grade, demo, publish, new-assignment,
collect, release-feedback, export: see :mod:`.cli`).
Library: :func:`grade` runs the instructor's whole grading workflow; the autograde step sits behind
:class:`Autograder`, implemented by the sandboxed grader (:mod:`.autograders.sandboxed`, the default)
and by :class:`NbgraderAutograder` (plain nbgrader).

The names below are loaded on first use: nbgrader's import alone takes seconds.
"""

import importlib

_EXPORTS = {
    "Autograder": "autograders.base", "Job": "autograders.base", "NbgraderAutograder": "autograders.base",
    "Course": "course",
    "GradingRun": "pipeline", "demo": "pipeline", "grade": "pipeline",
    "Issue": "precheck", "check_submission": "precheck",
    "NbgraderError": "releases", "drift": "releases", "release": "releases",
    "CellResult": "results", "CheckResult": "results", "Message": "results", "SubmissionResult": "results",
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

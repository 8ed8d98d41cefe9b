"""The assignment registry: the manifests of the installed grader's assignment folders, and their checks.

An assignment is a folder ``attnkit_assignments/NAME/`` whose ``assignment.py`` holds ``ASSIGNMENT``, an
:class:`~attnkit_grader.authoring.Assignment` (its checks, inputs, reference, bug catalogue...; see
:mod:`attnkit_grader.authoring`). This module finds those folders in the ``attnkit_assignments`` package
installed beside this grader, and nowhere else: a folder or manifest anywhere else (a course folder, the
current folder, a path an instructor put first) is not an assignment, and an ``attnkit_assignments`` that
is not the grader's own is refused. Which folders are assignments is the sandbox side's one rule
(:func:`attnkit_sandbox.installed.assignments`: a folder name, a ``probes/`` package), to which the registry
adds the manifest. Every trusted module that wants "which assignments, which manifest" asks here, outside the
judging package: the judge (:mod:`.judging.engine`) decides from the manifest it is given and imports no
assignment.
"""

import functools
import importlib
from pathlib import Path

import numpy as np

from attnkit_sandbox import installed

from .authoring import KINDS, Assignment, Spec

__all__ = ["KINDS", "Assignment", "Spec", "assignments", "check_ids", "describe", "get", "make_inputs",
           "max_points", "specs"]

MANIFEST = "assignment.py"


def package_dir():
    """The folder of ``attnkit_assignments``, which must be installed beside this grader (one distribution)."""
    import attnkit_assignments

    folder = Path(next(iter(attnkit_assignments.__path__))).resolve()
    grader = Path(__file__).resolve().parents[1]          # the folder holding attnkit_grader/
    if folder.parent != grader:
        raise ImportError(f"attnkit_assignments: {folder} is not the grader's own (expected it in {grader}); "
                          f"a package of that name earlier on the Python path is not an assignment")
    return folder


def assignments():
    """Names of the assignment folders (:func:`attnkit_sandbox.installed.assignments`) with a manifest, sorted."""
    folder = package_dir()
    return [name for name in installed.assignments(folder) if (folder / name / MANIFEST).is_file()]


@functools.lru_cache(maxsize=None)
def _load(name):
    module = importlib.import_module(f"attnkit_assignments.{name}.assignment")
    manifest = getattr(module, "ASSIGNMENT", None)
    if not isinstance(manifest, Assignment):
        raise TypeError(f"{module.__file__}: ASSIGNMENT must be an attnkit_grader.authoring.Assignment, "
                        f"got {type(manifest).__name__}")
    if manifest.name != name or manifest.folder.resolve() != package_dir() / name:
        raise ValueError(f"{module.__file__}: the manifest of folder {name!r} names {manifest.name!r} with its "
                         f"reference in {manifest.folder}")
    return manifest


def get(assignment):
    """The manifest of ``assignment`` (a name, or a manifest, returned as it is)."""
    if isinstance(assignment, Assignment):
        return assignment
    if not isinstance(assignment, str) or assignment not in assignments():
        raise ValueError(f"assignment: unknown assignment {assignment!r}; known: {', '.join(assignments())}")
    return _load(assignment)


def specs(assignment):
    """The assignment's checks, in the order ``judge`` lists them."""
    return list(get(assignment).checks)


def make_inputs(assignment, seed, **sizes):
    """{probe: {"arrays": {key: ndarray}, "params": {...json...}}} for every probe of the assignment.

    ``seed`` (an int of any size) makes the draw reproducible; use a fresh, secret one per submission.
    ``sizes`` are passed to the assignment's ``make_inputs`` (the manifest's ``quick_sizes`` shrink a
    costly probe for grading in-process; grading keeps the defaults).
    """
    return get(assignment).make_inputs(np.random.default_rng(seed), **sizes)


def max_points(assignment):
    """{grade_id: points of the cell}, from the checks."""
    totals = {}
    for spec in specs(assignment):
        totals[spec.grade_id] = totals.get(spec.grade_id, 0.0) + float(spec.points)
    return totals


def describe(assignment):
    """One dict per check, in ``judge``'s order: grade_id, id, name, points, kind, hidden, probe (no code,
    no values)."""
    return [{"grade_id": spec.grade_id, "id": spec.id, "name": spec.name, "points": float(spec.points),
             "kind": spec.kind, "hidden": spec.hidden, "probe": spec.probe} for spec in specs(assignment)]


def check_ids(assignment):
    """{grade_id: [short id of each check]}, in the order ``judge`` lists the checks (stable across runs)."""
    ids = {}
    for spec in specs(assignment):
        ids.setdefault(spec.grade_id, []).append(spec.id)
    return ids

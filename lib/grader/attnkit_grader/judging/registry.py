"""The check registry: every check of every assignment, declared once in its assignment's folder.

An assignment is a folder ``attnkit_assignments/<name>/`` whose ``checks.py`` holds ``CHECKS`` (one
:class:`Spec` per check) and ``make_inputs(rng, **sizes)``, and whose ``probes/`` package (the only part
staged into a sandbox) holds the probes the checks read. This module finds the assignments and answers
questions about their checks; :mod:`.engine` decides them.
"""

import importlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

import attnkit_assignments

__all__ = ["KINDS", "Spec", "assignments", "check_ids", "describe", "make_inputs", "max_points", "specs"]

# "values": compared with the reference on the grader's inputs; "property": a property of the
# submission's own numbers; "structure": shapes, dtypes, parameters. The words of attnkit.checking.Checks.
KINDS = ("values", "structure", "property")
_NAME = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class Spec:
    """One check: the test cell, the probe whose outputs it reads, what it checks, its points, how it is
    decided, its kind and whether it is hidden (absent from the released notebook)."""

    grade_id: str
    probe: str
    name: str
    points: float
    decide: Callable
    extra: tuple = ()          # (key, value) pairs added to the case the decide function sees
    hint: str = ""             # added to the message when the probe raised or never came back
    key: str = ""              # short unique id of the check (the probe's name unless a probe has several)
    kind: str = "values"
    hidden: bool = False
    diagnose: bool = True      # compare a failed result with the catalogue's variants (off: too costly)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind: expected one of {KINDS}, got {self.kind!r} (check {self.id})")

    @property
    def id(self):
        return self.key or self.probe


def assignments():
    """Names of the assignment folders that declare checks, sorted."""
    root = Path(next(iter(attnkit_assignments.__path__)))
    return sorted(p.name for p in root.iterdir() if _NAME.fullmatch(p.name) and (p / "checks.py").is_file())


def _module(assignment):
    if not isinstance(assignment, str) or assignment not in assignments():
        raise ValueError(f"unknown assignment {assignment!r}; known: {', '.join(assignments())}")
    return importlib.import_module(f"attnkit_assignments.{assignment}.checks")


def specs(assignment):
    """The assignment's checks, in the order ``judge`` lists them."""
    return list(_module(assignment).CHECKS)


def make_inputs(assignment, seed, **sizes):
    """{probe: {"arrays": {key: ndarray}, "params": {...json...}}} for every probe of the assignment.

    ``seed`` (an int of any size) makes the draw reproducible; use a fresh, secret one per submission.
    ``sizes`` are passed to the assignment's ``make_inputs`` (problem set 2: ``memory_length`` and
    ``memory_head_dim`` size the memory probe; tests shrink it, grading keeps the defaults).
    """
    return _module(assignment).make_inputs(np.random.default_rng(seed), **sizes)


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

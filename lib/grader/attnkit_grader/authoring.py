"""What an assignment may use of the grader: the one module an assignment folder imports (its API).

An assignment is a folder ``attnkit_assignments/NAME/`` of the installed grader. Its manifest,
``assignment.py``, holds ``ASSIGNMENT = Assignment(...)``, which the registry
(:mod:`attnkit_grader.registry`) finds and every consumer asks: the sandboxed grader, the
catalogue, mutation testing, the example class, the hub, the site, the tests and the benchmarks. Its
``probes/`` package, the only part staged into a sandbox, uses ``attnkit_sandbox.probing`` instead; every
other file of the folder is trusted and may import this module, ``attnkit`` and its own siblings.

This module imports nothing that finds or loads assignments (no registry, no importlib by name), so an
assignment importing it closes no loop; ``tests/test_layout.py`` checks that, dynamic imports included.

- :class:`Assignment`: the manifest.
- :class:`Spec`: one check of the grader (a test cell's probe, points, kind and how it is decided), and
  the comparison helpers its decide functions use (:class:`Fail`, :func:`close`, :func:`expect`, ...). A
  failure's message is data: a template and its named values (``expect(ok, "found {count}", count=n)``,
  :func:`sentence` for a ``what``), rendered where it is read, in the reader's language: the assignment's
  folder holds its translations (``locale/``; ``python -m attnkit_grader.catalogs extract`` finds every sentence
  handed to these helpers, and ``N_("...")`` marks one kept in a variable first).
- :class:`Bug`: one known mistake of the catalogue, as edits of the reference solution.
- :func:`run`: the hidden part of a test cell under plain nbgrader (an assignment's ``hidden.py``).
- :func:`raised`: the name of the exception a call raises (mutation testing's ``behaviour``).

``attnkit new-assignment NAME`` scaffolds a folder that uses all of it (:mod:`attnkit_grader.scaffold`).
"""

import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from attnkit.i18n import N_
from attnkit_sandbox.installed import NAME

from .judging.compare import (Fail, Outputs, as32, as_tensor, close, copy_linears, equal, expect, fmt, scaled, sentence,
                              shape_text, tolerance)
from .judging.in_kernel import run
from .results import KINDS, Message

__all__ = ["Assignment", "Bug", "Fail", "KINDS", "Message", "N_", "Outputs", "Spec", "as32", "as_tensor", "close",
           "copy_linears", "equal",
           "expect", "fmt", "raised", "run", "scaled", "sentence", "shape_text", "tolerance"]


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
    diagnose: object = True    # compare a failed result with the catalogue's variants; "cell": only with those
                               # that earlier checks of its cell matched (a costly probe); False: never

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind: expected one of {KINDS}, got {self.kind!r} (check {self.id})")

    @property
    def id(self):
        return self.key or self.probe


@dataclass(frozen=True)
class Bug:
    """One known mistake: ``edits`` ((old, new), ...) turn the reference into it; ``says`` explains it to a
    student in one line; ``points`` {grade_id: points it keeps at grading} for every test cell where it
    loses some (other cells: full marks); ``fails`` the ids of the checks it must fail; ``named_by`` words
    of the failing structural check's message that name a bug which leaves the values right; ``teaches``
    where the course teaches the right thing, as links 'lectures/NAME#anchor' and 'assignments/NAME#anchor'
    (:mod:`attnkit_grader.teaching`), which the insight report shows beside the mistake."""

    name: str
    says: str
    edits: tuple
    points: dict = field(default_factory=dict)
    fails: tuple = ()
    named_by: str = ""
    teaches: tuple = ()

    def __hash__(self):
        return hash(self.name)


@dataclass(frozen=True, eq=False)
class Assignment:
    """An assignment's manifest: everything the grader needs of it, declared once.

    ``name``: the folder's (and the notebook's) name; ``title``: one line, in English; ``checks``: the
    :class:`Spec` of every check, in the order the judge lists them; ``make_inputs(rng, **sizes)``: every
    probe's inputs, {probe: {"arrays": {key: ndarray}, "params": {...}}}; ``reference``: the reference
    solution's module; ``bugs`` and ``alternatives``: the known-bug catalogue and correct answers in other
    styles (:class:`Bug`, edits of the reference); ``behaviour(namespace, seed)``: what mutation testing
    compares to prove a surviving mutant equivalent, and ``survivors`` {mutant: reason} the committed table
    of those that are not; ``quick_sizes``: sizes for ``make_inputs`` when grading in-process (the catalogue,
    tests), smaller than grading's where a probe is costly; ``examples``: what the example class hands in
    for this assignment besides the instructor's answers and the blank release (see
    ``examples/make_example_class.py``); ``independent_answers`` {answer cell: (code, ...)}: correct answers
    written apart from every solution the course holds, on which ``copy_thresholds`` {answer cell: threshold,
    or None for never} of the copy flag are measured (:mod:`attnkit_grader.copies`).
    """

    name: str
    title: str
    checks: tuple
    make_inputs: Callable
    reference: types.ModuleType
    bugs: tuple = ()
    alternatives: tuple = ()
    behaviour: Callable = None
    survivors: dict = field(default_factory=dict)
    quick_sizes: dict = field(default_factory=dict)
    examples: Callable = None
    independent_answers: dict = field(default_factory=dict)
    copy_thresholds: dict = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.name, str) or not NAME.fullmatch(self.name):
            raise ValueError(f"name: expected lower-case letters, digits and '_' (a folder name), got {self.name!r}")
        for what, items, kind in (("checks", self.checks, Spec), ("bugs", self.bugs, Bug),
                                  ("alternatives", self.alternatives, Bug)):
            if not isinstance(items, tuple) or not all(isinstance(item, kind) for item in items):
                raise TypeError(f"{what}: expected a tuple of {kind.__name__}, got {type(items).__name__} "
                                f"(assignment {self.name})")
        if not self.checks:
            raise ValueError(f"checks: assignment {self.name} declares no check")
        if not callable(self.make_inputs):
            raise TypeError(f"make_inputs: expected a function (rng, **sizes), got {self.make_inputs!r}")
        if not isinstance(self.reference, types.ModuleType):
            raise TypeError(f"reference: expected the reference solution's module, got {self.reference!r}")
        for cell, limit in self.copy_thresholds.items():
            if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float))
                                      or not 0 < limit <= 1):
                raise ValueError(f"copy_thresholds: expected a resemblance in (0, 1], or None, for cell {cell!r}; "
                                 f"got {limit!r} (assignment {self.name})")
        for cell, answers in self.independent_answers.items():
            if not isinstance(answers, tuple) or not all(isinstance(code, str) for code in answers):
                raise TypeError(f"independent_answers: expected a tuple of code strings for cell {cell!r}; got "
                                f"{type(answers).__name__} (assignment {self.name})")

    @property
    def folder(self):
        """The assignment's folder (the one holding reference.py)."""
        return Path(self.reference.__file__).parent

    @property
    def reference_path(self):
        return Path(self.reference.__file__)


def raised(call):
    """The name of the exception ``call()`` raises, or "none": exceptions are behaviour too (mutation
    testing's ``behaviour``)."""
    try:
        call()
    except Exception as exc:           # noqa: BLE001 - the type is the behaviour
        return type(exc).__name__
    return "none"

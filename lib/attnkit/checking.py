"""Checks for the graded notebooks: points per check, messages a student can act on, nothing on stderr.

A test cell builds a ``Checks`` for its points, runs each check in a ``with checks(what, points):``
block and ends with ``Checks.score()``, whose value nbgrader reads as the cell's partial credit.
One failing block costs its own points and no others: every exception is caught and explained.
Nothing here solves an exercise; the helpers only compare, measure and explain.

Grading policy, the same here as in the instructor's graders: a check of structure or of a property
counts only beside evidence of real work in its cell (:func:`has_evidence`). Written once in the course
guide, site/pages/en/guide/grading.md in the kit's repository (the website's Guide, "Grading policy").

Worked cases (``expect_worked``): small fixed inputs whose expected results, and the results of each
known mistake of the course's bug catalogue, ship with this package as numbers (``attnkit/worked/``,
written by the instructor's grader from the reference and the catalogue; never code). With them ships how
each known mistake makes each visible check fail (its message, or its exception's type and first line):
a check that fails exactly so names the mistake too, whatever the numbers.
"""

import contextlib
import functools
import json
import os
import sys
import traceback
import warnings

import torch

# The assertions and the helpers that read a student's module are modules of their own; the test cells import
# them from here, as they always have.
from . import expectations, loading
from .expectations import (CheckFailed, expect, expect_close, expect_dropout, expect_equal, expect_raises,
                           expect_shape, fmt)
from .i18n import N_, Text, said, set_language, wrap
from .loading import load_table, single_parameter, table_of, table_tensor
from .memory import human_bytes, largest_allocation

__all__ = [
    "CellScoredZero", "CheckFailed", "Checks", "expect", "expect_close", "expect_dropout", "expect_equal",
    "expect_raises", "expect_shape", "expect_worked", "human_bytes", "largest_allocation", "load_table", "set_language",
    "single_parameter", "table_of", "table_tensor", "Text",
]


LINE = 80                                   # characters per line of a message nbgrader's Validate shows


class CellScoredZero(AssertionError):
    """Raised by ``Checks.score()`` for a cell that earned nothing: the message says what failed (in the
    student's language, attnkit.i18n)."""

    def _render_traceback_(self):
        # In a notebook, the message instead of a traceback: it is the feedback. nbgrader's Validate shows
        # these lines (each cut at about 85 characters, hence LINE).
        first, *rest = str(self).split("\n")
        return [f"{type(self).__name__}: {first}", *rest]


_LIBRARIES = tuple(os.path.dirname(module.__file__) + os.sep for module in (torch, contextlib))
_OURS = {__file__, expectations.__file__, loading.__file__}      # the checks' own frames: never the student's


def _where(tb):
    """' (raised in forward, line 12)': the innermost frame outside torch and the standard library."""
    frames = traceback.extract_tb(tb)
    own = [f for f in frames if not f.filename.startswith(_LIBRARIES) and f.filename not in _OURS]
    frame = (own or frames or [None])[-1]
    return None if frame is None else (frame.name, frame.lineno)


def _explain(exc, tb):
    """A one-line explanation of an exception raised inside a check (a Text)."""
    if isinstance(exc, CheckFailed):
        return exc.text
    where = _where(tb)
    if isinstance(exc, NotImplementedError):
        if where is None:
            return Text("not implemented yet: your code still raises NotImplementedError")
        return Text("not implemented yet: your code still raises NotImplementedError (raised in {function}, "
                    "line {line})", function=where[0], line=where[1])
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    if where is None:
        return Text("your code raised {error}: {first_line}", error=type(exc).__name__, first_line=first)
    return Text("your code raised {error}: {first_line} (raised in {function}, line {line})",
                error=type(exc).__name__, first_line=first, function=where[0], line=where[1])


class _Check:
    """Context manager for one check: catches every Exception, turns stderr and warnings into stdout."""

    def __init__(self, owner, what, points, kind):
        self.owner, self.what, self.points, self.kind = owner, what, float(points), kind

    def __enter__(self):
        self._stack = contextlib.ExitStack()
        self._stack.enter_context(contextlib.redirect_stderr(sys.stdout))
        self._warnings = self._stack.enter_context(warnings.catch_warnings(record=True))
        warnings.simplefilter("always")
        return self

    def __exit__(self, exc_type, exc, tb):
        self._stack.close()
        notes = [f"{w.category.__name__}: {w.message}" for w in self._warnings]
        if exc_type is None:
            self.owner.record(self.what, self.points, None, notes, self.kind)
            return False
        if not issubclass(exc_type, Exception):       # KeyboardInterrupt (a timeout), SystemExit: let go
            return False
        message, matched = _explain(exc, tb), isinstance(exc, CheckFailed) and exc.matched
        if _recorder is not None:
            _recorder.failed(self.what, _signature(exc))
        elif not matched:
            # Failing as a known mistake fails (the same exception, the same message) names it, but proves no work:
            # the numbers are what count as evidence (has_evidence).
            named = _named(self.what, _signature(exc))
            message = Text("{message}. {diagnosis}", message=message, diagnosis=named) if named else message
        self.owner.record(self.what, self.points, message, notes, self.kind, matched=matched)
        return True


class Checks:
    """Collects the checks of one grade cell; ``score()`` returns the points earned as a plain float.

    ``points`` is the cell's value in nbgrader. When every check of the cell has run, the score is
    the sum of the points of the checks that passed, under the grading policy (see the module's
    docstring). In the student version the hidden
    checks are absent, so the score is scaled to the checks that ran: a notebook that passes its
    visible checks then validates, and the hidden checks decide the grade.
    """

    KINDS = ("values", "structure", "property")

    def __init__(self, points):
        self.points = float(points)
        self.results = []        # (what, points, message or None, kind): the message's English text
        self.texts = []          # the same messages as Texts, shown in the student's language
        self.matched = False     # a scored check of the values failed with the numbers of a known mistake
        self.disqualified = None

    def __call__(self, what, points, kind="values"):
        """``with checks("what is checked", points=0.5): ...`` runs one check; ``kind`` "structure" (shapes,
        dtypes, parameters) or "property" marks a check that needs a passing check of the values beside it."""
        if kind not in self.KINDS:
            raise ValueError(f"kind: expected one of {self.KINDS}, got {kind!r}")
        if not isinstance(what, str):
            raise TypeError(f"what: a check's name is an English str (its message id), got {type(what).__name__}")
        return _Check(self, what, points, kind)

    def record(self, what, points, message, notes=(), kind="values", matched=False):
        """Record and print one check decided elsewhere (``message`` None: passed); the ``with`` blocks
        and the hidden checks (run by the instructor's grader) both end here. ``matched``: a failed check
        of the values whose numbers are a known mistake's (the message names it; text or a Text)."""
        message = message if message is None or isinstance(message, Text) else Text(str(message))
        self.results.append((what, points, None if message is None else str(message), kind))
        self.texts.append(message)
        self.matched = self.matched or bool(matched and message is not None and points > 0 and kind == "values")
        status = "ok  " if message is None else "FAIL"
        earned = points if message is None else 0.0
        worth = f"{fmt(earned)}/{fmt(points)}" if points else Text("not scored").render()
        print(f"{status} [{worth}] {said(what).render()}")
        if message is not None:
            print(f"       -> {message.render()}")
        for note in notes:
            print("       " + Text("(warning from your code: {warning})", warning=note).render())

    def flag(self, remark):
        """Print a remark for the instructor (e.g. a copy of the reference solution: a Text or an English str);
        the score is unchanged. ``flags`` keeps the remarks' English text."""
        self.flags = [*getattr(self, "flags", []), str(remark)]
        print(Text("FLAGGED: {remark}", remark=said(remark)).render())

    def disqualify(self, reason):
        """Score this cell 0, whatever else passed, and say why (``reason``: a Text, or an English str)."""
        self.disqualified = said(reason)
        print(Text("NOT GRADED: {reason}", reason=self.disqualified).render())

    def score(self):
        """Points earned, a Python float in (0, points] that nbgrader reads as partial credit.

        A cell that earned nothing raises ``CellScoredZero`` instead, naming what failed: nbgrader's
        Validate then reports the cell as failed and shows the message (for a number it can only say
        "partial credit"), and nbgrader scores an error 0, the same points a returned 0 would give.
        """
        ran = sum(p for _, p, _, _ in self.results)
        earned = sum(p for _, p, m, _ in self.results if m is None)
        if self.disqualified is not None or ran == 0:
            print(Text("Score: {earned} / {points} points", earned="0", points=fmt(self.points)).render())
            return self._nothing(self.disqualified or Text("no check ran"))
        if ran > self.points + 1e-9:
            # An authoring error, not the student's: never exceed the cell's points.
            print(Text("(checks worth {ran} points ran in a cell worth {points})", ran=fmt(ran),
                       points=fmt(self.points)).render())
            earned = earned * self.points / ran
            ran = self.points
        if ran < self.points - 1e-9:
            scaled = round(self.points * earned / ran, 4)
            print(Text("Score: {earned} / {points} points (visible checks only: {visible} of {ran}; hidden checks "
                       "run at grading)", earned=fmt(scaled), points=fmt(self.points), visible=fmt(earned),
                       ran=fmt(ran)).render())
            return float(scaled) if scaled > 0 else self._nothing()
        unsupported = self.unsupported()
        if unsupported:
            earned -= unsupported
            print(Text("(the {points} points of shape and property checks count once a comparison with the "
                       "expected values in this cell passes)", points=fmt(unsupported)).render())
        print(Text("Score: {earned} / {points} points", earned=fmt(earned), points=fmt(self.points)).render())
        return float(earned) if earned > 1e-9 else self._nothing()

    def _nothing(self, reason=None):
        """Raise CellScoredZero with what failed (a cell worth 0 points returns 0.0: nothing to fail)."""
        if self.points <= 0:
            return 0.0
        lines = [Text("this cell earned 0 of {points} points.", points=fmt(self.points)).render()]
        failed = [(what, text) for (what, points, message, _), text in zip(self.results, self.texts)
                  if message is not None and points > 0]
        if reason is not None:
            lines += wrap(Text("Not graded: {reason}", reason=reason).render(), LINE)
        elif failed:
            lines.append(Text("What failed:").render())
            for what, message in failed[:5]:
                lines += wrap(Text("- {what}: {message}", what=said(what), message=message).render(), LINE,
                               subsequent_indent="    ")
            if len(failed) > 5:
                lines.append(Text("- and {count} more (see above)", count=len(failed) - 5).render())
        else:
            lines += wrap(Text("Its checks of shapes and properties passed, but they count only beside a passing "
                                "check of the values.").render(), LINE)
        raise CellScoredZero("\n".join(lines))

    def unsupported(self):
        """Points of passed structure and property checks in a cell where no check of the values passed."""
        if self.matched or has_evidence((p, m is None, k) for _, p, m, k in self.results):
            return 0.0
        return sum(p for _, p, m, k in self.results if m is None and k != "values")


# Why the hidden checks do not grade an object of the notebook (the instructor's grader decides it in the kernel,
# under plain nbgrader, where the object came from): said in the notebook, so in the student's language. {what}: the object's name and
# the function's, as code names them.
NOT_WRITTEN_HERE = {
    "solutions": N_("{what} comes from the reference solutions ({module}), not from your notebook"),
    "elsewhere": N_("{what} was not defined in this notebook (it comes from module {module})"),
    "built_on": N_("{what} is built on {klass} (reference solution)"),
    "compiled": N_("{what} was compiled from {path}, inside the kit's packages"),
    "refers": N_("{what} refers to {solutions}"),
    "loaded": N_("{what} is the reference solution's code, loaded from the reference solutions"),
    "copied": N_("{what} is a copy of the reference solution's code ({copied})"),
    "module": N_("{what} uses the module {module} (reference solution)"),
    "scores_0": N_("{reason}. Only work written in this notebook earns points; this cell scores 0."),
    "flagged": N_("{reason}: flagged for the instructor to read; the score is not changed"),
}


def has_evidence(results):
    """Whether a grade cell shows real work, so that its passed structure and property checks count: a
    scored check of the values passed, or failed with exactly a known mistake's numbers (the grading
    policy, site/pages/en/guide/grading.md; the notebooks and the grader's judge both ask this).

    ``results``: (points, passed, kind) or (points, passed, kind, matched) of each check of the cell.
    """
    return any(points > 0 and kind == "values" and (passed or (rest and rest[0]))
               for points, passed, kind, *rest in results)


WORKED = os.path.join(os.path.dirname(__file__), "worked")
_recorder = None           # a _Recorder while the instructor's tools write the worked cases (never in a notebook)


class _Recorder:
    """What the visible checks meet while the instructor's grader runs them on the reference and on each known
    mistake to write ``attnkit/worked/`` (the catalogue's ``write_worked``): ``values`` {key: the
    numbers expect_worked got}, ``atol`` {key: the check's tolerance}, ``failures`` {what: how the check failed}. ``reference``: the reference's values,
    against which a mistake's numbers are compared as a student's would be, so that a check fails where it would
    fail in a notebook (and the checks after it in the same block are not reached)."""

    def __init__(self, reference=None):
        self.values, self.failures, self.reference, self.atol = {}, {}, reference, {}

    def failed(self, what, signature):
        if what in self.failures:
            raise ValueError(f"two visible checks are called {what!r}: a check's name must be unique")
        self.failures[what] = signature


@functools.lru_cache(maxsize=None)
def _worked(assignment):
    path = os.path.join(WORKED, f"{assignment}.json")
    if not os.path.exists(path):
        raise FileNotFoundError(Text("no worked cases for {assignment} in {folder}: reinstall attention-kit",
                                     assignment=repr(assignment), folder=WORKED).render())
    with open(path, encoding="utf-8") as file:
        return json.load(file)


@functools.lru_cache(maxsize=None)
def _failures():
    """{what: [{"bugs", "says", "failure"}, ...]}: how each known mistake makes each visible check fail, for every
    assignment shipped (a check's name is unique across the course)."""
    found = {}
    for name in sorted(os.listdir(WORKED)) if os.path.isdir(WORKED) else ():
        if name.endswith(".json"):
            found.update(_worked(name[:-len(".json")]).get("checks", {}))
    return found


def _signature(exc):
    """How a check failed, as a student's check and a known mistake's are compared: a CheckFailed's message, or an
    exception's type and first line without where it was raised (line numbers differ from one answer to another);
    None for NotImplementedError: an answer not written yet is no mistake."""
    if isinstance(exc, NotImplementedError):
        return None
    if isinstance(exc, CheckFailed):
        return str(exc)
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def _named(what, signature):
    """The sentence naming the known mistakes that make the check ``what`` fail exactly so (a Text; None when none
    does)."""
    groups = [group for group in _failures().get(what, []) if signature is not None and group["failure"] == signature]
    if not groups:
        return None
    bugs = [bug for group in groups for bug in group["bugs"]]
    says = _either([group["says"] for group in groups])
    if len(bugs) == 1:
        return Text("Your code fails here exactly as a known mistake does: {mistake}", mistake=says)
    return Text("Your code fails here exactly as each of these known mistakes does (they agree here): {mistakes}",
                mistakes=says)


def _either(explanations):
    """The catalogue's ``explanations`` of known mistakes as one Text: 'first; or second; or third' (a worked case's
    group of mistakes that fail alike comes joined so: each is translated alone)."""
    explanations = [part for explanation in explanations for part in explanation.split("; or ")]
    listed = Text(explanations[0])
    for later in explanations[1:]:
        listed = Text("{earlier}; or {later}", earlier=listed, later=Text(later))
    return listed


def _known_mistakes(actual, variants, atol):
    """The worked case's ``variants`` (known mistakes that give the same numbers, grouped) whose results equal
    ``actual`` (float64 tensor): NaN where theirs is NaN, within ``atol`` elsewhere."""
    found = []
    for variant in variants:
        values = torch.tensor(variant["values"], dtype=torch.float64)
        if values.shape != actual.shape or not actual.numel():
            continue
        nan = torch.isnan(values)
        difference = (actual[~nan] - values[~nan]).abs()
        if bool((torch.isnan(actual) == nan).all()) and (not difference.numel() or float(difference.max()) <= atol):
            found.append(variant)
    return found


def _compare(actual, expected, what, atol, shipped):
    """``actual`` equals ``expected``: exactly when ``atol`` is 0 (numbers ``shipped`` as float64 are read in
    ``actual``'s dtype), else within ``atol``."""
    if atol:
        return expect_close(actual, expected, what, atol)
    if shipped and isinstance(actual, torch.Tensor):
        expected = expected.to(actual.dtype)
    return expect_equal(actual, expected, what)


def expect_worked(actual, key, what, atol=1e-4, expected=None):
    """``actual`` equals the worked case ``key`` ("assignment/case") within ``atol`` (exactly when it is 0); when it
    does not but equals what a known mistake gives on the same inputs, the message names the mistake.

    The expected numbers (unless the cell computes them by hand: ``expected``) and the mistakes' numbers
    ship with attnkit (``attnkit/worked/``); the inputs are built in the test cell from fixed seeds, the
    same on every machine.
    """
    assignment, _, case = key.partition("/")
    shipped = expected is None
    if _recorder is not None:
        _recorder.values[key] = actual.detach().cpu().to(torch.float64).tolist() \
            if isinstance(actual, torch.Tensor) else None
        _recorder.atol[key] = atol
        if shipped:
            if _recorder.reference is None or _recorder.reference.get(key) is None:
                return                          # the reference itself is being recorded
            expected = torch.tensor(_recorder.reference[key], dtype=torch.float64)
        _compare(actual, expected, what, atol, shipped)
        return
    entry = _worked(assignment)["cases"][case]
    if shipped:
        expected = torch.tensor(entry["expected"], dtype=torch.float64)
    try:
        _compare(actual, expected, what, atol, shipped)
    except CheckFailed as failure:
        found = _known_mistakes(actual.detach().cpu().to(torch.float64), entry.get("variants", []), atol) \
            if isinstance(actual, torch.Tensor) and tuple(actual.shape) == tuple(expected.shape) else []
        if not found:
            raise
        says = _either([variant["says"] for variant in found])
        if sum(len(variant["bugs"]) for variant in found) == 1:
            named = Text("These are exactly the numbers of a known mistake: {mistake}", mistake=says)
        else:
            named = Text("These are exactly the numbers of known mistakes (they agree here): {mistakes}",
                         mistakes=says)
        raise CheckFailed(Text("{message}. {diagnosis}", message=failure.text, diagnosis=named), matched=True) from None

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
written by the instructor's grader from the reference and the catalogue; never code).
"""

import contextlib
import functools
import json
import os
import sys
import textwrap
import traceback
import warnings

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = [
    "CellScoredZero", "CheckFailed", "Checks", "expect", "expect_close", "expect_equal", "expect_raises",
    "expect_shape", "expect_worked", "human_bytes", "largest_allocation", "load_table", "single_parameter", "table_of", "table_tensor",
]


LINE = 80                                   # characters per line of a message nbgrader's Validate shows


class CellScoredZero(AssertionError):
    """Raised by ``Checks.score()`` for a cell that earned nothing: the message says what failed."""

    def _render_traceback_(self):
        # In a notebook, the message instead of a traceback: it is the feedback. nbgrader's Validate shows
        # these lines (each cut at about 85 characters, hence LINE).
        first, *rest = str(self).split("\n")
        return [f"{type(self).__name__}: {first}", *rest]


class CheckFailed(AssertionError):
    """A check found a wrong answer; the message says what to fix. ``matched``: the numbers are those of
    a known mistake, which the message names (evidence of real work, see ``Checks``)."""

    def __init__(self, message, matched=False):
        super().__init__(message)
        self.matched = matched


def fmt(x):
    """A number as short text: whole numbers below a million as integers, others with 4 significant digits
    (Python and numpy numbers alike; the notebooks' checks and the grader's judge both word numbers so)."""
    try:
        x = float(x)
    except (TypeError, ValueError):        # a complex number or another object: as Python shows it
        return str(x)
    if x.is_integer() and abs(x) < 1e6:
        return str(int(x))
    return f"{x:.4g}"


_LIBRARIES = tuple(os.path.dirname(module.__file__) + os.sep for module in (torch, contextlib))


def _where(tb):
    """' (raised in forward, line 12)': the innermost frame outside torch and the standard library."""
    frames = traceback.extract_tb(tb)
    own = [f for f in frames if not f.filename.startswith(_LIBRARIES) and f.filename != __file__]
    frame = (own or frames or [None])[-1]
    return "" if frame is None else f" (raised in {frame.name}, line {frame.lineno})"


def _explain(exc, tb):
    """A one-line explanation of an exception raised inside a check."""
    if isinstance(exc, CheckFailed):
        return str(exc)
    if isinstance(exc, NotImplementedError):
        return "not implemented yet: your code still raises NotImplementedError" + _where(tb)
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"your code raised {type(exc).__name__}: {first}{_where(tb)}"


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
        self.owner.record(self.what, self.points, _explain(exc, tb), notes, self.kind,
                          matched=isinstance(exc, CheckFailed) and exc.matched)
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
        self.results = []        # (what, points, message or None, kind)
        self.matched = False     # a scored check of the values failed with the numbers of a known mistake
        self.disqualified = None

    def __call__(self, what, points, kind="values"):
        """``with checks("what is checked", points=0.5): ...`` runs one check; ``kind`` "structure" (shapes,
        dtypes, parameters) or "property" marks a check that needs a passing check of the values beside it."""
        if kind not in self.KINDS:
            raise ValueError(f"kind: expected one of {self.KINDS}, got {kind!r}")
        return _Check(self, what, points, kind)

    def record(self, what, points, message, notes=(), kind="values", matched=False):
        """Record and print one check decided elsewhere (``message`` None: passed); the ``with`` blocks
        and the hidden checks (run by the instructor's grader) both end here. ``matched``: a failed check
        of the values whose numbers are a known mistake's (the message names it)."""
        self.results.append((what, points, message, kind))
        self.matched = self.matched or bool(matched and message is not None and points > 0 and kind == "values")
        status = "ok  " if message is None else "FAIL"
        earned = points if message is None else 0.0
        worth = f"{fmt(earned)}/{fmt(points)}" if points else "not scored"
        print(f"{status} [{worth}] {what}")
        if message is not None:
            print(f"       -> {message}")
        for note in notes:
            print(f"       (warning from your code: {note})")

    def flag(self, remark):
        """Print a remark for the instructor (e.g. a copy of the reference solution); the score is unchanged."""
        self.flags = [*getattr(self, "flags", []), remark]
        print(f"FLAGGED: {remark}")

    def disqualify(self, reason):
        """Score this cell 0, whatever else passed, and say why."""
        self.disqualified = reason
        print(f"NOT GRADED: {reason}")

    def score(self):
        """Points earned, a Python float in (0, points] that nbgrader reads as partial credit.

        A cell that earned nothing raises ``CellScoredZero`` instead, naming what failed: nbgrader's
        Validate then reports the cell as failed and shows the message (for a number it can only say
        "partial credit"), and nbgrader scores an error 0, the same points a returned 0 would give.
        """
        ran = sum(p for _, p, _, _ in self.results)
        earned = sum(p for _, p, m, _ in self.results if m is None)
        if self.disqualified is not None or ran == 0:
            print(f"Score: 0 / {fmt(self.points)} points")
            return self._nothing(self.disqualified or "no check ran")
        if ran > self.points + 1e-9:
            # An authoring error, not the student's: never exceed the cell's points.
            print(f"(checks worth {fmt(ran)} points ran in a cell worth {fmt(self.points)})")
            earned = earned * self.points / ran
            ran = self.points
        if ran < self.points - 1e-9:
            scaled = round(self.points * earned / ran, 4)
            print(f"Score: {fmt(scaled)} / {fmt(self.points)} points "
                  f"(visible checks only: {fmt(earned)} of {fmt(ran)}; hidden checks run at grading)")
            return float(scaled) if scaled > 0 else self._nothing()
        unsupported = self.unsupported()
        if unsupported:
            earned -= unsupported
            print(f"(the {fmt(unsupported)} points of shape and property checks count once a comparison "
                  f"with the expected values in this cell passes)")
        print(f"Score: {fmt(earned)} / {fmt(self.points)} points")
        return float(earned) if earned > 1e-9 else self._nothing()

    def _nothing(self, reason=None):
        """Raise CellScoredZero with what failed (a cell worth 0 points returns 0.0: nothing to fail)."""
        if self.points <= 0:
            return 0.0
        lines = [f"this cell earned 0 of {fmt(self.points)} points."]
        failed = [(what, message) for what, points, message, _ in self.results if message is not None and points > 0]
        if reason is not None:
            lines += textwrap.wrap(f"Not graded: {reason}", LINE)
        elif failed:
            lines.append("What failed:")
            for what, message in failed[:5]:
                lines += textwrap.wrap(f"- {what}: {message}", LINE, subsequent_indent="    ")
            if len(failed) > 5:
                lines.append(f"- and {len(failed) - 5} more (see above)")
        else:
            lines += textwrap.wrap("Its checks of shapes and properties passed, but they count only beside a "
                                   "passing check of the values.", LINE)
        raise CellScoredZero("\n".join(lines))

    def unsupported(self):
        """Points of passed structure and property checks in a cell where no check of the values passed."""
        if self.matched or has_evidence((p, m is None, k) for _, p, m, k in self.results):
            return 0.0
        return sum(p for _, p, m, k in self.results if m is None and k != "values")


def has_evidence(results):
    """Whether a grade cell shows real work, so that its passed structure and property checks count: a
    scored check of the values passed, or failed with exactly a known mistake's numbers (the grading
    policy, site/pages/en/guide/grading.md; the notebooks and the grader's judge both ask this).

    ``results``: (points, passed, kind) or (points, passed, kind, matched) of each check of the cell.
    """
    return any(points > 0 and kind == "values" and (passed or (rest and rest[0]))
               for points, passed, kind, *rest in results)


# ---------------------------------------------------------------------------------------------------
# Assertions that explain themselves: each raises CheckFailed with a message naming what is wrong.

def expect(condition, message):
    """Raise CheckFailed(message) unless ``condition``."""
    if not condition:
        raise CheckFailed(message)


def expect_shape(tensor, shape, what):
    """``tensor`` is a torch.Tensor of exactly ``shape``."""
    if not isinstance(tensor, torch.Tensor):
        raise CheckFailed(f"{what} should be a torch.Tensor, got {type(tensor).__name__}")
    if tuple(tensor.shape) != tuple(shape):
        raise CheckFailed(f"{what} should have shape {tuple(shape)}, got {tuple(tensor.shape)}")


def expect_equal(actual, expected, what):
    """Exact equality, shape and values; the message shows the first differing entry."""
    expect_shape(actual, expected.shape, what)
    if actual.dtype.is_floating_point != expected.dtype.is_floating_point:
        raise CheckFailed(f"{what} should have dtype {expected.dtype}, got {actual.dtype}")
    same = actual.detach().cpu() == expected.detach().cpu()
    if not bool(same.all()):
        index = tuple(int(i) for i in (~same).nonzero()[0])
        got, want = actual[index].item(), expected[index].item()
        raise CheckFailed(f"{what}: {int((~same).sum())} entries differ; first at index {index}: "
                          f"got {fmt(got)}, expected {fmt(want)}")


def expect_close(actual, expected, what, atol):
    """|actual - expected| <= atol everywhere; the message shows the worst entry."""
    expect_shape(actual, expected.shape, what)
    actual = actual.detach().cpu().to(torch.float64)
    expected = expected.detach().cpu().to(torch.float64)
    if not bool(torch.isfinite(actual).all()):
        raise CheckFailed(f"{what} contains NaN or inf")
    error = (actual - expected).abs()
    worst = float(error.max()) if error.numel() else 0.0
    if worst > atol:
        index = tuple(int(i) for i in torch.nonzero(error == error.max())[0])
        raise CheckFailed(f"{what} is off by up to {worst:.3g} (tolerance {atol:.3g}); "
                          f"at index {index}: got {fmt(actual[index].item())}, "
                          f"expected {fmt(expected[index].item())}")


WORKED = os.path.join(os.path.dirname(__file__), "worked")
_recording = None          # {key: array}: set by the instructor's tools while they write the worked cases


@functools.lru_cache(maxsize=None)
def _worked(assignment):
    path = os.path.join(WORKED, f"{assignment}.json")
    if not os.path.exists(path):
        raise FileNotFoundError(f"no worked cases for {assignment!r} in {WORKED}: reinstall attention-kit")
    with open(path, encoding="utf-8") as file:
        return json.load(file)


def _known_mistakes(actual, variants, atol):
    """The explanations of the known mistakes whose results equal ``actual`` (float64 tensor): NaN where
    theirs is NaN, within ``atol`` elsewhere."""
    found = []
    for variant in variants:
        values = torch.tensor(variant["values"], dtype=torch.float64)
        if values.shape != actual.shape or not actual.numel():
            continue
        nan = torch.isnan(values)
        difference = (actual[~nan] - values[~nan]).abs()
        if bool((torch.isnan(actual) == nan).all()) and (not difference.numel() or float(difference.max()) <= atol):
            found.append(variant["says"])
    return found


def expect_worked(actual, key, what, atol=1e-4, expected=None):
    """``actual`` equals the worked case ``key`` ("assignment/case") within ``atol``; when it does not but
    equals what a known mistake gives on the same inputs, the message names the mistake.

    The expected numbers (unless the cell computes them by hand: ``expected``) and the mistakes' numbers
    ship with attnkit (``attnkit/worked/``); the inputs are built in the test cell from fixed seeds, the
    same on every machine.
    """
    if _recording is not None:
        _recording[key] = actual.detach().cpu().to(torch.float64).tolist() \
            if isinstance(actual, torch.Tensor) else None
        return
    assignment, _, case = key.partition("/")
    entry = _worked(assignment)[case]
    if expected is None:
        expected = torch.tensor(entry["expected"], dtype=torch.float64)
    try:
        expect_close(actual, expected, what, atol)
    except CheckFailed as failure:
        found = _known_mistakes(actual.detach().cpu().to(torch.float64), entry.get("variants", []), atol) \
            if isinstance(actual, torch.Tensor) and tuple(actual.shape) == tuple(expected.shape) else []
        if not found:
            raise
        if len(found) == 1:
            named = f"these are exactly the numbers of a known mistake: {found[0]}"
        else:
            named = "these are exactly the numbers of known mistakes (they agree here): " + "; or ".join(found)
        raise CheckFailed(f"{failure}. {named[0].upper()}{named[1:]}", matched=True) from None


def expect_raises(exception, function, what):
    """``function()`` raises ``exception``; any other outcome fails with a message."""
    try:
        function()
    except exception:
        return
    except Exception as exc:  # noqa: BLE001 - the point is to report what was raised instead
        raise CheckFailed(f"{what}: expected {exception.__name__}, got {type(exc).__name__}: {exc}") from None
    raise CheckFailed(f"{what}: expected {exception.__name__}, but nothing was raised")


# ---------------------------------------------------------------------------------------------------
# Reading and loading the weights of a student's module through its public interface.

def single_parameter(module):
    """The module's only parameter; CheckFailed unless it has exactly one."""
    params = list(module.parameters())
    if len(params) != 1:
        shapes = [tuple(p.shape) for p in params]
        raise CheckFailed(f"the module should have exactly one parameter (the table), found {len(params)}"
                          f" with shapes {shapes}; a buffer or a plain tensor attribute is not a parameter")
    return params[0]


def table_tensor(module, shape, what="the table"):
    """The tensor of ``shape`` to load a table into: the module's only parameter when it has that shape,
    else the one parameter, buffer or plain tensor attribute of that shape. Checks of the values can
    then run even where the table is stored the wrong way (the checks of the parameter say so)."""
    shape = tuple(shape)
    params = list(module.parameters())
    if len(params) == 1 and tuple(params[0].shape) == shape:
        return params[0]
    seen, found = set(), []
    for tensor in [*params, *module.buffers(), *(v for v in vars(module).values() if isinstance(v, torch.Tensor))]:
        if tuple(tensor.shape) == shape and id(tensor) not in seen:
            seen.add(id(tensor))
            found.append(tensor)
    if len(found) != 1:
        raise CheckFailed(f"{what}: the module should hold one tensor of shape {shape} (its parameter), "
                          f"found {len(found)}")
    return found[0]


def table_of(obj, what):
    """The weight tensor of an nn.Embedding, or the tensor itself for an nn.Parameter/tensor."""
    if isinstance(obj, nn.Embedding):
        return obj.weight
    if isinstance(obj, torch.Tensor):
        return obj
    raise CheckFailed(f"{what} should be an nn.Embedding or an nn.Parameter, got {type(obj).__name__}")


def load_table(destination, source):
    """Copy ``source`` into the parameter ``destination`` in place (shapes must match)."""
    expect_shape(destination, source.shape, "the table to load into")
    with torch.no_grad():
        destination.copy_(source.to(destination.dtype))


# ---------------------------------------------------------------------------------------------------
# Memory: the largest block a computation allocates.

class _LargestOutput(TorchDispatchMode):
    """Records the largest storage (bytes) created by any PyTorch operator while active."""

    @classmethod
    def _should_skip_dynamo(cls):
        # TorchDispatchMode wraps a subclass's __torch_dispatch__ in torch._disable_dynamo unless this
        # says False; the wrapper imports torch._dynamo on the first call, about 1 s of CPU in every
        # kernel that measures memory, for a mode that is never compiled. If a later torch drops the
        # hook, this method is simply never called and the import comes back (slower, same result).
        return False

    def __init__(self, inputs):
        super().__init__()
        self.largest = 0
        self.seen = {t.untyped_storage().data_ptr() for t in inputs}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in self.seen:
                self.largest = max(self.largest, t.untyped_storage().nbytes())
        return out


def largest_allocation(function, *args):
    """Run ``function(*args)`` without autograd; return (result, bytes of the largest new tensor storage).

    Views (reshape, expand, slicing) share their input's storage and cost nothing; every operator that
    produces a new tensor counts with its full storage size.
    """
    inputs = [a for a in args if isinstance(a, torch.Tensor)]
    recorder = _LargestOutput(inputs)
    with torch.no_grad(), recorder:
        result = function(*args)
    return result, recorder.largest


def human_bytes(n):
    """A byte count for people: '16.8 MB'."""
    if n < 1000:
        return f"{int(n)} B"
    for unit in ("kB", "MB", "GB"):
        n /= 1000.0
        if n < 1000 or unit == "GB":
            return f"{n:.3g} {unit}"

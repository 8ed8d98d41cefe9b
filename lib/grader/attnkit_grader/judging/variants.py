"""Known bugs as variants of the reference solution, and the diagnosis that names them (trusted).

Each assignment's manifest lists its ``bugs``: mistakes students of this material make, each a
:class:`~attnkit_grader.authoring.Bug` written as small edits of the assignment's reference solution. A variant is the reference
with one bug's edits applied, run as a module of its own in this (trusted) process: it is the kit's own
code, never a student's.

When a check of the values fails, :func:`diagnose` runs the check's probe on every variant with the
same inputs the student's code received and compares the numbers the check read: if the student's
match a variant's, the message names that bug in plain words ("your output equals the reference
computed without the 1/sqrt(head_dim) scale"). Bugs that give the same numbers are named together.
Matching a variant whose numbers are not constant is evidence of real work: the cell's checks of
structure and properties count beside it (``attnkit.checking.has_evidence``), so one bug costs the
checks it breaks and no more. Constant numbers (a zero gradient) and exceptions name a bug but prove
nothing: a submission in control of its sandbox could write them without computing anything.
"""

import contextlib
import functools
import re
import threading
import types

import numpy as np

from attnkit.i18n import N_
from attnkit_sandbox.channel import clip_message
from attnkit_sandbox.probe_sets import run_here

from ..results import Message

__all__ = ["alternatives", "bugs", "diagnose", "diagnose_error", "diagnosis", "diagnosis_off",
           "informative", "source_of", "variant"]

# Two results match when they differ by at most this much, relative to their scale (at least 1): far
# above float32 noise, far below what any catalogued bug changes on the grader's inputs.
MATCH = 1e-4
_ENABLED = [True]          # diagnosis_off() clears it: mutation testing grades without a diagnosis
_RUNS = threading.local()
MISSING_NAME = re.compile(r"NameError: name '(\w+)' is not defined")  # the variants' probe results on the inputs of the submission being judged


def bugs(assignment):
    """The catalogue of ``assignment`` (its manifest): [Bug, ...]."""
    return list(assignment.bugs)


def alternatives(assignment):
    """Correct answers written in other styles than the reference, as edits of it: [Bug, ...]."""
    return list(assignment.alternatives)


def source_of(assignment, bug=None):
    """The text of the assignment's reference solution, with ``bug``'s edits applied (each must match once)."""
    text = assignment.reference_path.read_text(encoding="utf-8")
    for old, new in (bug.edits if bug is not None else ()):
        count = text.count(old)
        if count != 1:
            raise ValueError(f"bug {bug.name!r}: the text to replace occurs {count} times in {assignment.name}'s "
                             f"reference.py, expected once: {old!r}")
        text = text.replace(old, new)
    return text


@functools.lru_cache(maxsize=None)
def variant(assignment, bug):
    """A namespace (dict) with the objects of the reference carrying ``bug`` (a Bug, or None: the reference)."""
    name = f"attnkit_variant_{assignment.name}_{bug.name if bug else 'reference'}"
    module = types.ModuleType(name)
    code = compile(source_of(assignment, bug), f"<{name}>", "exec")
    exec(code, module.__dict__)                              # noqa: S102 - the kit's own code
    return dict(vars(module))


def _same(a, b):
    """True if two probe results are the same numbers (ints exactly, floats up to MATCH)."""
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) or a.shape != b.shape:
        return False
    if a.dtype.kind not in "biuf" or b.dtype.kind not in "biuf":
        return False
    if a.dtype.kind in "iub" and b.dtype.kind in "iub":
        return bool((a == b).all())
    a, b = a.astype(np.float64), b.astype(np.float64)
    if a.size == 0:
        return True
    both = np.isfinite(a) & np.isfinite(b)
    if not (both == np.isfinite(a)).all() or not (np.isnan(a) == np.isnan(b)).all():
        return False
    scale = max(1.0, float(np.abs(b[both]).max()) if both.any() else 1.0)
    return bool((np.abs(a[both] - b[both]) <= MATCH * scale).all())


def informative(arrays):
    """True unless every array is constant (all zeros, one value everywhere, or empty): numbers that any
    submission could write without computing anything, which name a bug but prove no work."""
    return any(isinstance(a, np.ndarray) and a.dtype.kind in "biuf" and a.size > 1
               and np.unique(a[np.isfinite(a)] if a.dtype.kind == "f" else a).size > 1 for a in arrays)


def diagnose(assignment, spec, entry, student, keys, among=None):
    """The bugs whose variant gives the numbers the student's code gave, [Bug, ...] (empty: none).

    ``entry`` is the probe's inputs ({"arrays", "params"}), ``student`` the probe's outputs from the
    student's code, ``keys`` the output keys the failed check read (only those are compared); ``among``: the
    bugs to try (default: the whole catalogue).
    """
    keys = [key for key in keys if key in student]
    if not keys or not spec.diagnose or not _ENABLED[-1]:
        return []
    found = []
    for bug in bugs(assignment) if among is None else among:
        outputs, errors = variant_run(assignment, bug, spec.probe, entry)
        theirs = outputs.get(spec.probe)
        if theirs is not None and all(_same(student[key], theirs.get(key)) for key in keys):
            found.append(bug)
    if not found:
        return []                       # nothing to name: the reference need not run
    reference, _ = variant_run(assignment, None, spec.probe, entry)
    mine = reference.get(spec.probe, {})
    if all(_same(student[key], mine.get(key)) for key in keys):
        return []                       # the reference gives these numbers too: nothing to name
    return found


def diagnose_error(assignment, spec, entry, error, among=None):
    """The bugs (of ``among``, default the whole catalogue) whose variant raises the very exception (type and
    first line of the message) the student's code raised on these inputs, [Bug, ...]; none for "not
    implemented"."""
    if not isinstance(error, str) or not spec.diagnose or not _ENABLED[-1] or \
            error.startswith(("NotImplementedError", "not run")):
        return []
    wanted = clip_message(error)
    missing = MISSING_NAME.match(wanted)
    found = []
    for bug in bugs(assignment) if among is None else among:
        if missing and missing.group(1) in variant(assignment, bug):
            continue                # a variant defining the name never raises "name ... is not defined" for it
        _, errors = variant_run(assignment, bug, spec.probe, entry)
        if spec.probe in errors and clip_message(errors[spec.probe]) == wanted:
            found.append(bug)
    return found


def variant_run(assignment, bug, probe, entry):
    """(outputs, errors) of ``probe`` run on ``bug``'s variant with the inputs ``entry``: computed once per
    variant, probe and inputs, since several failed checks of a submission read the same probe's outputs.
    Only the results for the last few inputs are kept (a batch judges one submission after another)."""
    cache = _RUNS.__dict__.setdefault("cache", {})
    held = cache.get(id(entry))
    if held is None or held[0] is not entry:        # the inputs themselves, not another object at that address
        if len(cache) >= 16:
            cache.clear()
        held = cache[id(entry)] = (entry, {})
    key = (assignment.name, bug.name if bug is not None else None, probe)
    if key not in held[1]:
        held[1][key] = run_here(variant(assignment, bug), assignment.name, {probe: entry}, {probe})
    return held[1][key]


@contextlib.contextmanager
def diagnosis_off():
    """Grade without comparing failures with the catalogue (mutation testing: faster; the same checks fail,
    only the evidence a named bug would give is missing)."""
    _ENABLED.append(False)
    try:
        yield
    finally:
        _ENABLED.pop()


def diagnosis(found, raised=False):
    """The sentence (a Message) added to a failed check's message for the bugs found (``raised``: by the
    exception): each bug's one-line explanation is a message of its own."""
    if len(found) == 1:
        template = (N_("Your code fails exactly as a known mistake: {mistake}.") if raised
                    else N_("Your numbers are exactly those of a known mistake: {mistake}."))
        return Message.make(template, mistake=Message.make(found[0].says))
    listed = Message.make(found[0].says)
    for bug in found[1:]:
        listed = Message.make("{earlier}; or {later}", earlier=listed, later=Message.make(bug.says))
    template = (N_("Your code fails exactly as each of these known mistakes (they agree here): {mistakes}.") if raised
                else N_("Your numbers are exactly those of each of these known mistakes (they agree here): {mistakes}."))
    return Message.make(template, mistakes=listed)

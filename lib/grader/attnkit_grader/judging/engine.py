"""Trusted verdicts: the checks of an assignment decided on the outputs of its probes (instructors only).

Every hidden check of the graded notebooks is defined once: its probe (in the assignment's ``probes/``)
calls the student's code, its ``Spec`` (in the assignment's ``checks.py``) decides from the numbers.
Under plain nbgrader the hidden part of a test cell runs both inside the student's kernel
(:mod:`.in_kernel`), where the student's code could replace the comparison functions, lie about
equality or report success itself. The sandboxed grader decides every check in its own process, which
never imports or runs student code:

1. the assignment's ``make_inputs`` (``registry.make_inputs(name, seed)``) draws random weights, inputs and (where the bug classes
   allow) sizes for every probe, fresh for each submission: the student can neither choose them nor
   precompute the answers.
2. The sandbox runs the probes on the student's objects and sends back plain numeric arrays.
3. :func:`judge` recomputes what each output should be with the reference solution on the same inputs
   (float64, and float32 to size the tolerance: 8 times the reference's own float32 error plus 1e-6 of
   the output's scale) and decides each check from the numbers alone, after validating their dtype and
   shape.

Points per check follow the notebooks' test cells (visible checks and hidden checks together), so the
total per grade cell equals the cell's points. Which checks count is the grading policy, written once in
site/pages/en/guide/grading.md (the kinds ``values``, ``structure`` and ``property``;
``attnkit.checking.has_evidence`` applies it here and in the notebooks alike).
"""

import re

from attnkit.checking import has_evidence
from attnkit.i18n import N_

from ..results import CheckResult, Message, one_line
from . import variants
from .compare import Fail, Outputs, sentence

__all__ = ["UNSUPPORTED", "decide", "judge", "scores", "without_hint"]

UNSUPPORTED = N_("right, but counts only once a comparison with the expected values in this cell passes")
DIAGNOSED = N_("{diagnosis} ({message})")


def scores(verdicts):
    """{grade_id: points earned} from the result of ``judge``."""
    return {grade_id: float(sum(check.points for check in checks)) for grade_id, checks in verdicts.items()}


_EXCEPTION = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*(Error|Exception|Failed|Interrupt|Exit|Warning)?: ")


def _explain_error(error):
    """A probe's recorded failure as a check's message (its text is untrusted: a value, shown to the student only).

    The runner records an exception as "TypeName: message"; the exchange records why it rejected an
    output array in plain words.
    """
    text = one_line(error if isinstance(error, str) else repr(error))
    if text.startswith("NotImplementedError"):
        return Message.make("not implemented yet: your code still raises NotImplementedError")
    if text.startswith("CheckFailed: "):          # raised by a loading helper: already a sentence
        return Message.text(text[len("CheckFailed: "):])
    if text.startswith("not run"):               # the notebook could not be used at all
        return Message.make("this check did not run: {why}", why=text[len("not run"):].lstrip(": "))
    if _EXCEPTION.match(text):
        return Message.make("your code raised {error}", error=text)
    return Message.make("the result could not be used: {why}", why=text)


HINTED = N_("{message} {hint}")


def _with_hint(message, spec):
    return Message.make(HINTED, message=message, hint=sentence(spec.hint)) if spec.hint else message


def without_hint(message):
    """A failed check's message without the hint its check adds (None stays None)."""
    return dict(message.args)["message"] if message is not None and message.template == HINTED else message


def _nested(outputs):
    """{probe: {key: array}}; also accepts the flat {"probe/key": array} layout of outputs.npz."""
    if not isinstance(outputs, dict):
        return {}
    nested = {}
    for key, value in outputs.items():
        if isinstance(value, dict):
            nested.setdefault(str(key), {}).update(value)
        elif isinstance(key, str) and "/" in key:
            probe, _, name = key.partition("/")
            nested.setdefault(probe, {})[name] = value
    return nested


def _decide(assignment, spec, case, arrays, error, named=()):
    """One check: (passed, message, matched, mistakes) where ``message`` says why it failed (a Message),
    ``mistakes`` the names of the catalogued bugs whose numbers (or exception) a failed check of the values
    matched, which the message then names, and ``matched`` whether those numbers prove work; never raises.
    ``named``: the bugs earlier checks of the cell matched, the only ones a check with ``diagnose="cell"`` tries."""
    among = [bug for bug in variants.bugs(assignment) if bug.name in named] if spec.diagnose == "cell" else None
    if error is not None:
        message = _with_hint(_explain_error(error), spec)
        try:
            found = variants.diagnose_error(assignment, spec, case, error, among) \
                if case and spec.kind == "values" and among != [] else []
        except Exception:           # noqa: BLE001 - a diagnosis that cannot be made is no diagnosis
            found = []
        if found:                   # named, but an exception proves no work
            diagnosis = Message.make(DIAGNOSED, diagnosis=variants.diagnosis(found, raised=True), message=message)
            return False, diagnosis, False, tuple(bug.name for bug in found)
        return False, message, False, ()
    if not isinstance(arrays, dict) or not arrays:
        return False, _with_hint(Message.make(
            "no result came back for this check: the notebook did not get this far (a cell timed out or crashed), "
            "or the grader's memory/time cap stopped it"), spec), False, ()
    if case is None:
        return False, Message.make("the grader had no inputs for this check"), False, ()
    got = Outputs(arrays)
    try:
        spec.decide({**case, **dict(spec.extra)}, got)
    except Fail as failure:
        message = failure.message
    except Exception as exc:        # noqa: BLE001 - a malformed result fails its check, never the grader
        return False, Message.make("the grader could not read this result ({kind}: {error})",
                                   kind=type(exc).__name__, error=str(exc)), False, ()
    else:
        return True, None, False, ()
    if spec.kind != "values":
        return False, message, False, ()
    try:
        found = variants.diagnose(assignment, spec, case, arrays, got.read, among) if among != [] else []
    except Exception:               # noqa: BLE001 - a diagnosis that cannot be made is no diagnosis
        found = []
    if not found:
        return False, message, False, ()
    evidence = variants.informative([arrays[key] for key in got.read if key in arrays])
    return False, Message.make(DIAGNOSED, diagnosis=variants.diagnosis(found), message=message), evidence, \
        tuple(bug.name for bug in found)


def decide(assignment, inputs, outputs, probe_errors=None):
    """[(spec, passed, message, matched, mistakes), ...] for every check of ``assignment`` (its manifest, an
    :class:`~attnkit_grader.authoring.Assignment`: ``registry.get(name)``), each decided on its own numbers;
    ``message`` (a Message, None when it passed) says why it failed; ``mistakes`` the catalogued bugs a failed
    check of the values matched (named in the message; see :mod:`.variants`), ``matched`` whether those
    numbers prove work.

    The evidence rule is not applied here: ``judge`` applies it to the whole cell, and the hidden part
    of a notebook's test cell (``attnkit_grader.judging.in_kernel``) leaves it to the cell's ``Checks``, which
    also hold the visible checks. The arguments are those of ``judge``.
    """
    outputs = _nested(outputs)
    errors = probe_errors if isinstance(probe_errors, dict) else {}
    inputs = inputs if isinstance(inputs, dict) else {}
    decided, named = [], {}
    for spec in assignment.checks:
        error = errors.get(spec.probe, errors.get("*"))          # "*": the whole outputs file was rejected
        verdict = _decide(assignment, spec, inputs.get(spec.probe), outputs.get(spec.probe), error,
                          named.get(spec.grade_id, ()))
        named[spec.grade_id] = (*named.get(spec.grade_id, ()), *verdict[3])
        decided.append((spec, *verdict))
    return decided


def judge(assignment, inputs, outputs, probe_errors=None):
    """{grade_id: [CheckResult, ...]} for one submission, decided from the probe outputs alone.

    ``assignment`` is the manifest (``registry.get(name)``); ``inputs`` is what ``make_inputs`` returned
    for this submission; ``outputs`` {probe: {key: ndarray}} (or the flat {"probe/key": ndarray});
    ``probe_errors`` {probe: "TypeName: message" or a reason}, as ``attnkit_sandbox.channel.read_outputs``
    returns them (key "*": the whole file was rejected). A probe with neither outputs nor an error (the
    notebook never got there) fails its checks.

    Structure and property checks count only beside evidence of work in their cell: the grading policy,
    site/pages/en/guide/grading.md#checks-and-their-points.
    """
    decided = decide(assignment, inputs, outputs, probe_errors)
    cells = {}
    for spec, passed, _, matched, _ in decided:
        cells.setdefault(spec.grade_id, []).append((spec.points, passed, spec.kind, matched))
    evidenced = {grade_id for grade_id, results in cells.items() if has_evidence(results)}
    verdicts = {}
    for spec, passed, message, _, mistakes in decided:
        if passed and spec.kind != "values" and spec.grade_id not in evidenced:
            passed, message = False, Message.make(UNSUPPORTED)
        points = float(spec.points)
        verdicts.setdefault(spec.grade_id, []).append(CheckResult(
            spec.id, spec.name, points if passed else 0.0, points, passed, spec.kind, message, mistakes, spec.hidden))
    return verdicts

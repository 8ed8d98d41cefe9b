"""Hidden checks of the graded notebooks under plain nbgrader: the sandboxed grader's own checks, in the kernel.

There is one definition of every hidden check: the probes (``attnkit.grading.probes``) call the
student's code on random inputs and return plain arrays, and the judge (``attnkit.solutions.judges``)
decides each check from those arrays against the reference solutions. The sandboxed grader runs the
probes in a sandbox and the judge in its trusted parent; plain ``nbgrader autograde`` reaches the
same code through the hidden part of each test cell, which calls one function of this module:

    hidden_checks.attention(checks, RelativeMultiHeadAttention)

That function first checks where the student's objects came from (``provenance``: a copy of the
reference scores the cell 0), then runs the probes of the cell's hidden checks in the kernel, has the
judge decide them and records each one in the cell's ``Checks`` with its points and kind, so the
cell's score follows the same rule as everywhere (``attnkit.checking``). The inputs are drawn from a
fixed seed: plain nbgrader runs the student's code in the same process as the checks, so it cannot be
made cheat-proof and a secret seed would buy nothing; the sandboxed grader draws a fresh one per
submission.

The kernel has no memory cap, so the memory check runs smaller here (L = 2048, head_dim = 32, where
the (L, L, head_dim) tensor of gathered rows takes 512 MiB) and measures the largest tensor the
student's code creates instead of relying on the sandbox's cap to stop it.
"""

import contextlib
import io
import warnings

from attnkit.checking import human_bytes, largest_allocation
from attnkit.grading.probes import run_here
from attnkit.solutions import judges, provenance

__all__ = ["SEED", "attention", "causal", "index", "pe_forward", "pe_table", "run", "skew"]

SEED = 20241121
KERNEL_MEMORY_LENGTH, KERNEL_MEMORY_HEAD_DIM = 2048, 32
_MEMORY_PROBE = "causal_memory"
# The judge's kinds in the words of attnkit.checking.Checks.
_KIND = {"reference": "values", "structure": "structure", "property": "property"}


def run(checks, grade_id, namespace):
    """Record the hidden checks of ``grade_id`` in ``checks``, judged on the objects in ``namespace``.

    ``namespace`` maps the names the exercise fixes (``LearnablePositionalEncoding``, ``skew``, ...) to
    the student's objects. Nothing here raises for a wrong answer: every failure is a failed check.
    """
    assignment = _assignment_of(grade_id)
    specs = [spec for spec in judges.SPECS[assignment] if spec.grade_id == grade_id and spec.hidden]
    for name, obj in namespace.items():
        if not provenance.check(checks, obj, name):
            return
    inputs = judges.make_inputs(assignment, SEED, memory_length=KERNEL_MEMORY_LENGTH,
                                memory_head_dim=KERNEL_MEMORY_HEAD_DIM)
    wanted = {spec.probe for spec in specs}
    largest = None
    with _quiet():
        outputs, errors = run_here(namespace, assignment, inputs, wanted - {_MEMORY_PROBE})
        if _MEMORY_PROBE in wanted:
            (memory, memory_error), largest = largest_allocation(run_here, namespace, assignment, inputs,
                                                                 {_MEMORY_PROBE})
            outputs.update(memory)
            errors.update(memory_error)
    for spec, passed, message in judges.decide(assignment, inputs, outputs, errors):
        if spec not in specs:
            continue
        name = spec.name
        if spec.probe == _MEMORY_PROBE:
            name, passed, message = _memory_verdict(passed, message.removesuffix(f" {spec.hint}"), largest)
        checks.record(name, spec.points, None if passed else message, kind=_KIND[spec.kind])


def _memory_verdict(passed, message, largest):
    """(name, passed, message) of the memory check in the kernel: the judge's verdict on the rows, then
    the largest tensor the skewed version created, measured since no cap stops it here."""
    L, d = KERNEL_MEMORY_LENGTH, KERNEL_MEMORY_HEAD_DIM
    gathered = L * L * d * 4                                   # float32 (L, L, head_dim)
    name = (f"memory: at L = {L}, head_dim = {d} the skewed version creates no tensor anywhere near "
            f"L * L * head_dim elements and gives the reference's rows")
    hint = (f"the (L, L, head_dim) tensor of gathered rows would be {human_bytes(gathered)} and the L x L "
            f"logits {human_bytes(L * L * 4)}: compute the relative term as skew(queries @ rel_k.T)")
    if not passed:
        return name, False, f"{message} ({hint})"
    if largest is not None and largest >= gathered // 8:
        return name, False, f"the largest tensor created was {human_bytes(largest)}; {hint}"
    return name, True, ""


@contextlib.contextmanager
def _quiet():
    """What the student's code prints or warns while a probe runs is dropped, as in the sandbox."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _assignment_of(grade_id):
    for assignment, specs in judges.SPECS.items():
        if any(spec.grade_id == grade_id for spec in specs):
            return assignment
    raise ValueError(f"grade_id: no assignment has a test cell {grade_id!r}")


# One function per test cell, called from the hidden part of the cell with the student's objects.

def pe_table(checks, cls):
    run(checks, "test_pe_table", {"LearnablePositionalEncoding": cls})


def pe_forward(checks, cls):
    run(checks, "test_pe_forward", {"LearnablePositionalEncoding": cls})


def index(checks, fn):
    run(checks, "test_index", {"relative_position_index": fn})


def attention(checks, cls):
    run(checks, "test_rel_attention", {"RelativeMultiHeadAttention": cls})


def skew(checks, fn):
    run(checks, "test_skew", {"skew": fn})


def causal(checks, naive_fn, skewed_fn):
    run(checks, "test_causal", {"causal_relative_attention_naive": naive_fn,
                                "causal_relative_attention": skewed_fn})

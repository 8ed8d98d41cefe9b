"""Hidden checks of the graded notebooks under plain nbgrader: the sandboxed grader's own checks, in the kernel.

There is one definition of every hidden check: the assignment's probes call the student's code on
random inputs and return plain arrays, and its checks (the ``checks`` of its manifest) decide from those
arrays against the reference solution. The sandboxed grader runs the probes in a sandbox and decides in
its trusted parent; plain ``nbgrader autograde`` reaches the same code through the hidden part of each
test cell, which calls one function of the assignment's ``hidden.py``:

    from attnkit_assignments.ps2_relative_pe import hidden
    hidden.attention(checks, RelativeMultiHeadAttention)

which ends in :func:`run` (an assignment imports it from :mod:`attnkit_grader.authoring`) with the
assignment's manifest; an assignment without a ``hidden.py`` (the scaffold's) calls
:func:`attnkit_grader.hidden.run` with its name, which asks the registry for the manifest. It first checks
where the student's objects came from (:mod:`.provenance`: a copy of the reference scores the cell 0), then
runs the probes of the cell's hidden checks in the kernel, has the judge decide them and records each one in the cell's ``Checks`` with its points and
kind, so the cell's score follows the same rule as everywhere (``attnkit.checking.has_evidence``). The
inputs are drawn from a fixed seed: plain nbgrader runs the student's code in the same process as the
checks, so it cannot be made cheat-proof and a secret seed would buy nothing; the sandboxed grader draws
a fresh one per submission.
"""

import contextlib
import io
import warnings

import numpy as np

from attnkit.checking import largest_allocation
from attnkit_sandbox.probe_sets import run_here

from ..results import check_text
from . import engine, provenance

__all__ = ["SEED", "run"]

SEED = 20241121


def run(checks, assignment, grade_id, namespace, sizes=None, measured=None):
    """Record the hidden checks of ``grade_id`` of ``assignment`` (its manifest) in ``checks``, judged on the
    objects in ``namespace``.

    ``namespace`` maps the names the exercise fixes (``LearnablePositionalEncoding``, ``skew``, ...) to
    the student's objects; ``sizes`` go to the assignment's ``make_inputs``. ``measured``: {probe:
    verdict(passed, message, largest)} for probes that run under ``largest_allocation`` (the kernel has
    no memory cap), whose function turns the judge's verdict and the largest tensor the student's code
    created into (name, passed, message). Nothing here raises for a wrong answer: every failure is a
    failed check.
    """
    measured = measured or {}
    specs = [spec for spec in assignment.checks if spec.grade_id == grade_id and spec.hidden]
    if not specs:
        raise ValueError(f"grade_id: {assignment.name} has no hidden checks in a test cell {grade_id!r}")
    for name, obj in namespace.items():
        if not provenance.check(checks, obj, name, assignment):
            return
    inputs = assignment.make_inputs(np.random.default_rng(SEED), **(sizes or {}))
    wanted = {spec.probe for spec in specs}
    largest = {}
    with _quiet():
        outputs, errors = run_here(namespace, assignment.name, inputs, wanted - set(measured))
        for probe in wanted & set(measured):
            (output, error), largest[probe] = largest_allocation(run_here, namespace, assignment.name, inputs,
                                                                 {probe})
            outputs.update(output)
            errors.update(error)
    for spec, passed, message, matched, mistakes in engine.decide(assignment, inputs, outputs, errors):
        if spec not in specs:
            continue
        name, text = spec.name, check_text(message, mistakes)
        if spec.probe in measured:
            bare = engine.without_hint(message)
            name, passed, text = measured[spec.probe](passed, check_text(bare) if bare else "", largest[spec.probe])
        checks.record(name, spec.points, None if passed else text, kind=spec.kind, matched=matched)


@contextlib.contextmanager
def _quiet():
    """What the student's code prints or warns while a probe runs is dropped, as in the sandbox."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield

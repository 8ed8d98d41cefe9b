"""An assignment's probes, found by its name, and run on a namespace in this process.

The probes of an assignment are the ``PROBES`` of its folder's ``probes`` package (staged into every sandbox;
see :mod:`.probing` for what a probe is). The runner finds them here in the sandbox; the trusted judge
runs them here on the reference and on the catalogue's variants, and plain nbgrader's kernel on the
student's objects. Kept apart from :mod:`.probing`, which the probes themselves import, so that loading
the probes by name closes no import loop.
"""

import importlib

import numpy as np

from .installed import NAME

__all__ = ["probes_of", "run_here"]


def probes_of(assignment, module=None):
    """The probes of ``assignment``, in the order they run (``module``: another module defining PROBES)."""
    if module is None:
        if not isinstance(assignment, str) or not NAME.fullmatch(assignment):
            raise ValueError(f"assignment: expected the name of an assignment folder, got {assignment!r}")
        module = f"attnkit_assignments.{assignment}.probes"   # literal: tests/test_layout.py reads it
    return list(importlib.import_module(module).PROBES)


def _plain_copy(value):
    """A fresh copy of JSON-like params (dicts, lists, numbers, strings)."""
    if isinstance(value, dict):
        return {key: _plain_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain_copy(item) for item in value]
    return value


def run_here(namespace, assignment, inputs, names=None):
    """({probe: outputs}, {probe: "TypeName: message"}): the probes of ``assignment`` (a name; only those in
    ``names``, if given) run in this process, each on fresh copies of its inputs; one that raises is
    recorded and the others still run.

    For callers that run student code in their own process (plain nbgrader's kernel, the tests); the
    sandbox's runner adds time limits, output caps and reaping around each probe instead.
    """
    outputs, errors = {}, {}
    for one in probes_of(assignment):
        if names is not None and one.name not in names:
            continue
        entry = inputs[one.name]
        arrays = {key: np.array(value, copy=True) for key, value in entry["arrays"].items()}
        try:
            outputs[one.name] = one.run(namespace, arrays, _plain_copy(entry["params"]))
        except Exception as exc:     # noqa: BLE001 - recorded for the judge, as the runner does
            errors[one.name] = f"{type(exc).__name__}: {exc}"
    return outputs, errors

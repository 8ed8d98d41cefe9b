"""The hidden part of a test cell under plain nbgrader, for any assignment: no per-assignment ``hidden.py``.

A test cell's hidden part names its assignment, its own grade_id and the student's objects the exercise fixes:

    ### BEGIN HIDDEN TESTS
    from attnkit_grader import hidden
    hidden.run(checks, "ps3_rope", "test_rotation", RotaryEmbedding=RotaryEmbedding)
    ### END HIDDEN TESTS

and the manifest says the rest (the cell's hidden checks, their probes and inputs): this asks the registry for
it and hands it to :func:`attnkit_grader.judging.in_kernel.run`. It lives apart from
:mod:`attnkit_grader.authoring`, the assignments' API, which must not reach the registry
(``tests/test_layout.py``). Problem sets 1 and 2 keep their own ``hidden.py``, which does the same.
"""

from . import registry
from .judging import in_kernel

__all__ = ["run"]


def run(checks, assignment, grade_id, **objects):
    """Record the hidden checks of test cell ``grade_id`` of ``assignment`` (its name) in ``checks``, judged on
    ``objects`` ({name the exercise fixes: the student's object})."""
    in_kernel.run(checks, registry.get(assignment), grade_id, objects)

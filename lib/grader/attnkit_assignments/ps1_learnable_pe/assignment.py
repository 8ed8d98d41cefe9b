"""Problem set 1, learnable positional encoding: the manifest the grader's registry reads (attnkit_grader.authoring)."""

from attnkit_grader.authoring import Assignment

from . import bugs, checks, copies, examples, mutation, reference

ASSIGNMENT = Assignment(
    name="ps1_learnable_pe",
    title="Learnable positional encoding",
    checks=tuple(checks.CHECKS),
    make_inputs=checks.make_inputs,
    reference=reference,
    bugs=tuple(bugs.BUGS),
    alternatives=tuple(bugs.ALTERNATIVES),
    behaviour=mutation.behaviour,
    survivors=mutation.SURVIVORS,
    examples=examples.submissions,
    independent_answers=copies.ANSWERS,
    copy_thresholds=copies.THRESHOLDS,
)

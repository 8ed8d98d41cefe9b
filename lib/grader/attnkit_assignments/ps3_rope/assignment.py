"""Problem set 3, rotary position embeddings and ALiBi: the manifest the grader's registry reads (attnkit_grader.authoring)."""

from attnkit_grader.authoring import Assignment

from . import bugs, checks, copies, examples, mutation, reference

ASSIGNMENT = Assignment(
    name="ps3_rope",
    title="Rotary position embeddings and ALiBi",
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

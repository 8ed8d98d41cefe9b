"""Problem set 2, relative positional encoding: the manifest the grader's registry reads (attnkit_grader.authoring)."""

from attnkit_grader.authoring import Assignment

from . import bugs, checks, copies, examples, mutation, reference

ASSIGNMENT = Assignment(
    name="ps2_relative_pe",
    title="Relative positional encoding",
    checks=tuple(checks.CHECKS),
    make_inputs=checks.make_inputs,
    reference=reference,
    bugs=tuple(bugs.BUGS),
    alternatives=tuple(bugs.ALTERNATIVES),
    behaviour=mutation.behaviour,
    survivors=mutation.SURVIVORS,
    # the memory probe's (L, L, head_dim) case at grading's L = 4096 takes seconds in-process; the
    # catalogue and the tests grade at L = 512, where the same bugs show
    quick_sizes={"memory_length": 512, "memory_head_dim": 16},
    examples=examples.submissions,
    independent_answers=copies.ANSWERS,
    copy_thresholds=copies.THRESHOLDS,
)

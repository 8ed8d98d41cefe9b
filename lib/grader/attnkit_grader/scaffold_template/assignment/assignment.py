"""{{title}}: the manifest the grader's registry reads (attnkit_grader.authoring)."""

from attnkit_grader.authoring import Assignment

from . import bugs, checks, mutation, reference

ASSIGNMENT = Assignment(
    name="{{name}}",
    title="{{title}}",
    checks=tuple(checks.CHECKS),
    make_inputs=checks.make_inputs,
    reference=reference,
    bugs=tuple(bugs.BUGS),
    alternatives=tuple(bugs.ALTERNATIVES),
    behaviour=mutation.behaviour,
    survivors=mutation.SURVIVORS,
)

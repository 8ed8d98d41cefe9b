"""Each student's total for an assignment, as the nbgrader gradebook holds it.

The total is nbgrader's own (its ``CsvExportPlugin``, ``nbgrader export``): the submission's score, the sum of
its cells' scores (the manual score entered in the formgrader where there is one, else the automatic score,
plus extra credit), minus the late-submission penalty the grader stored on its notebooks, never below 0.
A student with no submission has no total (``points`` None): the export decides what the LMS gets (``--missing``).
"""

from dataclasses import dataclass

from nbgrader.api import MissingEntry


@dataclass(frozen=True)
class Total:
    """One student's result for one assignment. ``points`` is None when nothing was handed in; ``pending``
    counts the cells still awaiting a manual grade in the formgrader."""

    student: str
    assignment: str
    points: float = None
    score: float = 0.0
    late_penalty: float = 0.0
    pending: int = 0


def assignments(gradebook, names=()):
    """{assignment: max points} of ``names`` (all of the gradebook's when empty), in the gradebook's order."""
    known = {assignment.name: float(assignment.max_score) for assignment in gradebook.assignments}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"assignments: {unknown} not in the gradebook (known: {sorted(known)}); "
                         f"grade them first (attnkit grade)")
    if not known:
        raise ValueError("assignments: the gradebook holds no assignment; grade one first (attnkit grade)")
    return {name: known[name] for name in (names or known)}


def read_totals(gradebook, names, students):
    """{(student, assignment): Total} for every student id in ``students`` and assignment in ``names``."""
    totals = {}
    for assignment in names:
        for student in students:
            try:
                submission = gradebook.find_submission(assignment, student)
            except MissingEntry:
                totals[student, assignment] = Total(student, assignment)
                continue
            score = float(submission.score)
            penalty = float(submission.late_submission_penalty or 0.0)
            pending = sum(grade.needs_manual_grade for notebook in submission.notebooks for grade in notebook.grades)
            totals[student, assignment] = Total(student, assignment, max(0.0, score - penalty), score, penalty,
                                                pending)
    return totals

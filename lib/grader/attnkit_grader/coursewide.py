"""The reports folder covers the whole course: grading some assignments updates their part and keeps the others.

Each grading run keeps its results, one :class:`~attnkit_grader.results.SubmissionResult` record per
submission, in ``grades/records/ASSIGNMENT.json``. Before the reports are written, :func:`widen` turns the run
into one over every assignment of source/ the gradebook holds and every student the gradebook or the run
knows: the submissions graded now from this run, the others from their records (or, where an older grader
kept none, from the gradebook: graded where it holds a submission), so grading one student (the Formgrader's
*Autograde*) keeps the classmates' results. A student with nothing graded for an
assignment is 'missing', with the reason, and scores 0, in every report. :func:`narrow` gives back the part
about the assignments graded now, which :func:`~attnkit_grader.pipeline.grade` returns and the CLI prints.
"""

import json
import logging
from pathlib import Path

from nbgrader.api import MissingEntry

from . import files
from .reports import ScoreTable, read_scores
from .results import Message, SubmissionResult

log = logging.getLogger(__name__)

RECORDS = "records"                     # grades/records/ASSIGNMENT.json
NOTHING = "nothing handed in (no folder {student}/{assignment}/)"     # as intake.examine says it


def save(reports_dir, run):
    """Keep the records of ``run``'s assignments, one file per assignment (replacing the last)."""
    for assignment in run.assignments:
        records = [record.to_json() for (_, a), record in sorted(run.submissions.items()) if a == assignment]
        files.write(Path(reports_dir) / RECORDS / f"{assignment}.json",
                    json.dumps(records, sort_keys=True, allow_nan=False) + "\n")


def load(reports_dir, assignment):
    """{student: SubmissionResult} kept for ``assignment`` ({} when there is none, or it cannot be read)."""
    path = Path(reports_dir) / RECORDS / f"{assignment}.json"
    if not path.is_file() or path.is_symlink():
        return {}
    try:
        records = [SubmissionResult.from_json(entry) for entry in json.loads(path.read_text(encoding="utf-8"))]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        log.warning("%s cannot be read (%s): %s is reported from the gradebook alone", path, error, assignment)
        return {}
    return {record.student: record for record in records if record.assignment == assignment}


def in_gradebook(course):
    """(assignments of source/ the gradebook holds, in source/'s order; the gradebook's students)."""
    with course.gradebook() as gradebook:
        assignments = {a.name for a in gradebook.assignments}
        students = {s.id for s in gradebook.students}
        graded = {(s.student.id, s.assignment.name) for a in gradebook.assignments for s in a.submissions}
    return [a for a in course.assignments() if a in assignments], students, graded


def missing(student, assignment):
    return SubmissionResult(student, assignment, "missing",
                            [Message.make(NOTHING, student=student, assignment=assignment)])


def widen(course, run, reports_dir):
    """``run`` (a GradingRun) over every assignment in the gradebook and every student (see the module)."""
    assignments, students, graded = in_gradebook(course)
    assignments += [a for a in run.assignments if a not in assignments]
    students = sorted(students | {student for student, _ in run.submissions})
    submissions = {}
    for assignment in assignments:
        kept = load(reports_dir, assignment)
        for student in students:
            record = run.submissions.get((student, assignment)) or kept.get(student)
            if record is None:
                record = (SubmissionResult(student, assignment, "graded") if (student, assignment) in graded
                          else missing(student, assignment))
            submissions[student, assignment] = record
    table = read_scores(course, assignments, students)
    return type(run)(assignments, submissions, table, {}, run.warnings, run.canary, course=assignments)


def narrow(whole, assignments, students=None):
    """The part of ``whole`` (a widened GradingRun) about ``assignments`` (and ``students``, when given): their
    records and table."""
    def part(key):
        return key[1] in assignments and (not students or key[0] in students)

    table = whole.table
    scores = ScoreTable({a: table.cells[a] for a in assignments},
                        {key: points for key, points in table.points.items() if part(key)},
                        {key for key in table.review if part(key)})
    return type(whole)(list(assignments), {key: record for key, record in whole.submissions.items() if part(key)},
                       scores, {}, whole.warnings, whole.canary, course=whole.course)

"""The instructor's grading run, end to end, as one function: :func:`grade`.

1. Sync the gradebook with source/ (generate_assignment into a scratch folder, so release/ is untouched)
   and warn when the committed release/ has drifted from source/.
2. Enrol the students (the CSV's rows, as ``nbgrader db student import`` reads them, plus any folder found).
3. Copy each submission to submitted/STUDENT/ASSIGNMENT/ (the originals are only ever read) and pre-check
   it; a submission that cannot be graded is rejected with its reason and scores 0.
4. Autograde the rest through an :class:`~attnkit.grading.autograder.Autograder` (forced re-grading:
   automatic scores are recomputed, manual scores entered in formgrader are kept).
5. Generate feedback HTML, export grades.csv, and write the per-cell table, a histogram and a JSON report.

This process is the only one that writes the gradebook. Running it twice on the same files gives the same
scores, statuses and reasons.
"""

import csv
import json
import logging
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from .autograder import Job, NbgraderAutograder
from .course import Course
from .precheck import check_submission
from .release import compare_trees, release
from .reports import export_totals, format_table, plot_totals, read_scores, write_cell_csv

log = logging.getLogger(__name__)

EXAMPLE_CLASS = Path("tests") / "fixtures" / "example_class"
STUDENT_COLUMNS = ("first_name", "last_name", "email", "lms_user_id")   # besides 'id', as nbgrader imports


@dataclass
class Submission:
    """One student's hand-in for one assignment, and what became of it.

    ``status`` is 'graded', 'rejected' (the pre-check found it ungradable), 'failed' (nbgrader gave up)
    or 'missing' (nothing handed in). ``issues`` are the reasons and remarks, in plain words.
    """

    student: str
    assignment: str
    status: str = "pending"
    issues: list = field(default_factory=list)
    seconds: float = None

    @property
    def bad(self):
        """True when it needs the instructor's attention: not graded, or graded with remarks."""
        return self.status != "graded" or bool(self.issues)


@dataclass
class GradingRun:
    """Everything one :func:`grade` call produced."""

    assignments: list
    submissions: dict          # (student, assignment) -> Submission
    table: object              # reports.ScoreTable
    reports: dict              # name -> Path of each file written in the reports folder
    warnings: list = field(default_factory=list)

    def bad(self):
        return [s for _, s in sorted(self.submissions.items()) if s.bad]

    def statuses(self, assignment):
        return {student: s.status for (student, a), s in self.submissions.items() if a == assignment}

    def text(self):
        """The per-cell tables, then every problem by student, as the CLI prints them."""
        parts = [f"{a}\n{format_table(self.table, a, self.statuses(a))}" for a in self.assignments]
        if self.table.review:
            parts.append("* awaits a manual grade (formgrader)")
        sections = [("Problems", self.problem_lines()), ("Nothing handed in", self.missing_lines()),
                    ("Warnings", [f"  {w}" for w in self.warnings])]
        parts += [f"{title}:\n" + "\n".join(lines) for title, lines in sections if lines]
        return "\n\n".join(parts)

    def problem_lines(self):
        return [f"  {s.student} / {s.assignment} [{s.status}]: {'; '.join(s.issues)}"
                for s in self.bad() if s.status != "missing"]

    def missing_lines(self):
        lines = []
        for assignment in self.assignments:
            missing = [s for s, status in sorted(self.statuses(assignment).items()) if status == "missing"]
            if missing:
                lines.append(f"  {assignment}: {', '.join(missing)}")
        return lines


def grade(course, assignments, submissions, students_csv=None, reports_dir=None, autograder=None):
    """Grade every student's submission of ``assignments`` (all of source/ when empty).

    ``submissions`` is a folder of STUDENT/ASSIGNMENT/ folders; ``students_csv`` the class list (an 'id'
    column, optional first_name, last_name, email); ``reports_dir`` where the reports go (default: the
    course's grades/); ``autograder`` the Autograder to use (default: NbgraderAutograder).
    """
    course = course if isinstance(course, Course) else Course(course)
    assignments = course.check_assignments(assignments)
    submissions = existing_dir(submissions, "submissions")
    roster = read_roster(students_csv) if students_csv else {}
    students = class_list(roster, submissions)
    reports_dir = Path(reports_dir) if reports_dir else course.root / "grades"
    records, warnings = prepare(course, assignments, submissions, roster, students)
    jobs = [Job(r.assignment, r.student) for r in records.values() if r.status == "pending"]
    reset_automatic_scores(course, jobs)
    autograder = autograder or NbgraderAutograder(course)
    api = course.api()
    for outcome in autograder.run(jobs):
        record = records[outcome.job.student, outcome.job.assignment]
        settle(course, api, record, outcome, reports_dir / "logs")
    table = read_scores(course, assignments, students)
    run = GradingRun(assignments, records, table, {}, warnings)
    run.reports = write_reports(course, run, reports_dir)
    return run


def prepare(course, assignments, submissions, roster, students):
    """Steps 1-3: gradebook in sync, students enrolled, submissions copied and pre-checked.

    Returns ({(student, assignment): Submission}, warnings); gradable submissions are 'pending'.
    """
    with tempfile.TemporaryDirectory(prefix="attnkit-grade-") as scratch:
        warnings = sync_gradebook(course, assignments, Path(scratch))
        enrol(course, roster, students)
        warnings += [f"student folder '{s}' is not in the class list; graded anyway"
                     for s in students if roster and s not in roster]
        records = {(s, a): place(course, submissions, s, a, Path(scratch) / a)
                   for a in assignments for s in students}
    return records, warnings


def demo(root=None, reports_dir=None, autograder=None):
    """:func:`grade` on the kit's example class (tests/fixtures/example_class), all assignments."""
    course = Course(root if root is not None else kit_root())
    example = course.root / EXAMPLE_CLASS
    if not example.is_dir():
        raise FileNotFoundError(f"root: no example class at {example}")
    return grade(course, [], example, example / "students.csv", reports_dir, autograder)


def kit_root():
    """The repository this package was installed from (editable install), which holds the example class."""
    root = Path(__file__).resolve().parents[3]
    if not (root / EXAMPLE_CLASS).is_dir():
        raise FileNotFoundError(f"root: {root} is not the kit's repository; pass the course folder explicitly")
    return root


def existing_dir(path, name):
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"{name}: {path} is not a folder")
    return path.resolve()


def read_roster(path):
    """{student id: {column: value}} from a class-list CSV, read the way ``nbgrader db student import`` does."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"students_csv: {path} does not exist")
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        reader.fieldnames = [name.strip() for name in reader.fieldnames or []]
        if "id" not in reader.fieldnames:
            raise ValueError(f"students_csv: {path} needs an 'id' column, got columns {reader.fieldnames}")
        roster = {}
        for line, row in enumerate(reader, start=2):
            student = (row["id"] or "").strip()
            if not student or student in roster:
                raise ValueError(f"students_csv: {path} line {line}: id {student!r} is empty or repeated")
            roster[student] = {k: (row.get(k) or None) for k in STUDENT_COLUMNS if k in row}
    return roster


def class_list(roster, submissions):
    """Every student on the roster or with a folder in ``submissions``, sorted."""
    folders = {p.name for p in submissions.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    students = sorted(set(roster) | folders)
    if not students:
        raise ValueError(f"submissions: no student folder in {submissions} and no class list")
    return students


def sync_gradebook(course, assignments, scratch):
    """Record ``assignments`` from source/ in the gradebook; return warnings about release/ drift."""
    release(course, assignments, release_dir=scratch)
    warnings = []
    for assignment in assignments:
        differences = compare_trees(course.assignment_dir("release", assignment), scratch / assignment)
        if differences:
            warnings.append(f"release/{assignment} is not what source/ generates today (students may hold an "
                            f"older version): {'; '.join(differences)}")
    return warnings


def enrol(course, roster, students):
    """Create or update each student in the gradebook (roster details where the CSV has them)."""
    with Gradebook(course.db_url, course.course_id) as gradebook:
        for student in students:
            details = {k: v for k, v in roster.get(student, {}).items() if v is not None}
            gradebook.update_or_create_student(student, **details)


def place(course, submissions, student, assignment, released):
    """Copy one submission into submitted/ and pre-check it; the returned record is 'pending' if gradable."""
    record = Submission(student, assignment)
    original = submissions / student / assignment
    target = course.assignment_dir("submitted", assignment, student)
    if original.resolve() != target.resolve():
        remove_tree(target)
        if original.is_dir():
            shutil.copytree(original, target)
    if not original.is_dir():
        record.status, record.issues = "missing", [f"nothing handed in (no folder {student}/{assignment}/)"]
    else:
        issues = check_submission(original, released, course.assignment_dir("source", assignment))
        record.issues = [issue.reason for issue in issues]
        record.status = "rejected" if any(issue.fatal for issue in issues) else "pending"
    if record.status != "pending":
        forget(course, assignment, student)
    if record.status == "rejected":
        log.warning("%s / %s rejected: %s", student, assignment, "; ".join(record.issues))
    return record


def reset_automatic_scores(course, jobs):
    """Clear old automatic scores of the submissions about to be graded; manual scores stay.

    nbgrader only overwrites the scores of the cells it finds, so a test cell deleted since the last run
    would otherwise keep its old score.
    """
    with Gradebook(course.db_url, course.course_id) as gradebook:
        for job in jobs:
            try:
                submission = gradebook.find_submission(job.assignment, job.student)
            except MissingEntry:
                continue
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    grade.auto_score = None
        gradebook.db.commit()


def settle(course, api, record, outcome, logs_dir):
    """Record an autograde outcome; make feedback for graded work, forget failed work; keep nbgrader's log."""
    record.seconds = outcome.seconds
    record.issues += outcome.issues
    text = outcome.log
    if outcome.ok:
        record.status = "graded"
        feedback = api.generate_feedback(record.assignment, record.student, force=True)
        text += feedback.get("log", "") + feedback.get("error", "")
        if not feedback["success"]:
            record.issues.append("feedback HTML could not be generated (see the log)")
    else:
        record.status = "failed"
        forget(course, record.assignment, record.student)
    logs_dir.mkdir(parents=True, exist_ok=True)
    (logs_dir / f"{record.assignment}--{record.student}.log").write_text(text, encoding="utf-8")
    log.info("%s / %s %s in %.1f s%s", record.student, record.assignment, record.status, outcome.seconds,
             (": " + "; ".join(record.issues)) if record.issues else "")


def forget(course, assignment, student):
    """Drop a submission's scores, autograded copy and feedback, so nothing stale survives a re-run."""
    for step in ("autograded", "feedback"):
        remove_tree(course.assignment_dir(step, assignment, student))
    with Gradebook(course.db_url, course.course_id) as gradebook:
        try:
            gradebook.remove_submission(assignment, student)
        except MissingEntry:
            pass


def remove_tree(path):
    if path.is_dir():
        shutil.rmtree(path)


def write_reports(course, run, reports_dir):
    """Write grades.csv (nbgrader export), cells.csv, scores.png, table.txt and report.json."""
    reports_dir.mkdir(parents=True, exist_ok=True)
    paths = {name: reports_dir / name for name in
             ("grades.csv", "cells.csv", "scores.png", "table.txt", "report.json")}
    export_totals(course, paths["grades.csv"], run.assignments)
    write_cell_csv(run.table, paths["cells.csv"])
    plot_totals(run.table, paths["scores.png"])
    paths["table.txt"].write_text(run.text() + "\n", encoding="utf-8")
    paths["report.json"].write_text(json.dumps(report(run), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return paths


def report(run):
    """JSON-ready summary: per student and assignment, points per cell, total, status and issues."""
    students = {}
    for (student, assignment), record in sorted(run.submissions.items()):
        entry = asdict(record)
        del entry["student"], entry["assignment"]
        entry["points"] = run.table.points[student, assignment]
        entry["total"] = run.table.total(student, assignment)
        students.setdefault(student, {})[assignment] = entry
    return {"assignments": {a: dict(run.table.cells[a]) for a in run.assignments},
            "students": students, "warnings": run.warnings}

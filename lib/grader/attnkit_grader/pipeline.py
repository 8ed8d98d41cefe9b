"""The instructor's grading run, end to end, as one function: :func:`grade`.

1. The canary (:mod:`.canary`) sings on a thread of its own while this one pre-checks every hand-in, writing
   nothing (:func:`.intake.look`: the release generated from source/ into a scratch folder, the committed
   release/'s drift, each submission where it lies). A submission that cannot be graded is rejected with its
   reason and scores 0.
2. Once the canary has passed, each STUDENT/ASSIGNMENT folder is copied into submitted/STUDENT/ASSIGNMENT/
   (nbgrader's layout, which the formgrader lists): :func:`.intake.collect_all`. The originals are only ever
   read, and a folder holding a symbolic link is neither copied nor graded. Both graders then read submitted/
   and never write it.
3. The gradebook is synced with source/ and the students enrolled (:func:`.intake.settle`), by the sandboxed
   grader while its first sandboxes start (each run is handed to the pool as soon as it is planned).
4. Autograde the rest through an :class:`~attnkit_grader.autograders.base.Autograder` (forced re-grading:
   automatic scores are recomputed, manual scores entered in formgrader are kept): by default the
   sandboxed, parallel, resumable :class:`~attnkit_grader.autograders.sandboxed.SandboxAutograder`, or
   ``grader="nbgrader"`` for plain ``nbgrader autograde``. A progress bar with an ETA goes to stderr.
   Each submission's outcome is one :class:`~attnkit_grader.results.SubmissionResult`, from the pre-check
   to the reports; the autograder writes its feedback page.
5. The reports registered in :data:`REPORTS`, each a function of the graded run (the similarity report's pairs
   worked out on a thread while the sandboxes run): grades.csv (nbgrader's
   export), cells.csv and checks.csv, the per-cell table with the reason for every lost point, a score
   histogram, a per-exercise success-rate plot, a JSON report, the similarity report and the insight
   report (what the class got wrong, by check and catalogued mistake: :mod:`.insight`). They cover the whole
   course: every assignment in the gradebook, every student, the assignments not graded now as last graded
   (:mod:`.coursewide`).

This process is the only one that writes the gradebook. Running it twice on the same files gives the same
scores, statuses and reasons. With the sandboxed grader, once the submissions are collected, nothing
changes but the reports folder and, for the graded submissions only, their gradebook rows, their
autograded/ copies (for the formgrader and ``nbgrader generate_feedback``) and nbgrader feedback/ pages
made stale by a changed copy (removed).
"""

import contextlib
import functools
import json
import logging
import os
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .autograders.base import Job, NbgraderAutograder
from .course import Course, NothingToDo
from .isolation import door
from . import coursewide, insight, similarity
from .intake import class_list, collect_all, existing_dir, look, read_roster, refuse_odd_entries, settle
from .progress import Progress
from .reports import (export_totals, format_table, number, plot_success, plot_totals, write_cell_csv,
                      write_check_csv)

log = logging.getLogger(__name__)

EXAMPLE_CLASS = Path("examples") / "example_class"
GRADERS = ("sandbox", "nbgrader")


@dataclass
class GradingRun:
    """Everything one :func:`grade` call produced."""

    assignments: list
    submissions: dict          # (student, assignment) -> SubmissionResult
    table: object              # reports.ScoreTable
    reports: dict              # name -> Path of each file written in the reports folder
    warnings: list = field(default_factory=list)
    canary: str = None         # the canary's line (what it scored, its cost), where one was sung
    course: list = None        # every assignment the reports hold: these and the others as last graded (.coursewide)
    alike: object = None       # similarity.Ahead: the similarity report's pairs, worked out while the sandboxes ran
    insight: object = None     # (grading key, the insight summary): worked out once for the three insight reports

    def bad(self):
        return [s for _, s in sorted(self.submissions.items()) if s.bad]

    def statuses(self, assignment):
        return {student: s.status for (student, a), s in self.submissions.items() if a == assignment}

    def text(self):
        """The per-cell tables, then every problem by student, as the CLI prints them."""
        parts = [f"{a}\n{format_table(self.table, a, self.statuses(a))}" for a in self.assignments]
        if self.table.review:
            parts.append("* awaits a manual grade (formgrader)")
        sections = [("Problems", self.problem_lines()), ("Lost points (first failed check of each exercise)",
                                                          self.failure_lines()),
                    ("Nothing handed in", self.missing_lines()), ("Warnings", [f"  {w}" for w in self.warnings])]
        parts += [f"{title}:\n" + "\n".join(lines) for title, lines in sections if lines]
        return "\n\n".join(parts)

    def problem_lines(self):
        return [f"  {s.student} / {s.assignment} [{s.status}]: {'; '.join(s.issue_texts())}"
                for s in self.bad() if s.status != "missing"]

    def failure_lines(self):
        lines = []
        for (student, assignment), record in sorted(self.submissions.items()):
            maxima = dict(self.table.cells.get(assignment, []))
            for grade_id, message in record.failures().items():
                points = self.table.points.get((student, assignment), {}).get(grade_id)
                score = f" ({number(points)}/{number(maxima[grade_id])})" if points is not None and grade_id in maxima else ""
                lines.append(f"  {student} / {assignment} / {grade_id}{score}: {message}")
        return lines

    def missing_lines(self):
        lines = []
        for assignment in self.assignments:
            missing = [s for s, status in sorted(self.statuses(assignment).items()) if status == "missing"]
            if missing:
                lines.append(f"  {assignment}: {', '.join(missing)}")
        return lines


def grade(course, assignments, submissions, students_csv=None, reports_dir=None, autograder=None, *,
          grader="sandbox", workers=None, fresh=False, show_tests=False, warm=None, progress=False, scheduler=None,
          certs=None, canary=True, only=None):
    """Grade every student's submission of ``assignments`` (all of source/ when empty); ``only``: these
    students' alone (the others' results, kept from their last grading, stay in the reports).

    ``submissions`` is a folder of STUDENT/ASSIGNMENT/ folders; ``students_csv`` the class list (an 'id'
    column, optional first_name, last_name, email); ``reports_dir`` the grader's output folder (default:
    the course's grades/); ``autograder`` an Autograder, else one made by :func:`make_autograder` from
    ``grader`` ('sandbox' or 'nbgrader'), ``workers``, ``fresh``, ``show_tests``, ``warm`` (None: warm starts
    where possible; False: a fresh interpreter per sandbox), and ``scheduler`` with ``certs`` (the sandboxes on
    a Dask cluster: :mod:`.autograders.cluster`); ``progress``: draw a progress bar with an ETA on stderr;
    ``canary``: False skips the sandboxed grader's canary (:mod:`.canary`; for tests of other things only).
    The canary is sung before anything is written: when it fails, :class:`~.canary.CanaryFailed` is raised and
    the gradebook, the journal, submitted/ and the reports are as they were.
    """
    course = course if isinstance(course, Course) else Course(course)
    assignments = course.check_assignments(assignments)
    reports_dir = Path(os.path.abspath(reports_dir)) if reports_dir else course.root / "grades"
    submissions = existing_dir(submissions, "submissions")
    roster = read_roster(students_csv) if students_csv else {}
    students = class_list(roster, submissions, only)
    if not any(os.path.lexists(submissions / s / a) for s in students for a in assignments):
        raise NothingToDo(f"nothing handed in for {', '.join(assignments)} in {submissions}: nothing graded, the "
                          f"reports are as they were (collect the hand-ins first: attnkit collect ASSIGNMENT)")
    refuse_odd_entries({"reports": reports_dir, "autograded": course.step_dir("autograded")})
    autograder = autograder or make_autograder(grader, course, reports_dir, workers=workers, fresh=fresh,
                                               show_tests=show_tests, warm=warm, scheduler=scheduler,
                                               certs=certs, canary=canary)
    try:
        with tempfile.TemporaryDirectory(prefix="attnkit-grade-") as scratch:
            with meanwhile(autograder.prepare, assignments):   # the canary: nothing is written before it passes
                records, warnings = look(course, assignments, submissions, roster, students, Path(scratch), autograder)
        collect_all(course, submissions, records)
        jobs = [Job(r.assignment, r.student, course.assignment_dir("submitted", r.assignment, r.student),
                    tuple(r.issues))
                for r in records.values() if r.status == "pending"]
        alike = None                   # started with the first result: not beside the sandboxes' start
        bar = Progress(len(jobs)) if progress and jobs else None
        gradebook = functools.partial(settle, course, assignments, roster, records, autograder)
        for result, text in autograder.results(jobs, before_writing=gradebook):   # while the first sandboxes start
            if alike is None:
                alike = similarity.Ahead(course, assignments, {(j.student, j.assignment): j.folder for j in jobs})
            key = result.student, result.assignment
            records[key] = record = record_result(course, records[key], result, text, reports_dir / "logs",
                                                  autograder, quiet=bar is not None)
            if bar:
                bar.update(f"{record.student} / {record.assignment}", progress_note(record),
                           timed=not record.resumed, activity=autograder.activity())
        if bar:
            bar.close()
    finally:
        autograder.close()
    run = GradingRun(assignments, records, None, {}, warnings, getattr(autograder, "canary_summary", None))
    whole = coursewide.widen(course, run, reports_dir)
    coursewide.save(reports_dir, coursewide.narrow(whole, assignments))
    run = coursewide.narrow(whole, assignments, only)   # what was graded now (every student, or ``only``)
    whole.alike = alike
    run.reports = write_reports(course, whole, reports_dir)
    return run


def make_autograder(grader, course, reports_dir, workers=None, fresh=False, show_tests=False, warm=None,
                    scheduler=None, certs=None, canary=True):
    """'sandbox': the sandboxed parallel grader writing into ``reports_dir`` (its sandboxes on the Dask cluster
    of ``scheduler``, with the certificates in ``certs``, when given); 'nbgrader': plain nbgrader."""
    if scheduler is not None and grader != "sandbox":
        raise ValueError(f"scheduler: only the sandbox grader runs on a cluster, not {grader!r}")
    if scheduler is not None:
        if certs is None:
            raise ValueError("certs: a cluster needs its certificates folder (attnkit cluster certs DIR)")
        from .autograders.cluster import ClusterAutograder       # imports distributed: cluster grading only
        return ClusterAutograder(course, reports_dir, scheduler, certs, workers=workers, fresh=fresh,
                                 show_tests=show_tests, warm=warm, canary=canary)
    if grader == "nbgrader":
        if door.configured():
            raise ValueError("grader: on this machine submissions are graded only in the sandbox (attnkit grade's "
                             "default); plain nbgrader would run students' code unsandboxed, as you")
        return NbgraderAutograder(course)
    if grader != "sandbox":
        raise ValueError(f"grader: expected one of {GRADERS}, got {grader!r}")
    from .autograders.sandboxed import SandboxAutograder        # imports the trusted judges: instructors only
    return SandboxAutograder(course, reports_dir, workers=workers, fresh=fresh, show_tests=show_tests, warm=warm,
                             canary=canary)


@contextlib.contextmanager
def meanwhile(task, *args):
    """Run ``task(*args)`` on a thread of its own while the block runs; at the block's end, wait for it and raise
    what it raised (what the block raised comes first)."""
    raised = []

    def target():
        try:
            task(*args)
        except BaseException as error:  # noqa: BLE001 - handed to the waiting thread
            raised.append(error)

    thread = threading.Thread(target=target, name="attnkit-canary", daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()
    if raised:
        raise raised[0]


def progress_note(record):
    """'5.5 points, 3.2 s', 'from the journal' or 'failed: why', for the progress line."""
    if record.status != "graded":
        return f"{record.status}: {record.issues[-1] if record.issues else ''}"
    text = "graded"
    if record.cells:
        auto = [p for p in record.scores().values() if p is not None]
        text = f"{sum(auto):g} points"
    return text + (" (from the journal)" if record.resumed else f", {record.seconds:.1f} s")


def demo(root=None, reports_dir=None, autograder=None, **options):
    """:func:`grade` on the kit's example class (examples/example_class), all assignments; ``root``: the kit's
    repository (default: the current folder, as ``make demo`` runs it)."""
    course = Course(root if root is not None else Path.cwd())
    example = course.root / EXAMPLE_CLASS
    if not example.is_dir():
        raise FileNotFoundError(f"root: no example class at {example}; run it in the kit's repository or give "
                                f"--root")
    return grade(course, [], example, example / "students.csv", reports_dir, autograder, **options)


def record_result(course, record, result, text, logs_dir, autograder=None, quiet=False):
    """The grader's ``result`` of a pending ``record``, with the pre-check's issues first; failed work is
    forgotten; the grader's log ``text`` is kept."""
    merged = result.evolve(issues=list(record.issues))
    merged.add_issues(result.issues)
    if merged.status != "graded":
        course.forget([(merged.assignment, merged.student)])
        if autograder is not None:
            autograder.forget(merged.assignment, merged.student)
    logs_dir.mkdir(parents=True, exist_ok=True)
    (logs_dir / f"{merged.assignment}--{merged.student}.log").write_text(text, encoding="utf-8")
    (log.debug if quiet else log.info)(
        "%s / %s %s in %.1f s%s", merged.student, merged.assignment, merged.status, merged.seconds or 0.0,
        (": " + "; ".join(merged.issue_texts())) if merged.issues else "")
    return merged


@dataclass(frozen=True)
class Report:
    """One file of the reports folder: ``write(course, run, path)`` writes it from the graded run;
    ``wanted(run)``: whether this run has it (checks.csv only when some result holds judged checks)."""

    name: str
    write: Callable
    wanted: Callable = None


def write_totals(course, run, path):
    export_totals(course, path, run.assignments)


def write_cells(course, run, path):
    write_cell_csv(run.table, path)


def write_checks(course, run, path):
    write_check_csv(run.submissions, path)


def has_checks(run):
    return any(record.checked for record in run.submissions.values())


def write_histogram(course, run, path):
    plot_totals(run.table, path)


def write_success(course, run, path):
    handed_in = {key for key, record in run.submissions.items() if record.status != "missing"}
    plot_success(run.table, handed_in, path)


def write_table(course, run, path):
    path.write_text(run.text() + "\n", encoding="utf-8")


def write_json(course, run, path):
    path.write_text(json.dumps(report(run), indent=1, sort_keys=True) + "\n", encoding="utf-8")


def write_similarity(course, run, path):
    graded = {(student, assignment): course.assignment_dir("submitted", assignment, student)
              for (student, assignment), record in run.submissions.items() if record.status == "graded"}
    (run.alike or similarity).write_report(course, run.assignments, graded, path)


# Every report a grading run writes, in the order the CLI lists them: add one here, nowhere else.
REPORTS = [
    Report("grades.csv", write_totals),                # nbgrader's export: totals per student and assignment
    Report("cells.csv", write_cells),                  # points per grade cell
    Report("checks.csv", write_checks, has_checks),    # every judged check, with its message
    Report("scores.png", write_histogram),
    Report("success.png", write_success),
    Report("table.txt", write_table),                  # the CLI's tables, for every assignment and student
    Report("report.json", write_json),
    Report("similarity.html", write_similarity),       # pairs of alike answers, for a person to read
    Report("insight.html", insight.write_html),        # what the class got wrong, anonymised (issue 29)
    Report("insight.json", insight.write_json),
    Report("insight-labels.csv", insight.write_labels_csv),   # the instructor's key to the insight's labels
]


def write_reports(course, run, reports_dir):
    """Write each of :data:`REPORTS` the run has into ``reports_dir``; {name: path}."""
    reports_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for entry in REPORTS:
        if entry.wanted is None or entry.wanted(run):
            paths[entry.name] = reports_dir / entry.name
            entry.write(course, run, paths[entry.name])
    return paths


def report(run):
    """JSON-ready summary: per student and assignment, points per cell, total, status and issues."""
    students = {}
    for (student, assignment), record in sorted(run.submissions.items()):
        students.setdefault(student, {})[assignment] = {
            "status": record.status, "issues": record.issue_texts(), "seconds": record.seconds,
            "failures": record.failures(), "feedback": record.feedback, "resumed": record.resumed,
            "points": run.table.points[student, assignment], "total": run.table.total(student, assignment)}
    return {"assignments": {a: dict(run.table.cells[a]) for a in run.assignments},
            "students": students, "warnings": run.warnings}

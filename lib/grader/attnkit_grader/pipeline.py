"""The instructor's grading run, end to end, as one function: :func:`grade`.

1. Sync the gradebook with source/ (generate_assignment into a scratch folder, so release/ is untouched)
   and warn when the committed release/ has drifted from source/.
2. Enrol the students (the CSV's rows, as ``nbgrader db student import`` reads them, plus any folder found).
3. Collect and pre-check: unless the submissions folder is the course's submitted/ itself, each
   STUDENT/ASSIGNMENT folder is copied into submitted/STUDENT/ASSIGNMENT/ (nbgrader's layout, which the
   formgrader lists), before any grading starts; the originals are only ever read, and a folder holding
   a symbolic link is neither copied nor graded. A submission that cannot be graded is rejected with its
   reason and scores 0. Both graders then read submitted/ and never write it.
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

import csv
import json
import logging
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from nbgrader.api import MissingEntry

from attnkit.i18n import N_
from attnkit_sandbox.cells import MAX_NOTEBOOK_BYTES

from .autograders.base import Job, NbgraderAutograder
from .course import Course, NothingToDo
from .isolation import door
from . import copies, coursewide, insight, similarity
from .files import remove
from .precheck import check_submission
from .progress import Progress
from .releases import compare_trees, release
from .reports import (export_totals, format_table, number, plot_success, plot_totals, write_cell_csv,
                      write_check_csv)
from .results import Message, SubmissionResult

log = logging.getLogger(__name__)

EXAMPLE_CLASS = Path("examples") / "example_class"
STUDENT_COLUMNS = ("first_name", "last_name", "email", "lms_user_id")   # besides 'id', as nbgrader imports
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
        autograder.prepare(assignments)                 # the canary: before anything is written
        records, warnings = prepare(course, assignments, submissions, roster, students, autograder)
        jobs = [Job(r.assignment, r.student, course.assignment_dir("submitted", r.assignment, r.student),
                    tuple(r.issues))
                for r in records.values() if r.status == "pending"]
        reset_automatic_scores(course, jobs)
        alike = None                   # started with the first result: not beside the sandboxes' start
        bar = Progress(len(jobs)) if progress and jobs else None
        for result, text in autograder.run(jobs):
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


def progress_note(record):
    """'5.5 points, 3.2 s', 'from the journal' or 'failed: why', for the progress line."""
    if record.status != "graded":
        return f"{record.status}: {record.issues[-1] if record.issues else ''}"
    text = "graded"
    if record.cells:
        auto = [p for p in record.scores().values() if p is not None]
        text = f"{sum(auto):g} points"
    return text + (" (from the journal)" if record.resumed else f", {record.seconds:.1f} s")


def prepare(course, assignments, submissions, roster, students, autograder=None):
    """Steps 1-3: gradebook in sync, students enrolled, submissions collected into submitted/ and pre-checked.

    Returns ({(student, assignment): SubmissionResult}, warnings); gradable submissions are 'pending'.
    """
    with tempfile.TemporaryDirectory(prefix="attnkit-grade-") as scratch:
        warnings = sync_gradebook(course, assignments, Path(scratch))
        enrol(course, roster, students)
        warnings += [f"student folder '{s}' is not in the class list; graded anyway"
                     for s in students if roster and s not in roster]
        known = {a: (copies.known(course, a), copies.thresholds(a)) for a in assignments}   # read once a batch
        records = {(s, a): place(course, submissions, s, a, Path(scratch) / a, autograder=autograder, known=known[a])
                   for a in assignments for s in students}
    dropped = [(record.assignment, record.student) for record in records.values() if record.status != "pending"]
    course.forget(dropped)
    if autograder is not None:
        for assignment, student in dropped:
            autograder.forget(assignment, student)
    return records, warnings


def demo(root=None, reports_dir=None, autograder=None, **options):
    """:func:`grade` on the kit's example class (examples/example_class), all assignments; ``root``: the kit's
    repository (default: the current folder, as ``make demo`` runs it)."""
    course = Course(root if root is not None else Path.cwd())
    example = course.root / EXAMPLE_CLASS
    if not example.is_dir():
        raise FileNotFoundError(f"root: no example class at {example}; run it in the kit's repository or give "
                                f"--root")
    return grade(course, [], example, example / "students.csv", reports_dir, autograder, **options)


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


def class_list(roster, submissions, only=None):
    """Every student on the roster or with a folder in ``submissions``, sorted (``only``: those of them)."""
    folders = {p.name for p in submissions.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    students = sorted(set(roster) | folders)
    if only:
        unknown = sorted(set(only) - set(students))
        if unknown:
            raise ValueError(f"student: {', '.join(unknown)} neither on the class list nor with a folder in "
                             f"{submissions}")
        students = [s for s in students if s in only]
    if not students:
        raise NothingToDo(f"nothing handed in: no student folder in {submissions} and no class list; nothing "
                          f"graded (collect the hand-ins first: attnkit collect ASSIGNMENT)")
    return students


def sync_gradebook(course, assignments, scratch):
    """Record ``assignments`` from source/ in the gradebook; return warnings about release/ drift."""
    warnings = []
    for name in release(course, assignments, release_dir=scratch):
        differences = compare_trees(course.assignment_dir("release", name), scratch / name)
        if differences:
            warnings.append(f"release/{name} is not what source/ generates today (students may hold an "
                            f"older version): {'; '.join(differences)}")
    return warnings


def enrol(course, roster, students):
    """Create or update each student in the gradebook (roster details where the CSV has them)."""
    with course.gradebook() as gradebook:
        for student in students:
            details = {k: v for k, v in roster.get(student, {}).items() if v is not None}
            gradebook.update_or_create_student(student, **details)


def place(course, submissions, student, assignment, released, copy=True, autograder=None, known=None):
    """Collect one submission into submitted/ (when ``copy`` and it is not there already) and pre-check
    it; 'pending' if gradable.

    A submission whose folder is, or holds, a symbolic link (a link to source/ would have the
    instructor's notebook graded as the student's) or anything but folders and plain files (copying a
    named pipe would hang the batch) is rejected and not copied. The ``autograder`` triages the pre-check's
    issues (:meth:`~attnkit_grader.autograders.base.Autograder.triage`: the sandboxed grader still grades a
    notebook nbformat rejects when its cells can be read). ``known``: (solutions, thresholds) the answers are
    compared with (:mod:`.copies`; default: the assignment's, read here).
    """
    record = SubmissionResult(student, assignment)
    original = submissions / student / assignment
    odd = odd_entries(original)
    if copy:
        target = course.assignment_dir("submitted", assignment, student)
        if original.resolve() != target.resolve():
            remove(target)
            if original.is_dir() and not odd:
                shutil.copytree(original, target, symlinks=True)
    huge = [p.name for p in released.glob("*.ipynb")
            if (original / p.name).is_file() and (original / p.name).stat().st_size > MAX_NOTEBOOK_BYTES]
    if odd:
        record.status = "rejected"
        path, what = odd[0]
        where = f"{student}/{assignment}" + ("" if path == "." else f"/{path}")
        record.issues = [Message.make("{path} is {what}; hand in plain files", path=where,
                                      what=Message.make(what))]
    elif not original.is_dir():
        record.status = "missing"
        record.issues = [Message.make("nothing handed in (no folder {student}/{assignment}/)", student=student,
                                      assignment=assignment)]
    elif huge:                                          # never read a file that size into the grader's memory
        record.status = "rejected"
        record.issues = [Message.make("{name} is larger than {size} MiB", name=name,
                                      size=MAX_NOTEBOOK_BYTES // 2**20) for name in huge]
    else:
        translations = [released.parent / name for language, name in course.editions(assignment).items()
                        if name != assignment]
        solutions, limits = known or (copies.known(course, assignment), copies.thresholds(assignment))
        issues = check_submission(original, released, course.assignment_dir("source", assignment), translations,
                                  known=solutions, limits=limits)
        if autograder is not None:
            issues = autograder.triage(issues, original, released)
        record.issues = [issue.message or Message.text(issue.reason) for issue in issues]
        record.status = "rejected" if any(issue.fatal for issue in issues) else "pending"
    if record.status == "rejected":
        log.warning("%s / %s rejected: %s", student, assignment, "; ".join(record.issue_texts()))
    return record


def odd_entries(folder):
    """[(path relative to ``folder``, what it is)] for every symbolic link (also one on the way to
    ``folder``: path '.') and every entry that is neither a folder nor a plain file, sorted."""
    folder = Path(folder)
    if os.path.realpath(folder) != os.path.abspath(folder):
        exists = folder.is_symlink() or folder.exists()
        return [(".", N_("a symbolic link (or lies behind one)"))] if exists else []
    if not folder.is_dir():
        return []
    found = []
    for top, folders, files in os.walk(folder):
        for name in folders + files:
            path = os.path.join(top, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                found.append((os.path.relpath(path, folder), N_("a symbolic link")))
            elif not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                found.append((os.path.relpath(path, folder), N_("not a plain file")))
    return sorted(found)


def refuse_odd_entries(folders):
    """Raise ValueError naming the first link (or entry neither folder nor plain file) in the folders the grader
    writes, {argument: path}, before any work: a planted link would have it write through to the link's target."""
    for name, folder in folders.items():
        folder = Path(os.path.realpath(Path(folder).parent)) / Path(folder).name    # a link above it is the owner's
        for path, what in odd_entries(folder)[:1]:
            where = Path(folder) if path == "." else Path(folder) / path
            raise ValueError(f"{name}: {where} is {what}; attnkit grade writes in {folder} and follows no link: "
                             f"remove it and grade again")


def reset_automatic_scores(course, jobs):
    """Clear old automatic scores of the submissions about to be graded; manual scores stay.

    nbgrader only overwrites the scores of the cells it finds, so a test cell deleted since the last run
    would otherwise keep its old score.
    """
    with course.gradebook() as gradebook:
        for job in jobs:
            try:
                submission = gradebook.find_submission(job.assignment, job.student)
            except MissingEntry:
                continue
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    grade.auto_score = None
        gradebook.db.commit()


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

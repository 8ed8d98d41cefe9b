"""Steps 1-3 of a grading run (:func:`.pipeline.grade`): the submissions looked at, collected into submitted/,
and the gradebook made ready for them.

The work is split by what it writes and when, because nothing may be written before the canary has passed
(:mod:`.canary`), and the canary's sandboxes, then the students', take seconds:

- :func:`look` writes nothing outside its scratch folder, so it runs while the canary sings. It generates the
  release from source/ there, outside the gradebook, says where the committed release/ has drifted from it,
  and pre-checks each hand-in where it lies (:func:`examine`; the originals are only ever read). A submission
  that cannot be graded is rejected with its reason and scores 0.
- :func:`collect_all`, once the canary has passed, copies each STUDENT/ASSIGNMENT folder into
  submitted/STUDENT/ASSIGNMENT/ (nbgrader's layout, which the formgrader lists; not when the submissions folder
  is submitted/ itself; a folder holding a symbolic link is not copied): the runs read these copies.
- :func:`settle` is the gradebook's side, run while the first sandboxes start (the autograder calls it before its
  first write): the assignments recorded (nbgrader's generate_assignment with the gradebook, into a scratch
  folder, so release/ is untouched), the students enrolled (the class list's rows, as ``nbgrader db student
  import`` reads them, and every folder found), what was recorded of the submissions not graded now forgotten,
  and the automatic scores of those about to be graded cleared.
"""

import csv
import logging
import os
import shutil
import stat
import tempfile
from pathlib import Path

from nbgrader.api import MissingEntry, Student

from attnkit.i18n import N_
from attnkit_sandbox.cells import MAX_NOTEBOOK_BYTES

from . import copies
from .course import NothingToDo
from .files import remove
from .precheck import check_submission
from .releases import compare_trees, release
from .results import Message, SubmissionResult

log = logging.getLogger(__name__)

STUDENT_COLUMNS = ("first_name", "last_name", "email", "lms_user_id")   # besides 'id', as nbgrader imports


def look(course, assignments, submissions, roster, students, scratch, autograder=None):
    """The pre-check of every student's submission of ``assignments``, writing nothing outside ``scratch`` (which
    gets the release generated from source/): ({(student, assignment): SubmissionResult}, warnings)."""
    names = release(course, assignments, release_dir=scratch, database=False)
    warnings = drift_warnings(course, names, scratch)
    warnings += [f"student folder '{s}' is not in the class list; graded anyway"
                 for s in students if roster and s not in roster]
    known = {a: (copies.known(course, a), copies.thresholds(a)) for a in assignments}   # read once a batch
    records = {(s, a): examine(course, submissions, s, a, scratch / a, autograder, known[a])
               for a in assignments for s in students}
    return records, warnings


def collect_all(course, submissions, records):
    """:func:`collect` each of ``records`` (what :func:`look` found) into submitted/."""
    for student, assignment in records:
        collect(course, submissions, student, assignment)


def settle(course, assignments, roster, records, autograder=None):
    """The gradebook's side of what :func:`look` found (``records``): the assignments recorded (from source/), the
    students enrolled, the records of the submissions not graded now forgotten (in the gradebook, and by the
    ``autograder``), and the automatic scores of those about to be graded cleared."""
    with tempfile.TemporaryDirectory(prefix="attnkit-gradebook-") as scratch:
        release(course, assignments, release_dir=scratch, english_only=True)
    enrol(course, roster, sorted({student for student, _ in records}))
    dropped = [(record.assignment, record.student) for record in records.values() if record.status != "pending"]
    course.forget(dropped)
    if autograder is not None:
        for assignment, student in dropped:
            autograder.forget(assignment, student)
    reset_automatic_scores(course, [record for record in records.values() if record.status == "pending"])


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


def drift_warnings(course, names, scratch):
    """Warnings about each of the folders ``names`` generated into ``scratch`` that the committed release/ holds
    otherwise."""
    warnings = []
    for name in names:
        differences = compare_trees(course.assignment_dir("release", name), scratch / name)
        if differences:
            warnings.append(f"release/{name} is not what source/ generates today (students may hold an "
                            f"older version): {'; '.join(differences)}")
    return warnings


def enrol(course, roster, students):
    """Create or update each student in the gradebook (roster details where the CSV has them), in one transaction:
    a class of hundreds is one commit, not one each."""
    with course.gradebook() as gradebook:
        enrolled = {student.id: student for student in gradebook.students}
        for student in students:
            details = {k: v for k, v in roster.get(student, {}).items() if v is not None}
            if student in enrolled:
                for name, value in details.items():
                    setattr(enrolled[student], name, value)
            else:
                gradebook.db.add(Student(id=student, **details))
        gradebook.db.commit()


def place(course, submissions, student, assignment, released, copy=True, autograder=None, known=None):
    """One submission collected into submitted/ (when ``copy``: :func:`collect`), then its pre-check's record
    (:func:`examine`)."""
    if copy:
        collect(course, submissions, student, assignment)
    return examine(course, submissions, student, assignment, released, autograder, known)


def collect(course, submissions, student, assignment):
    """Copy ``submissions``/STUDENT/ASSIGNMENT/ into submitted/ (nothing when it is submitted/ itself); whatever
    submitted/ held of it goes first. A folder that is, or holds, a symbolic link, or anything but folders and plain
    files, is not copied (:func:`examine` rejects it)."""
    original = submissions / student / assignment
    target = course.assignment_dir("submitted", assignment, student)
    if original.resolve() != target.resolve():
        remove(target)
        if original.is_dir() and not odd_entries(original):
            shutil.copytree(original, target, symlinks=True)


def examine(course, submissions, student, assignment, released, autograder=None, known=None):
    """The pre-check of one submission where it lies (only read): its record, 'pending' if gradable.

    A submission whose folder is, or holds, a symbolic link (a link to source/ would have the
    instructor's notebook graded as the student's) or anything but folders and plain files (copying a
    named pipe would hang the batch) is rejected. The ``autograder`` triages the pre-check's
    issues (:meth:`~attnkit_grader.autograders.base.Autograder.triage`: the sandboxed grader still grades a
    notebook nbformat rejects when its cells can be read). ``released``: the assignment's release folder;
    ``known``: (solutions, thresholds) the answers are compared with (:mod:`.copies`; default: the assignment's,
    read here).
    """
    record = SubmissionResult(student, assignment)
    original = submissions / student / assignment
    odd = odd_entries(original)
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
    """Clear old automatic scores of the submissions about to be graded (``jobs``: each with its .assignment and
    .student); manual scores stay.

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

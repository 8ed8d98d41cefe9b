"""The autograde step, behind one small interface: plain nbgrader, or the sandboxed grader.

An :class:`Autograder` turns each job (one student's submission of one assignment) into scores. The
pipeline hands it every job at once and reads the outcomes as they come, in any order; one bad
submission must give a failed :class:`Outcome`, never an exception.

Both grade the copies the pipeline collected into the course's submitted/ before the batch, and never
write there. :class:`NbgraderAutograder` is plain ``nbgrader autograde --force``, one student at a time,
run in this process (which is therefore the only process writing the gradebook).
:class:`~attnkit_grader.autograders.sandboxed.SandboxAutograder` runs student code in sandboxes, also grades
notebooks nbformat rejects when their cells can be read (``tolerant = True``), and writes the verdicts,
nbgrader's autograded/ copies and its own feedback pages from the parent (``writes_feedback = True``).
"""

import abc
import re
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbformat.warnings import MissingIDFieldWarning
from sqlalchemy.exc import SAWarning
from nbgrader.utils import is_grade, is_solution

from ..release_cells import grade_id_of

from ..precheck import first_line


@dataclass(frozen=True)
class Job:
    """Grade ``student``'s submission of ``assignment``; ``folder``: where it lies, in submitted/ (only read)."""

    assignment: str
    student: str
    folder: Path = field(default=None, compare=False)
    remarks: tuple = field(default=(), compare=False)     # the pre-check's remarks, shown on the feedback page


@dataclass
class Outcome:
    """What became of a job: ``ok`` when it was graded; ``issues`` say what went wrong.

    The sandboxed grader also returns the points per grade cell, the judged checks
    ({grade_id: [[name, points, max_points, passed, message]]}), the first failed check's message
    per cell (``failures``), its feedback page, and whether the verdict came from the journal.
    """

    job: Job
    ok: bool
    seconds: float
    issues: list = field(default_factory=list)
    log: str = ""
    points: dict = None
    checks: dict = None
    failures: dict = None
    feedback: Path = None
    resumed: bool = False


class Autograder(abc.ABC):
    """Grades jobs; scores land in the course gradebook, written by this (the parent) process only."""

    tolerant = False             # True: grades a notebook nbformat rejects when its cells can be read
    writes_feedback = False      # the pipeline runs nbgrader's generate_feedback for graded jobs

    def prepare(self, assignments):
        """Check, before anything is written, that ``assignments`` can be graded (ValueError if not)."""

    @abc.abstractmethod
    def run(self, jobs):
        """Grade each job in ``jobs``; yield one Outcome per job, in any order, never raising for a job."""

    def forget(self, assignment, student):
        """Drop what this grader wrote for a submission that is no longer graded (rejected, failed, missing)."""


class NbgraderAutograder(Autograder):
    """nbgrader's own autograde (forced), one submission at a time, in this process."""

    def __init__(self, course):
        self.course = course
        self.api = course.api()

    def run(self, jobs):
        for job in jobs:
            yield self.grade(job)

    def grade(self, job):
        """Autograde one submission and explain what went wrong in it, if anything."""
        start = time.perf_counter()
        with warnings.catch_warnings():
            # nbgrader 0.9.6 + SQLAlchemy 2 warn (harmlessly) when a submission is first created
            warnings.filterwarnings("ignore", "Object of type .* not in session", SAWarning)
            # ... and re-add a deleted test cell (add_missing_cells) without a cell id
            warnings.filterwarnings("ignore", category=MissingIDFieldWarning)
            result = self.api.autograde(job.assignment, job.student, force=True, create=True)
        seconds = time.perf_counter() - start
        log = result.get("log", "") + result.get("error", "")
        if not result["success"]:
            return Outcome(job, False, seconds, [nbgrader_failure(log)], log)
        folder = self.course.assignment_dir("autograded", job.assignment, job.student)
        issues = []
        for path in sorted(folder.glob("*.ipynb")):
            issues += execution_issues(nbformat.read(path, as_version=4), path.name, self.course.timeout)
        return Outcome(job, True, seconds, issues, log)


# What nbgrader's log says when it gives up on a submission, and what that means for the instructor.
KNOWN_FAILURES = [
    (r"NotJSONError|JSONDecodeError", "the notebook is not valid JSON"),
    (r"No notebooks (found|were matched)", "no notebook with the released name was handed in"),
    (r"kernel became unresponsive|UnresponsiveKernelError",
     "the kernel stopped responding, even to an interrupt (a loop that ignores interrupts or eats memory?)"),
    (r"DeadKernelError|Kernel died", "the kernel died while running the notebook (out of memory? os._exit?)"),
    (r"Notebook failed to validate", "the nbgrader metadata of the notebook is corrupted"),
]
EXCEPTION_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception)): (.+)$", re.M)


def nbgrader_failure(log):
    """One line saying why ``nbgrader autograde`` failed, from its captured log and traceback."""
    for pattern, meaning in KNOWN_FAILURES:
        if re.search(pattern, log):
            return f"nbgrader could not grade it: {meaning}"
    exceptions = [e for e in EXCEPTION_LINE.findall(log) if not e[0].endswith("NbGraderException")]
    if exceptions:
        name, message = exceptions[-1]
        return f"nbgrader could not grade it: {name}: {message.strip()}"
    return "nbgrader could not grade it (see its log)"


def execution_issues(notebook, name, timeout):
    """Timeouts anywhere, and errors in cells that are not tests (failed tests just cost their points)."""
    outcomes = []
    for number, cell in enumerate(notebook.cells, start=1):
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if not errors:
            continue
        where = f"{name} cell {number}{cell_label(cell)}"
        if any(e.ename == "CellTimeoutError" for e in errors):
            outcomes.append((where, "timeout", is_test(cell), f"ran over the {timeout} s limit and was interrupted"))
        else:
            error = errors[0]
            outcomes.append((where, "error", is_test(cell), f"{error.ename}: {first_line(error.evalue or error.ename)}"))
    return issues_from_cells(outcomes, f" of {name}")


def issues_from_cells(outcomes, of_what=""):
    """The remarks both graders give on how the cells ran, in the same words.

    ``outcomes``: (where, "timeout" or "error", is a test cell, text) per cell that did not end well, in
    order; for a timeout the text says what happened, for an error it is "ExceptionName: message".
    Every timeout is reported; of the errors outside test cells (a failed test just costs its points) the
    first is reported and the later ones counted.
    """
    issues, later = [], 0
    for where, status, test, text in outcomes:
        if status == "timeout":
            issues.append(f"{where} {text}")
        elif status != "error" or test:
            continue
        elif any(" raised " in issue for issue in issues):
            later += 1
        elif text.startswith("NotImplementedError"):
            issues.append(f"{where} raised NotImplementedError (left unanswered?)")
        else:
            issues.append(f"{where} raised {text}")
    if later:
        issues.append(f"{later} later non-test cell(s){of_what} also raised")
    return issues


def cell_label(cell):
    grade_id = grade_id_of(cell)
    return f" ('{grade_id}')" if grade_id else ""


def is_test(cell):
    return bool(is_grade(cell)) and not is_solution(cell)

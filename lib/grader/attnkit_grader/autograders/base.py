"""The autograde step, behind one small interface: plain nbgrader, or the sandboxed grader.

An :class:`Autograder` turns each job (one student's submission of one assignment) into a
:class:`~attnkit_grader.results.SubmissionResult`: 'graded' (scores in the gradebook, a feedback page
written) or 'failed', with its issues. The pipeline hands it every job at once and reads the results as
they come, in any order; one bad submission must give a failed result, never an exception. Each autograder
owns its steps: which pre-check issues it can grade past (:meth:`Autograder.triage`), its feedback pages,
its journal; the pipeline asks it nothing else.

Both grade the copies the pipeline collected into the course's submitted/ before the batch, and never
write there. :class:`NbgraderAutograder` is plain ``nbgrader autograde --force`` then ``nbgrader
generate_feedback``, one student at a time, run in this process (which is therefore the only process
writing the gradebook); it keeps no per-check record. The sandboxed grader
(:class:`~attnkit_grader.autograders.sandboxed.SandboxAutograder`) runs student code in sandboxes, records
every check the trusted judge decided, and writes the verdicts, nbgrader's autograded/ copies and its own
feedback pages from the parent.
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

from attnkit.i18n import N_

from .. import offline
from ..isolation.notebook_run import cell_message
from ..precheck import first_line
from ..release_cells import grade_id_of
from ..results import Message, SubmissionResult, message


@dataclass(frozen=True)
class Job:
    """Grade ``student``'s submission of ``assignment``; ``folder``: where it lies, in submitted/ (only read)."""

    assignment: str
    student: str
    folder: Path = field(default=None, compare=False)
    remarks: tuple = field(default=(), compare=False)     # the pre-check's remarks, shown on the feedback page


class BatchInterrupted(BaseException):
    """What grades submissions went away mid-batch (e.g. a cluster's scheduler): the batch stops, no submission
    is marked failed, and what was finished stays in the journal for the next run to resume from.

    A BaseException, like KeyboardInterrupt, so that no ``except Exception`` meant for one submission's
    trouble (which marks that submission failed and drops its gradebook row) takes it for one."""


@dataclass(frozen=True)
class Activity:
    """What an autograder is doing now: submissions running, and how many each of its workers ran so far."""

    running: int = 0
    workers: dict = field(default_factory=dict)      # worker's name -> submissions it ran in this batch


def failed(job, issue, seconds=0.0):
    """The result of a job that could not be graded, saying why (``issue``: a Message or text)."""
    return SubmissionResult(job.student, job.assignment, "failed", [issue], seconds=seconds)


class Autograder(abc.ABC):
    """Grades jobs; scores land in the course gradebook, written by this (the parent) process only."""

    def prepare(self, assignments):
        """Check, before anything is written, that ``assignments`` can be graded (ValueError if not)."""

    def triage(self, issues, submission, released):
        """The pre-check's ``issues`` (:class:`~attnkit_grader.precheck.Issue`) of the submission in folder
        ``submission`` as this grader takes them (``released``: the release folder): by default unchanged, so
        a fatal issue rejects the submission."""
        return issues

    @abc.abstractmethod
    def run(self, jobs):
        """Grade each job in ``jobs``; yield one (SubmissionResult, log text) per job, in any order, never
        raising for a job. A graded result carries its feedback page."""

    def results(self, jobs, before_writing):
        """:meth:`~attnkit_grader.autograders.base.Autograder.run`, with ``before_writing()`` called once, in this
        thread, before the grader writes anything (the pipeline records the gradebook's side of the batch there). A
        grader that can start work before then (the sandboxed one: its sandboxes) overrides this."""
        before_writing()
        yield from self.run(jobs)

    def forget(self, assignment, student):
        """Drop what this grader wrote for a submission that is no longer graded (rejected, failed, missing)."""

    def activity(self):
        """An :class:`Activity` for the progress line, or None where the grader does not tell."""
        return None

    def close(self):
        """Give back what the batch held (sandbox slots, sessions, connections); called once the batch ends or
        stops."""


class NbgraderAutograder(Autograder):
    """nbgrader's own autograde (forced) and generate_feedback, one submission at a time, in this process."""

    def __init__(self, course):
        self.course = course
        self.api = course.api()

    def run(self, jobs):
        for job in jobs:
            yield self.grade(job)

    def grade(self, job):
        """Autograde one submission, write its feedback, and explain what went wrong in it, if anything."""
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
            return failed(job, nbgrader_failure(log), seconds), log
        folder = self.course.assignment_dir("autograded", job.assignment, job.student)
        issues = []
        for path in sorted(folder.glob("*.ipynb")):
            issues += execution_issues(nbformat.read(path, as_version=4), path.name, self.course.timeout)
        graded = SubmissionResult(job.student, job.assignment, "graded", issues, seconds=seconds)
        feedback = self.api.generate_feedback(job.assignment, job.student, force=True)
        log += feedback.get("log", "") + feedback.get("error", "")
        if not feedback["success"]:
            graded.add_issues([Message.make("feedback HTML could not be generated (see the log)")])
        else:
            folder = self.course.assignment_dir("feedback", job.assignment, job.student)
            pages = sorted(folder.glob("*.html"))         # complete offline: the course API's exporter finished them
            if not all(offline.typeset_in(page) for page in pages):
                log += f"feedback: formulas left as TeX, MathJax was not found ({offline.WHERE})\n"
            graded.feedback = str(next(iter(pages), folder))
        return graded, log


# What nbgrader's log says when it gives up on a submission, and what that means for the instructor.
KNOWN_FAILURES = [
    (r"NotJSONError|JSONDecodeError", N_("nbgrader could not grade it: the notebook is not valid JSON")),
    (r"No notebooks (found|were matched)",
     N_("nbgrader could not grade it: no notebook with the released name was handed in")),
    (r"kernel became unresponsive|UnresponsiveKernelError",
     N_("nbgrader could not grade it: the kernel stopped responding, even to an interrupt (a loop that ignores "
        "interrupts or eats memory?)")),
    (r"DeadKernelError|Kernel died",
     N_("nbgrader could not grade it: the kernel died while running the notebook (out of memory? os._exit?)")),
    (r"Notebook failed to validate",
     N_("nbgrader could not grade it: the nbgrader metadata of the notebook is corrupted")),
]
EXCEPTION_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception)): (.+)$", re.M)


def nbgrader_failure(log):
    """A Message saying in one line why ``nbgrader autograde`` failed, from its captured log and traceback."""
    for pattern, meaning in KNOWN_FAILURES:
        if re.search(pattern, log):
            return Message.make(meaning)
    exceptions = [e for e in EXCEPTION_LINE.findall(log) if not e[0].endswith("NbGraderException")]
    if exceptions:
        name, message = exceptions[-1]
        return Message.make("nbgrader could not grade it: {error}: {message}", error=name, message=message.strip())
    return Message.make("nbgrader could not grade it (see its log)")


def execution_issues(notebook, name, timeout):
    """Timeouts anywhere, and errors in cells that are not tests (failed tests just cost their points)."""
    outcomes = []
    for number, cell in enumerate(notebook.cells, start=1):
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if not errors:
            continue
        where = Message.make("{cell} of {notebook}", cell=cell_message(number, grade_id_of(cell)), notebook=name)
        if any(e.ename == "CellTimeoutError" for e in errors):
            outcomes.append((where, "timeout", is_test(cell),
                             Message.make("ran over the {seconds} s limit and was interrupted", seconds=timeout)))
        else:
            error = errors[0]
            outcomes.append((where, "error", is_test(cell), f"{error.ename}: {first_line(error.evalue or error.ename)}"))
    return issues_from_cells(outcomes, name)


def issues_from_cells(outcomes, notebook=None):
    """The remarks both graders give on how the cells ran, in the same words, as Messages.

    ``outcomes``: (where, "timeout" or "error", is a test cell, text) per cell that did not end well, in
    order; for a timeout the text (a Message, or text) says what happened, for an error it is
    "ExceptionName: message". ``notebook``: the notebook's name, where the grader names it.
    Every timeout is reported; of the errors outside test cells (a failed test just costs its points) the
    first is reported and the later ones counted.
    """
    issues, raised, later = [], False, 0
    for where, status, test, text in outcomes:
        if status == "timeout":
            issues.append(Message.make("{where} {what}", where=where, what=message(text)))
        elif status != "error" or test:
            continue
        elif raised:
            later += 1
        elif text.startswith("NotImplementedError"):
            raised = True
            issues.append(Message.make("{where} raised NotImplementedError (left unanswered?)", where=where))
        else:
            raised = True
            issues.append(Message.make("{where} raised {error}", where=where, error=text))
    if later:
        issues.append(Message.make("{count} later non-test cell(s) of {notebook} also raised", count=later,
                                   notebook=notebook) if notebook else
                      Message.make("{count} later non-test cell(s) also raised", count=later))
    return issues


def is_test(cell):
    return bool(is_grade(cell)) and not is_solution(cell)

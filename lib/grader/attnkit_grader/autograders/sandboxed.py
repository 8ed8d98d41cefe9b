"""The sandboxed, parallel, resumable autograder: :class:`SandboxAutograder`.

For each submission (one student's notebook of one assignment), in a pool of worker threads of the
grading process, each driving its own sandbox under its own uid (:mod:`..isolation.slots`):

1. a scratch folder under the grader's output folder (``OUTPUT/work/ASSIGNMENT/STUDENT``) gets a copy
   of the notebook as handed in, with every read-only cell (setup and test cells) put back as the
   RELEASE has it (a deleted one is put back in its place, a retyped one retyped back), so the sandbox
   never sees a hidden test, source/ or a reference solution;
2. the trusted inputs ``registry.make_inputs(assignment, seed)``, with a seed derived from the course
   id, the assignment and the student (so a parallel and a sequential run give the same grades);
3. ``notebook_run.run_notebook`` runs the cells, then the probes, in bubblewrap with resource limits:
   started by this process (as root, or in a user namespace), or, where a door is configured (the course's
   hub: ``attnkit`` there runs as the instructor), by a root door process of the worker's own, asked with
   data only (:mod:`..isolation.door`). A run that dies in a cell (crash, wall clock, output flood, a cell
   ignoring its timeout) is run again without that cell (at most ``retries`` times), so the rest of the
   notebook still counts.

Then, in the main thread only: the judge decides every check from the probe outputs
(``judges.judge``), the feedback page is written, the scores go into the gradebook through nbgrader's
API (``auto_score`` of each grade cell; manual scores are kept, written answers await the
formgrader as with nbgrader), nbgrader's autograded copy is written for the formgrader
(:mod:`..autograded_notebook`: the restored notebook, the text its cells printed in the sandbox, the verdicts
under the test cells), and the submission's :class:`~attnkit_grader.results.SubmissionResult` is appended to
the journal (:mod:`..journal`). A submission already in the journal (same student, assignment, notebook
sha256 and grader) is not run again: its recorded result (and the output kept for its copy) is written
back, so a batch killed with ``kill -9`` resumes with the same grades and the same copies.

Nothing is written outside the output folder but the gradebook rows and the autograded/ copies (and
stale nbgrader feedback/ pages) of the graded submissions; submitted/ is only read.
"""

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import shutil
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.utils import parse_utc
import torch
from sqlalchemy.exc import SAWarning

import attnkit
import attnkit_sandbox
from attnkit_sandbox import channel
from attnkit_sandbox.cells import read_cells

from .. import authoring, autograded_notebook, feedback, files, judging, locks, registry
from ..files import remove
from ..isolation import bwrap, door, notebook_run
from ..isolation import warm as warm_start
from ..isolation.limits import Limits, worker_uid
from ..late import apply_late_penalty
from ..journal import Journal
from ..judging import engine as judges
from ..canary import sing
from ..release_cells import Release
from ..precheck import Issue
from ..results import Message, SubmissionResult, message
from .base import Autograder, failed
from .pool import Pool
from .runs import cell_issues, dying_cell, names_cell, plain_cells

log = logging.getLogger(__name__)

GRADER_VERSION = 4                # 4: journal lines are result records (attnkit_grader.results)
RETRIES = 2                       # runs again without a cell that killed the run, at most this often
KEY_VARIABLE = "ATTNKIT_GRADING_KEY"   # optional secret mixed into the input seeds


def derive_seed(course_id, assignment, student, key=""):
    """The probe-input seed of one submission: a 64-bit integer from sha256 (same in every run)."""
    text = "\x1f".join(["attnkit-grading-seed", str(course_id), str(assignment), str(student), str(key)])
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


# --- the release: what every submission is graded against ----------------------------------------------

def verdict_code(assignment):
    """Every source file that can change a verdict of ``assignment``, as (sorted) paths: the student package
    (the probes use its helpers), the sandbox package (runner, channel, probe machinery), the judging
    engine, the authoring API and the assignment's whole folder (probes, reference, checks, inputs), as
    (label, path) pairs
    sorted by label. A journal entry is reused only while all of them are byte for byte the same."""
    folders = [Path(attnkit.__file__).parent, Path(attnkit_sandbox.__file__).parent,
               Path(judging.__file__).parent, registry.get(assignment).folder]
    return sorted([(f"{folder.name}/{path.relative_to(folder)}", path) for folder in folders
                   for path in folder.rglob("*.py") if "__pycache__" not in path.parts]
                  + [("attnkit_grader/authoring.py", Path(authoring.__file__))])


@dataclass
class Plan:
    """One job, read and keyed before anything runs."""

    job: object
    release: Release
    path: Path                    # the notebook as handed in (only read)
    sha256: str                   # of its bytes when the batch started
    seed: int
    timestamp: object = None


@dataclass
class Run:
    """What a worker brings back from the sandbox (all of it read as untrusted)."""

    report: dict
    reason: str
    started: bool
    outputs: dict
    errors: dict
    inputs: dict
    seconds: float
    answered: dict = field(default_factory=dict)    # {grade_id: True} answer cells changed since the release
    skipped: list = field(default_factory=list)     # [(cell number, why the run ended there)]
    stderr: str = ""
    cpu_seconds: float = None                       # of its sandboxes' processes, from their cgroups (all tries)
    warm: bool = False                              # forked from a warm zygote


def runnable(submission, released):
    """True when every released notebook is in ``submission`` with a list of cells the runner can run."""
    names = [path.name for path in Path(released).glob("*.ipynb")]
    return bool(names) and all((submission / name).is_file() and read_cells(submission / name)[2] is None
                               for name in names)


class SandboxAutograder(Pool, Autograder):
    """Grades each job in a bubblewrap sandbox; verdicts from the trusted judge; the parent writes.

    ``output_dir``: the grader's own folder (scratch, journal, feedback, logs); ``workers``: size of the
    pool (default: the number of CPU cores); ``fresh``: ignore the journal of earlier runs;
    ``show_tests``: put the release's visible test cells in the feedback; ``key``: a secret mixed into
    the input seeds (default: $ATTNKIT_GRADING_KEY, else none); ``warm``: fork each run from a worker's warm
    zygote (:mod:`..isolation.warm`; default: where this process is root), False for a fresh interpreter
    per run (a door decides for itself).
    """

    local = True                  # its sandboxes start on this machine (False: a subclass's start elsewhere)

    def __init__(self, course, output_dir, workers=None, limits=None, cell_timeout=None, fresh=False,
                 show_tests=False, key=None, retries=RETRIES, door_program=None, warm=None, canary=True):
        self.door_program = door_program or door.configured()
        if self.door_program is None and self.local:
            bwrap.check_available()
        self.course = course
        self.output_dir = Path(output_dir).resolve()
        self.workers = max(1, int(workers or os.cpu_count() or 1))
        self.limits = limits or Limits()
        self.cell_timeout = float(cell_timeout if cell_timeout is not None else course.timeout)
        self.show_tests = show_tests
        self.key = key if key is not None else os.environ.get(KEY_VARIABLE, "")
        self.retries = retries
        self.work_dir = self.output_dir / "work"
        self.feedback_dir = self.output_dir / "feedback"
        self.logs_dir = self.output_dir / "logs"
        self.journal = Journal(self.output_dir / "journal.jsonl")
        self.fresh = fresh                # the journal is set aside only once the canary has passed
        self.canary = canary
        self.canary_summary = None
        self.claimed = None               # [(slot, lock or None)] held from the canary to the batch's end
        self.releases = {}
        self.box = None
        self.warm = warm_start.available() if warm is None else bool(warm)
        self.sessions = {}           # slot -> its door session or its warm sandbox
        self.gradebook = None        # one connection for the batch, in the main thread only

    # --- setting up --------------------------------------------------------------------------------------
    def release(self, assignment):
        if assignment not in self.releases:
            self.releases[assignment] = Release.read(self.course, assignment)
        return self.releases[assignment]

    def fingerprint(self, release):
        """What the grades of a submission depend on besides the notebook itself, the environment included (its
        lock, every installed package, the torch and numpy the sandboxes import: :func:`attnkit_grader.locks.identity`)."""
        digest = hashlib.sha256()
        parts = [str(GRADER_VERSION), self.course.course_id, release.assignment, release.name,
                 hashlib.sha256(self.key.encode()).hexdigest(), repr(self.cell_timeout), repr(self.retries),
                 repr(dataclasses.replace(self.limits, uid=0)), json.dumps(locks.identity(), sort_keys=True)]
        for part in parts:
            digest.update(part.encode() + b"\0")
        digest.update(release.data)
        for label, path in verdict_code(release.assignment):
            digest.update(label.encode() + b"\0" + path.read_bytes())
        return digest.hexdigest()[:20]

    def plan(self, job):
        release = self.release(job.assignment)
        folder = Path(job.folder) if getattr(job, "folder", None) else \
            self.course.assignment_dir("submitted", job.assignment, job.student)
        path = folder / f"{release.name}.ipynb"
        if os.path.realpath(path) != os.path.abspath(path):
            # e.g. a link to source/ASSIGNMENT/ASSIGNMENT.ipynb: the instructor's notebook would run as theirs
            raise OSError(f"{path.name} is a symbolic link, or lies in a linked folder; hand in the file itself")
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        sha256 = digest.hexdigest()
        return Plan(job, release, path, sha256,
                    derive_seed(self.course.course_id, job.assignment, job.student, self.key),
                    read_timestamp(folder))

    def prepare(self, assignments):
        """Read each release, then sing the canary (:mod:`..canary`; CanaryFailed stops the batch before
        anything is written); then, with ``fresh``, set the journal aside."""
        for assignment in assignments:
            self.release(assignment)
        if self.canary and assignments:
            try:
                with judging_threads():
                    self.canary_summary = self.sing(assignments)
            except BaseException:
                self.close()
                raise
        if self.fresh:
            self.journal.start_afresh()

    def sing(self, assignments):
        """The canary, in this batch's pool (:func:`..canary.sing`): its line, or CanaryFailed."""
        return sing(self, assignments)

    def triage(self, issues, submission, released):
        """A notebook nbformat rejects is still graded when its cells can be read: its cells run as they are,
        and the reason becomes a remark."""
        if any(issue.fatal for issue in issues) and runnable(Path(submission), released):
            return [Issue(f"{issue.reason} (graded anyway: its cells could be read)") if issue.fatal else issue
                    for issue in issues]
        return issues

    def forget(self, assignment, student):
        folder = self.feedback_dir / student / assignment
        if folder.is_dir():
            shutil.rmtree(folder)
        (self.logs_dir / f"{assignment}--{student}.run.json").unlink(missing_ok=True)

    # --- the batch -------------------------------------------------------------------------------------------
    def run(self, jobs):
        return self.results(jobs)

    def results(self, jobs, before_writing=None):
        try:
            with judging_threads():
                yield from self.batch(jobs, before_writing)
        finally:
            self.close()
            if self.gradebook is not None:
                self.gradebook.close()
                self.gradebook = None

    def batch(self, jobs, before_writing=None):
        """Plan each job and hand it to the pool at once (its sandbox starts while the next ones are planned);
        a job the journal holds is published from it instead, in this thread, while the sandboxes run.
        ``before_writing()`` is called once every job is handed over, before anything is written."""
        grader, ready = {}, []          # {assignment: fingerprint}; [what gives a (result, log text)] between runs

        def fresh():
            for job in jobs:
                try:
                    plan = self.plan(job)
                except OSError as error:               # vanished or unreadable since the pre-check
                    unread = failed(job, Message.make("the notebook could not be read: {error}",
                                                      error=channel.clip_message(error)))
                    ready.append(lambda unread=unread: (unread, ""))
                    continue
                if job.assignment not in grader:
                    grader[job.assignment] = self.fingerprint(plan.release)
                recorded = self.journal.find(job.student, job.assignment, plan.sha256, grader[job.assignment])
                if recorded is None:
                    yield plan
                else:
                    ready.append(lambda plan=plan, recorded=recorded: self.publish(plan, recorded, resumed=True))
            if before_writing is not None:
                before_writing()

        def drained():
            while ready:
                yield ready.pop(0)()

        for plan, done, error in self.in_pool(fresh(), len(jobs)):
            yield from drained()
            if error is not None:            # one submission's trouble never ends the batch
                log.error("grading %s / %s failed", plan.job.student, plan.job.assignment, exc_info=error)
                yield failed(plan.job, Message.make("the grader failed: {error}: {message}",
                                                    error=type(error).__name__, message=str(error))), ""
                continue
            if not done.started:
                yield failed(plan.job, Message.make("not graded: {reason}", reason=done.reason),
                             done.seconds), done.stderr
                continue
            try:
                decided = self.decide(plan, done, grader[plan.job.assignment])
            except Exception as error:   # noqa: BLE001 - e.g. a judge that chokes on odd outputs
                log.exception("judging %s / %s failed", plan.job.student, plan.job.assignment)
                yield failed(plan.job, Message.make("the judge failed: {error}: {message}",
                                                    error=type(error).__name__, message=str(error)),
                             done.seconds), done.stderr
                continue
            published = self.publish(plan, decided, resumed=False)
            self.journal.append(decided)
            yield published
        yield from drained()

    def run_one(self, plan, slot, launcher=None):
        """In a worker thread: the notebook in a sandbox (again without a cell that killed the run), started by
        worker ``slot``'s launcher (or ``launcher``)."""
        job, release = plan.job, plan.release
        start = time.perf_counter()
        limits = dataclasses.replace(self.limits, uid=worker_uid(slot))
        scratch = self.work_dir / job.assignment / job.student
        prepared = self.work_dir / job.assignment / f"{job.student}.ipynb"
        remove(scratch)
        scratch.mkdir(parents=True)
        data = plan.path.read_bytes()
        if hashlib.sha256(data).hexdigest() != plan.sha256:
            raise RuntimeError(f"{plan.path} changed while the batch was running; grade it again")
        prepared.write_bytes(release.restored(data))
        inputs = registry.make_inputs(job.assignment, plan.seed)
        skipped, cpu = [], []
        try:
            while True:
                result = notebook_run.run_notebook(launcher or self.launcher(slot), prepared, scratch,
                                                   assignment=job.assignment, inputs=inputs, limits=limits,
                                                   expected=release.expected,
                                                   cell_timeout=self.cell_timeout, skip=[n for n, _ in skipped],
                                                   language=feedback.language(job.folder))
                cpu.append(result.result.cpu_seconds)
                cell = dying_cell(result)
                if cell is None or len(skipped) >= self.retries or not result.result.started:
                    break
                skipped.append((cell, result.reason or Message.make("the run ended there")))
            outputs, errors = result.outputs, result.errors
            self.keep_report(job, result.report)
        finally:
            remove(scratch)
            prepared.unlink(missing_ok=True)
        stderr = result.result.stderr.decode("utf-8", "replace")[-4000:]
        return Run(result.report, result.reason, result.result.started, outputs, errors, inputs,
                   time.perf_counter() - start, release.answers(data), skipped, stderr,
                   round(sum(cpu), 3) if None not in cpu else None, result.result.warm)

    def keep_report(self, job, report):
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        text = json.dumps(report, indent=1, sort_keys=True, default=repr)
        (self.logs_dir / f"{job.assignment}--{job.student}.run.json").write_text(text + "\n", encoding="utf-8")

    # --- in the main thread: verdict, feedback, gradebook --------------------------------------------------------
    def decide(self, plan, done, grader):
        """The SubmissionResult of a finished run: the judge's checks and the score of each graded cell, the
        remarks on the run, and what the journal keys it by and the autograded copy is rebuilt from."""
        job, release = plan.job, plan.release
        verdicts = judges.judge(registry.get(job.assignment), done.inputs, done.outputs, done.errors)
        answered = done.answered
        cells = {}
        for grade_id, blank in release.graded.items():
            if blank.kind == "test":
                checks = tuple(verdicts.get(grade_id, []))
                cells[grade_id] = dataclasses.replace(blank, score=float(sum(c.points for c in checks)), checks=checks)
            else:
                cells[grade_id] = dataclasses.replace(blank, score=None if answered.get(grade_id) else 0.0,
                                                      answered=bool(answered.get(grade_id)))
        issues = []
        for number, why in done.skipped:
            label = notebook_run.cell_message(number, self.grade_id_at(done.report, number))
            issues.append(Message.make("{why}; graded again without that cell", why=why) if names_cell(why, number)
                          else Message.make("{cell}: {why}; graded again without that cell", cell=label, why=why))
        reason = message(done.reason)
        if reason:
            issues.append(reason)
        issues += [i for i in cell_issues(done.report, release, done.reason) if i not in issues]
        return SubmissionResult(job.student, job.assignment, "graded", issues, cells, round(done.seconds, 3),
                                sha256=plan.sha256, grader=grader, notebook=release.name, seed=str(plan.seed),
                                reason=reason,
                                run={"cells": plain_cells(done.report), "answered": answered,
                                     "outputs": autograded_notebook.captured(done.report, done.skipped,
                                                                             feedback.language(job.folder)),
                                     "cpu_seconds": done.cpu_seconds, "warm": done.warm})

    @staticmethod
    def grade_id_at(report, number):
        return next((c["grade_id"] for c in plain_cells(report) if c["index"] == number and c["grade_id"]), None)

    def publish(self, plan, decided, resumed):
        """The feedback page, the gradebook, then the autograded copy; (the result the pipeline records, its log).

        ``decided``: the result as the journal holds it; the feedback page also shows the pre-check's remarks."""
        job, release = plan.job, plan.release
        shown = decided.evolve(issues=list(job.remarks))
        shown.add_issues(decided.issues)
        page = feedback.page(shown, release, self.show_tests, language=feedback.language(job.folder))
        path = files.write(self.feedback_dir / job.student / job.assignment / f"{release.name}.html", page)
        self.write_gradebook(plan, decided)
        trouble = self.write_autograded(plan, decided)
        result = decided.evolve(issues=list(decided.issues) + trouble, feedback=str(path), resumed=resumed)
        text = "\n".join([f"{job.student} / {job.assignment}: sandboxed run, seed {decided.seed}, "
                          f"{decided.seconds:.1f} s" + (" (from the journal)" if resumed else "")]
                         + [f"  {issue}" for issue in decided.issues]
                         + [f"  {grade_id}: {'passed' if c.passed else 'FAILED'} {c.points:g}/{c.max_points:g} "
                            f"[{c.kind}] {c.name}" + (f": {c.text()}" if c.message else "")
                            for grade_id, checks in decided.checked.items() for c in checks]) + "\n"
        return result, text

    def write_autograded(self, plan, result):
        """nbgrader's autograded/STUDENT/ASSIGNMENT/NAME.ipynb for the formgrader (see :mod:`..autograded_notebook`).

        A changed copy makes an nbgrader feedback/ page of the submission stale: it is removed (run
        ``nbgrader generate_feedback`` again after hand grading). Returns [] or the one issue saying why
        no copy could be written (then none is left: the formgrader must not show an old one).
        """
        job, release = plan.job, plan.release
        target = autograded_notebook.path_of(self.course, job.assignment, job.student, release.name)
        try:
            data = plan.path.read_bytes()
            if hashlib.sha256(data).hexdigest() != plan.sha256:
                raise ValueError(f"{plan.path} changed while the batch was running")
            copy = autograded_notebook.notebook(release, data, result, feedback.language(job.folder))
            if autograded_notebook.write(target, copy):
                remove(self.course.assignment_dir("feedback", job.assignment, job.student))
            return []
        except Exception as error:  # noqa: BLE001 - the grades stand; only the formgrader copy is missing
            log.warning("%s / %s: no autograded copy: %s", job.student, job.assignment, error)
            remove(target)
            return [Message.make("no autograded copy for the formgrader: {error}: {message}",
                                 error=type(error).__name__, message=channel.clip_message(error))]

    def write_gradebook(self, plan, result):
        """auto_score of every grade cell (manual scores are kept), nbgrader's 'No response.' comments and
        late penalties (timestamp.txt handed in with the notebook, as nbgrader reads it)."""
        job = plan.job
        extra = {"timestamp": plan.timestamp} if plan.timestamp else {}
        answered, scores = result.run.get("answered", {}), result.scores()
        if self.gradebook is None:
            self.gradebook = self.course.gradebook()
        gradebook = self.gradebook
        with warnings.catch_warnings(), rolled_back_on_error(gradebook):
            # nbgrader 0.9.6 + SQLAlchemy 2 warn (harmlessly) when a submission is first created
            warnings.filterwarnings("ignore", "Object of type .* not in session", SAWarning)
            submission = gradebook.update_or_create_submission(job.assignment, job.student, **extra)
            for notebook in submission.notebooks:
                if notebook.name != plan.release.name:
                    continue
                for grade in notebook.grades:
                    if grade.name in scores:
                        grade.auto_score = scores[grade.name]
                        grade.needs_manual_grade = grade.manual_score is not None or grade.auto_score is None
                for comment in notebook.comments:
                    if comment.name in answered:
                        comment.auto_comment = None if answered[comment.name] else "No response."
            gradebook.db.commit()
            apply_late_penalty(self.course.config, gradebook, submission, job.student)


@contextlib.contextmanager
def judging_threads():
    """torch on one thread while the judge works beside the sandboxes (the canary's and the batch's): its tensors
    are small, and torch's default of one OpenMP thread per core spins between operations and took a core's worth
    of CPU from the sandboxes (4x this process's CPU)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@contextlib.contextmanager
def rolled_back_on_error(gradebook):
    """The batch's gradebook connection stays usable after a failed write (its transaction rolled back)."""
    try:
        yield
    except BaseException:
        gradebook.db.rollback()
        raise


def read_timestamp(folder):
    """The submission time nbgrader would record (timestamp.txt handed in with it), or None."""
    path = Path(folder) / "timestamp.txt"
    try:
        text = path.read_text(encoding="utf-8").strip()
        return parse_utc(text) if text else None
    except (OSError, ValueError, OverflowError):
        return None
    except Exception:  # noqa: BLE001 - dateutil raises several types for junk
        return None


__all__ = ["SandboxAutograder", "derive_seed"]

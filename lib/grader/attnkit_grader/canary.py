"""The canary: before a batch, notebooks whose scores are known are graded the batch's own way, or no batch.

A grading environment can break without a word: a module missing from the sandbox, a package changed
under the interpreter, another CPU kernel adding numbers in another order, a default changed (torch's
dtype). Every submission would then be graded wrong, and the gradebook would hold it. So before the
first student, the sandboxed grader (:mod:`.autograders.sandboxed`) grades, for each assignment of the
batch, through the very same sandboxes, limits, judge and inputs as the students' work:

- the **solved release**: the released notebook answered with the assignment's reference solution, which
  must earn every test cell's points;
- one **catalogued mistake**: the released notebook answered with the first bug of the assignment's
  catalogue (its manifest's ``bugs``), which must keep exactly the points the catalogue states; an
  assignment with no catalogued mistake uses the **blank release** instead, which must earn 0.

Both are built here, in the grading process, from the release and the manifest (the kit's own code); the
expected points come from the manifest alone. If a test cell of either scores otherwise, the batch stops
before anything is written (:class:`CanaryFailed`, whose message names each check that moved and the likely
causes). On a Dask cluster each worker sings its own canary before it takes a student's work
(:mod:`.autograders.cluster`).
"""

import copy
import json
import logging
import re
import time
from dataclasses import dataclass, field

from .autograders.base import Job
from .files import remove
from . import registry
from .judging import variants

__all__ = ["Case", "CanaryFailed", "Outcome", "cases", "check", "failure_text", "sing", "sing_on"]

log = logging.getLogger(__name__)

STUDENT = "_canary"               # the canary's pseudo-students are STUDENT-solved, STUDENT-mistake
FIRST_ONLY = "# (answered in the first answer cell)"
MISSING_MODULE = re.compile(r"(ModuleNotFoundError|ImportError)\b")


class CanaryFailed(RuntimeError):
    """The canary did not score as its manifest says: nothing of the batch was graded or written."""


@dataclass(frozen=True)
class Case:
    """One canary notebook: ``label`` (what it is), the notebook's bytes, and the points ``expected`` in each
    test cell, from the manifest."""

    assignment: str
    role: str                     # "solved" or "mistake"
    label: str
    notebook: bytes
    expected: dict                # {grade_id: points}

    @property
    def student(self):
        return f"{STUDENT}-{self.role}"


@dataclass
class Outcome:
    """What the batch's grader gave a :class:`Case`: ``result`` (a SubmissionResult, or None with ``error``
    when the run or the judge failed) and where it differs from the expected points."""

    case: Case
    result: object = None
    error: str = None
    moved: list = field(default_factory=list)     # [(grade_id, expected, got, [failed check texts])]

    @property
    def passed(self):
        return self.error is None and not self.moved


def answered(release, source):
    """The released notebook (``release.notebook``) with ``source`` in its first code answer cell and the
    other code answer cells pointing there, as bytes: what a student holding that code would hand in."""
    notebook = copy.deepcopy(release.notebook)
    first = True
    for cell in notebook["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.get("cell_type") == "code" and meta.get("solution"):
            cell["source"] = source if first else FIRST_ONLY
            first = False
    return json.dumps(notebook).encode("utf-8")


def cases(release):
    """The canary's two :class:`Case` of the assignment whose :class:`~.release_cells.Release` is ``release``."""
    manifest = registry.get(release.assignment)
    full = registry.max_points(release.assignment)
    solved = Case(release.assignment, "solved", "the solved release (reference solution)",
                  answered(release, variants.source_of(manifest)), dict(full))
    if manifest.bugs:
        bug = manifest.bugs[0]
        mistake = Case(release.assignment, "mistake", f"the catalogued mistake {bug.name!r}",
                       answered(release, variants.source_of(manifest, bug)), {**full, **bug.points})
    else:
        mistake = Case(release.assignment, "mistake", "the blank release", release.data,
                       {grade_id: 0.0 for grade_id in full})
    return [solved, mistake]


def check(case, result=None, error=None):
    """The :class:`Outcome` of ``case`` given the grader's ``result`` (or the ``error`` that stopped it)."""
    outcome = Outcome(case, result, error)
    if error is not None:
        return outcome
    if result.status != "graded":
        outcome.error = "; ".join(result.issue_texts()) or result.status
        return outcome
    scores = result.scores()
    for grade_id, points in sorted(case.expected.items()):
        got = scores.get(grade_id)
        if got is None or abs(got - points) > 1e-9:
            checks = result.cells[grade_id].checks if grade_id in result.cells else ()
            failed = [f"{c.name}: {c.text()}" if c.message else c.name       # the values' checks first
                      for c in sorted(checks, key=lambda c: c.kind != "values") if not c.passed]
            outcome.moved.append((grade_id, points, got, failed))
    return outcome


def causes(outcomes):
    """The likely causes of failed ``outcomes``, most specific first, as sentences."""
    found = []
    texts = " ".join(str(i) for o in outcomes if o.result is not None for i in o.result.issue_texts())
    texts += " ".join(o.error or "" for o in outcomes)
    if MISSING_MODULE.search(texts):
        found.append("a module the notebooks or the probes import is missing from the sandbox's environment "
                     "(an uninstalled package, or one the staged packages lost)")
    if any(o.error for o in outcomes) and not found:
        found.append("the sandbox did not run the notebook to its end (see the runner's log of the canary in "
                     "the logs folder)")
    if any(o.moved for o in outcomes) and not found:
        found.append("a changed package (torch, numpy: compare `pip freeze` with the course's lock), a different "
                     "CPU kernel (another machine, ATEN_CPU_CAPABILITY, MKL_ENABLE_INSTRUCTIONS, the thread "
                     "count) or a changed default (torch's default dtype) gives other numbers; or the grader's "
                     "checks, reference or catalogue changed without the release")
    return found


def failure_text(outcomes):
    """What the instructor reads when the canary fails: each check that moved, then the likely causes."""
    lines = ["the canary failed: graded the batch's own way, notebooks whose scores are known scored "
             "otherwise, so no submission was graded and nothing was written (gradebook, journal, reports)"]
    for outcome in outcomes:
        if outcome.passed:
            continue
        case = outcome.case
        lines.append(f"  {case.assignment}, {case.label}:")
        if outcome.error:
            lines.append(f"    not graded: {outcome.error}")
        if outcome.result is not None:
            lines += [f"    remark: {text}" for text in outcome.result.issue_texts()[:3]]
        for grade_id, expected, got, failed in outcome.moved:
            got_text = "nothing" if got is None else f"{got:g}"
            lines.append(f"    {grade_id}: {got_text} points, expected {expected:g}")
            lines += [f"      failed: {text}" for text in failed[:2]]
    lines.append("likely causes:")
    lines += [f"  - {cause}" for cause in causes([o for o in outcomes if not o.passed])]
    return "\n".join(lines)


def summary(outcomes, seconds):
    """One line for a canary that passed: what scored what, and its cost."""
    parts = [f"{o.case.assignment} {o.case.role} {sum(o.case.expected.values()):g}" for o in outcomes]
    return f"canary passed in {seconds:.1f} s ({', '.join(parts)} points, as expected)"


def planned(grader, assignments, folder, tag=""):
    """[(plan, case)] of the canary of each of ``assignments``, the catalogued mistakes first, its notebooks written
    under ``folder`` (the pseudo-students' names end with ``tag``, so that canaries graded at once never share a
    scratch folder)."""
    plans = []
    for assignment in assignments:
        release = grader.release(assignment)
        for case in cases(release):
            where = folder / assignment / (case.student + tag)
            where.mkdir(parents=True, exist_ok=True)
            (where / f"{release.name}.ipynb").write_bytes(case.notebook)
            plans.append((grader.plan(Job(assignment, case.student + tag, where)), case))
    # The mistakes first: judging one re-runs the catalogue to name it (seconds), which then overlaps the solved
    # releases' sandboxes instead of following the last of them.
    return sorted(plans, key=lambda pair: pair[1].role != "mistake")


def judged(grader, plan, case, done=None, error=None):
    """The :class:`Outcome` of one canary run: ``done`` (the grader's Run) or the ``error`` it raised."""
    if error is not None:
        return check(case, error=f"{type(error).__name__}: {error}")
    if not done.started:
        return check(case, error=f"the sandbox did not start: {done.reason}")
    return check(case, grader.decide(plan, done, "canary"))


def verdict(outcomes, assignments, seconds):
    """The line saying the canary passed (and its cost), else :class:`CanaryFailed` saying what moved."""
    outcomes.sort(key=lambda o: (assignments.index(o.case.assignment), o.case.role != "solved"))
    if not all(o.passed for o in outcomes):
        raise CanaryFailed(failure_text(outcomes) + f"\n(the canary took {seconds:.1f} s)")
    return summary(outcomes, seconds)


def sing(grader, assignments):
    """Grade the canary of each of ``assignments`` with ``grader`` (a SandboxAutograder: its pool, its
    sandboxes, its judge); return the line saying it passed and its cost, else raise :class:`CanaryFailed`.
    Nothing is written but the runner's logs of the canary and its scratch folder (removed)."""
    start = time.perf_counter()
    folder = grader.work_dir / "canary"
    try:
        plans = dict((id(plan), (plan, case)) for plan, case in planned(grader, assignments, folder))
        outcomes = [judged(grader, plan, plans[id(plan)][1], done, error)
                    for plan, done, error in grader.in_pool([plan for plan, _ in plans.values()])]
    finally:
        remove(folder)
    text = verdict(outcomes, assignments, time.perf_counter() - start)
    log.debug("%s", text)                 # the command prints it once, with the run (GradingRun.canary)
    return text


def sing_on(grader, assignments, launcher, tag):
    """The canary graded one run after another by ``launcher`` (a cluster's worker, pinned), in this thread:
    the line saying it passed, else :class:`CanaryFailed`."""
    start = time.perf_counter()
    folder = grader.work_dir / "canary" / tag
    try:
        outcomes = []
        for plan, case in planned(grader, assignments, folder, f"-{tag}"):
            try:
                outcomes.append(judged(grader, plan, case, grader.run_one(plan, 0, launcher)))
            except Exception as error:  # noqa: BLE001 - a canary that could not run has failed
                outcomes.append(judged(grader, plan, case, error=error))
    finally:
        remove(folder)
    return verdict(outcomes, assignments, time.perf_counter() - start)

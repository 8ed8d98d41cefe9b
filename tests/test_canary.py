"""The canary (attnkit_grader.canary): before any student, the solved release and a catalogued mistake are graded
the batch's own way, and a batch graded under a broken environment is refused with nothing written.

The faults are planted in the sandbox's environment itself (tests/planted_faults.py: a sitecustomize.py in the
staged packages, which every sandboxed interpreter runs at start-up): a module the grading needs hidden, torch's
softmax off by 1e-3, torch's default dtype changed. Each batch must stop before the first student, with the
gradebook, the journal, the autograded copies and the reports as they were. None of these tests turns the
canary off.
"""

import dataclasses
import hashlib
import json
import shutil
import sys

import pytest

import planted_faults
from attnkit_grader import canary, cli, pipeline
from attnkit_grader.course import Course
from attnkit_grader.isolation import bwrap, door, staging
from attnkit_grader.isolation.notebook_run import RunnerJob
from attnkit_grader import registry
from attnkit_grader.release_cells import Release
from attnkit_grader.results import CellResult, CheckResult, SubmissionResult

from conftest import ROOT, copy_course

PS1, PS2 = "ps1_learnable_pe", "ps2_relative_pe"
CLASS = ROOT / "examples" / "example_class"


def course_with(tmp_path, students):
    """A copy of the course and a submissions folder holding the example class's ``students`` ({name: [assignment]})."""
    root = copy_course(tmp_path / "course")
    submissions = tmp_path / "submissions"
    for student, assignments in students.items():
        for assignment in assignments:
            shutil.copytree(CLASS / student / assignment, submissions / student / assignment)
    return root, submissions


def state_of(root):
    """sha256 of every file the batch could write outside its scratch: the gradebook, the journal, submitted/,
    autograded/, feedback/ and the reports (the logs and the scratch folder left out)."""
    found = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if path.is_file() and relative.parts[:2] not in (("grades", "logs"), ("grades", "work")):
            found[str(relative)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


# --- what the canary grades and expects, from the manifest ---------------------------------------------------

def test_the_canary_expects_full_marks_of_the_solved_release_and_the_catalogues_points_of_its_first_mistake():
    release = Release.read(Course(ROOT), PS2)
    solved, mistake = canary.cases(release)
    manifest = registry.get(PS2)
    assert solved.expected == registry.max_points(PS2)
    assert mistake.expected == {**registry.max_points(PS2), **manifest.bugs[0].points}
    assert mistake.expected != solved.expected                    # the mistake costs points somewhere
    assert manifest.bugs[0].name in mistake.label
    answers = [c["source"] for c in json.loads(solved.notebook)["cells"]
               if c.get("metadata", {}).get("nbgrader", {}).get("solution") and c["cell_type"] == "code"]
    assert "def relative_position_index" in answers[0] and set(answers[1:]) == {canary.FIRST_ONLY}


def test_without_a_catalogued_mistake_the_canary_grades_the_blank_release_expecting_0(monkeypatch):
    manifest = dataclasses.replace(registry.get(PS1), bugs=())
    monkeypatch.setattr(registry, "get", lambda name: manifest if name == PS1 else registry._load(name))
    release = Release.read(Course(ROOT), PS1)
    _, blank = canary.cases(release)
    assert blank.notebook == release.data and set(blank.expected.values()) == {0.0}
    assert blank.label == "the blank release"


def test_a_check_that_moved_is_named_with_its_points_and_what_failed():
    case = canary.Case(PS1, "solved", "the solved release", b"{}", {"test_pe_table": 2.0, "test_pe_forward": 4.0})
    check = CheckResult("t1", "the table's values", 0.0, 2.0, False, "values", message=None)
    result = SubmissionResult("x", PS1, "graded", [], {"test_pe_table": CellResult("test_pe_table", "test", 2.0, 0.0,
                                                                                  (check,)),
                                                      "test_pe_forward": CellResult("test_pe_forward", "test", 4.0,
                                                                                    4.0, ())})
    outcome = canary.check(case, result)
    assert not outcome.passed and outcome.moved == [("test_pe_table", 2.0, 0.0, ["the table's values"])]
    text = canary.failure_text([outcome])
    assert "test_pe_table: 0 points, expected 2" in text and "changed package" in text and "CPU kernel" in text
    assert canary.check(case, dataclasses.replace(result, cells={**result.cells, "test_pe_table": CellResult(
        "test_pe_table", "test", 2.0, 2.0, ())})).passed


# --- a cluster's vetting, with a stand-in for the Dask client ------------------------------------------------------

class Answered:
    def __init__(self, answer):
        self.answer = answer

    def result(self):
        return self.answer

    def release(self):
        pass


class Scheduler:
    """A Dask client's stand-in: the connected workers ({address: name}), and each task answered by the first
    worker it may run on (or by ``impostor``)."""

    def __init__(self, workers):
        self.workers, self.submitted, self.impostor = dict(workers), [], None

    def scheduler_info(self, n_workers):
        return {"workers": {address: {"name": name} for address, name in self.workers.items()}}

    def submit(self, function, request, key, pure, workers=None, allow_other_workers=True):
        self.submitted.append((sorted(workers), allow_other_workers))
        name = self.impostor or self.workers[sorted(workers)[0]]
        return Answered((name, door.encode(door.result_frames(bwrap.SandboxResult(True, exit_code=0)))))


def test_a_worker_joining_mid_batch_is_vetted_before_it_takes_work_and_a_failing_one_is_left_out(tmp_path):
    from attnkit_grader.autograders.base import BatchInterrupted
    from attnkit_grader.cluster.launcher import ClusterError, ClusterLauncher

    (tmp_path / "notebook.ipynb").write_bytes(b"{}")
    vetted = []
    scheduler = Scheduler({"tls://a:1": "w-a"})
    launcher = ClusterLauncher(scheduler, door.CEILING, vet=lambda address, name: vetted.append(name) or name != "w-bad")
    launcher.launch(RunnerJob(PS1), tmp_path)
    assert vetted == ["w-a"] and scheduler.submitted[-1] == (["tls://a:1"], False)
    scheduler.workers.update({"tls://b:2": "w-bad", "tls://c:3": "w-c"})
    launcher.looked = None                                     # the scheduler is asked again
    launcher.launch(RunnerJob(PS1), tmp_path)
    assert vetted == ["w-a", "w-bad", "w-c"] and scheduler.submitted[-1] == (["tls://a:1", "tls://c:3"], False)
    assert launcher.refused == {"tls://b:2": "w-bad"}
    scheduler.impostor = "w-bad"                               # a reply from a worker that did not pass
    with pytest.raises(ClusterError, match="has not passed the canary"):
        launcher.launch(RunnerJob(PS1), tmp_path)
    scheduler.impostor = None
    del scheduler.workers["tls://a:1"], scheduler.workers["tls://c:3"]
    launcher.looked = None
    with pytest.raises(BatchInterrupted, match="no worker of the cluster passed the canary.*w-bad"):
        launcher.launch(RunnerJob(PS1), tmp_path)
    assert vetted == ["w-a", "w-bad", "w-c"]                  # each worker sings once


# --- a batch ---------------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_batch_starts_with_the_canary_and_says_its_cost(sandboxes, tmp_path, capsys):
    """attnkit grade prints the canary's line (what each notebook scored, its seconds) before the tables."""
    root, submissions = course_with(tmp_path, {"ref_solution": [PS1]})
    status = cli.main(["--root", str(root), "-q", "grade", PS1, "--submissions", str(submissions), "--workers", "2"])
    out = capsys.readouterr().out
    assert status == 0, out
    first = out.splitlines()[0]
    assert first.startswith("canary passed in ") and f"{PS1} solved 6" in first and f"{PS1} mistake" in first, first
    assert not (root / "grades" / "work" / "canary").exists()


@pytest.mark.slow
@pytest.mark.parametrize("fault, warm, says", [
    ("missing_module", False, ["No module named 'attnkit.checking'", "module the notebooks or the probes import"]),
    ("softmax_off", None, ["test_rel_attention: 0 points, expected 8", "off by up to 0.00", "changed package"]),
    ("float64", None, ["test_rel_attention: 0 points, expected 8", "dtype", "changed default (torch's default dtype)"]),
])
def test_a_batch_under_a_broken_environment_is_refused_and_nothing_is_written(sandboxes, tmp_path, monkeypatch, capsys,
                                                                               fault, warm, says):
    """A class graded once with a sound environment; the same class again (--fresh) under a planted fault: the
    canary refuses it (attnkit exits 4, naming the check that moved and the likely cause), and every file the
    batch writes is as the first batch left it, the gradebook and the journal included."""
    root, submissions = course_with(tmp_path, {"ref_solution": [PS2], "bug_no_clip": [PS2]})
    run = pipeline.grade(root, [PS2], submissions, workers=2, warm=warm)
    assert run.canary.startswith("canary passed") and all(r.status == "graded" for r in run.submissions.values())
    before = state_of(root)
    assert "gradebook.db" in before and "grades/journal.jsonl" in before
    monkeypatch.setattr(staging, "stage_packages", planted_faults.staged_with(fault))
    argv = ["--root", str(root), "-q", "grade", PS2, "--submissions", str(submissions), "--workers", "2", "--fresh"]
    if warm is False:
        argv.append("--cold-start")
    capsys.readouterr()
    status = cli.main(argv)
    message = capsys.readouterr().err
    assert status == 4, message
    assert message.startswith("attnkit: refused: the canary failed")
    assert all(words in message for words in says), message
    assert "the solved release" in message and "no submission was graded" in message
    assert state_of(root) == before
    assert not (root / "grades" / "work" / "canary").exists()


@pytest.mark.slow
def test_through_the_door_a_fault_in_the_doors_own_staging_refuses_the_batch(sandboxes, tmp_path, monkeypatch):
    """The door stages its own packages, so the canary goes through the door the batch uses: a fault planted in
    the door's staging (not this process's) refuses the batch, with the gradebook never made."""
    root, submissions = course_with(tmp_path, {"ref_solution": [PS2]})
    program = tmp_path / "attnkit-sandbox"
    code = (f"import sys; sys.path.insert(0, {str(ROOT / 'tests')!r}); import planted_faults; "
            f"from attnkit_grader.isolation import door, staging; "
            f"staging.stage_packages = planted_faults.staged_with('softmax_off'); "
            f"sys.exit(door.main(['--serve', '--state', {str(tmp_path / 'door-state')!r}]))")
    program.write_text(f"#!/bin/sh\nexec {sys.executable} -I -B -c \"{code}\"\n")
    program.chmod(0o755)
    monkeypatch.setenv(door.DOOR_VARIABLE, str(program))

    def no_local_sandbox(*args, **kwargs):
        raise AssertionError("the grading process started a sandbox itself")

    monkeypatch.setattr(bwrap.Sandbox, "run", no_local_sandbox)
    with pytest.raises(canary.CanaryFailed) as refused:
        pipeline.grade(root, [PS2], submissions, workers=2)
    assert "test_rel_attention: 0 points, expected 8" in str(refused.value)
    assert not (root / "gradebook.db").exists() and not (root / "submitted").exists()
    assert not (root / "grades" / "journal.jsonl").exists()


def faulty_worker(cluster, name, fault):
    """Add a worker to ``cluster`` whose own staging plants ``fault``: its interpreter runs a sitecustomize.py that
    swaps staging.stage_packages for planted_faults.staged_with, both copied into a folder the cluster's user can
    read (on PYTHONPATH for that worker only)."""
    folder = cluster.folder / f"fault-{name}"
    folder.mkdir(mode=0o755)
    shutil.copy2(planted_faults.__file__, folder / "planted_faults.py")       # the checkout may be closed to others
    (folder / "sitecustomize.py").write_text(
        f"import planted_faults\nfrom attnkit_grader.isolation import staging\n"
        f"staging.stage_packages = planted_faults.staged_with({fault!r})\n")
    for path in folder.iterdir():
        path.chmod(0o644)
    sound = cluster.environment
    cluster.environment = {**sound, "PYTHONPATH": str(folder)}
    try:
        return cluster.add_worker(name)
    finally:
        cluster.environment = sound


@pytest.mark.slow
def test_on_dask_each_worker_sings_the_canary_and_a_failing_one_is_named_and_left_out(sandboxes, tmp_path):
    """A cluster of a sound worker and one whose own staging plants a softmax off by 1e-3: the batch names the
    faulty worker, leaves it out and takes no result from it; with the sound worker gone, the next batch is
    refused (CanaryFailed: no worker passed) with nothing written."""
    from attnkit_grader.autograders.cluster import ClusterAutograder
    from attnkit_grader.cluster import local

    root, submissions = course_with(tmp_path, {"ref_solution": [PS2], "bug_no_clip": [PS2]})
    with local.LocalCluster(workers=1) as cluster:
        faulty_worker(cluster, "worker-faulty", "softmax_off")
        cluster.wait_for_workers(2)
        grader = ClusterAutograder(Course(root), root / "grades", cluster.address, cluster.certs)
        run = pipeline.grade(root, [PS2], submissions, autograder=grader)
        assert run.canary.startswith("canary passed on 1 of 2 workers (worker-0)"), run.canary
        assert run.canary.endswith("left out: worker-faulty"), run.canary
        assert all(r.status == "graded" for r in run.submissions.values())
        assert sum(run.table.points["ref_solution", PS2].values()) == 20
        assert +grader.cluster_launcher.ran == {"worker-0": 2}           # every student's run
        before = state_of(root)
        cluster.kill_worker(0)
        cluster.wait_for_workers(1)
        with pytest.raises(canary.CanaryFailed) as refused:
            pipeline.grade(root, [PS2], submissions, fresh=True, scheduler=cluster.address, certs=cluster.certs)
        message = str(refused.value)
        assert "on no worker of the cluster" in message and "worker worker-faulty:" in message, message
        assert "test_rel_attention: 0 points, expected 8" in message
        assert state_of(root) == before

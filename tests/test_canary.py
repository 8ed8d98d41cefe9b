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
from attnkit_grader.judging import registry
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

"""The sandboxed grader wired into `attnkit grade`: hostile submissions, one writer, resuming after kill -9.

Fast tests cover the journal, the progress bar, the seeds, the restored notebook and the feedback page,
and show that PS3's sdpa_patcher does fool a reference computed in its own process (plain nbgrader's
hidden tests). The slow ones grade, in a temporary copy of the course, the hostile class of
tests/fixtures/hostile_class (built by make_hostile_class.py) ONCE per session:

1. its PS1 controls (the honest parts alone) with ``--workers 1`` and with the default pool: same grades,
   and its PS3 controls alone (all collected into submitted/, where they stay as the attackers' classmates);
2. its attacks (PS1 and PS3) and broken notebooks, handed in as nbgrader's submitted/ folder and graded
   with the classmates in one batch, after which every file of the course but the grader's outputs
   (reports folder, the attacked submissions' autograded/ copies) is byte-identical, and the classmates'
   gradebook rows too;
3. each attack scores exactly its control's points (the documented exception: the self-reported ValueError
   flags, pe_too_long in PS1, rope_odd, attn_odd and bias_too_many in PS3, which gain what the raise
   earns where a values check of the same cell passes), each broken notebook gets its reason and its
   control's points;
4. a batch killed with SIGKILL once submissions are journalled resumes and ends with the same grades.

Sandboxed runs need bubblewrap (`apt-get install -y bubblewrap`): without it they are skipped, or fail
when the CI variable is set.
"""

import csv
import hashlib
import html
import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from markupsafe import escape
from conftest import Clock, copy_course

from attnkit_grader import CellResult, CheckResult, Course, Message, SubmissionResult, grade, locks
from attnkit_grader.autograders.sandboxed import cell_issues, derive_seed, plain_cells
from attnkit_grader.cli import parser
from attnkit_grader.feedback import page
from attnkit_grader.journal import Journal
from attnkit_grader import registry
from attnkit_grader.progress import INTERVAL, Progress, duration
from attnkit_grader.release_cells import Release

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = ROOT / "tests" / "fixtures" / "hostile_class"
EXAMPLE = ROOT / "examples" / "example_class"
EXPECTED = json.loads((HOSTILE / "expected.json").read_text())
PS1, PS3 = "ps1_learnable_pe", "ps3_rope"
assert EXPECTED["assignments"] == [PS1, PS3]
TESTS = ("test_pe_table", "test_pe_forward")
CELLS = {PS1: TESTS, PS3: ("test_rope", "test_rotary_attention", "test_slopes", "test_bias", "test_alibi_attention")}
# The one result a submission can forge: whether pe(X) raised ValueError past max_len is the submission's
# own report (see the docstring of attnkit_grader.judging.engine): a check of a property, worth a one-line raise.
FLAG_CHECK = "n = max_len positions work and a longer sequence raises ValueError"   # the one self-reported result
# PS3's: the ValueError outcomes of these probes, checks of properties in cells where partial's values pass
# (rope_odd, attn_odd) or where no values check passes (bias_too_many, alibi_bias not written).
PS3_FLAGS = ("rope_odd", "attn_odd", "bias_too_many")
OUTPUT_DIRS = ("grades", "grades_sequential", "grades_pool", "grades_ps3")


# --- fast: the parts, without a sandbox ---------------------------------------------------------------------

def journalled(student, sha256, score=1.0):
    check = CheckResult("c1", "values", score, 1.0, score == 1.0, "values",
                        None if score else Message.make("off by up to {worst:.3g}", worst=0.25), ("bug_a",))
    return SubmissionResult(student, "a", "graded", [Message.make("{count} later cell(s) raised", count=2)],
                            {"t": CellResult("t", "test", 1.0, score, (check,))}, 1.5, sha256=sha256, grader="g",
                            run={"outputs": {"3": [["stdout", "hi\n"]]}})


def test_journal_ignores_a_line_cut_short_and_appends_on_a_fresh_line(tmp_path):
    path = tmp_path / "journal.jsonl"
    journal = Journal(path)
    journal.append(journalled("ada", "1", score=0.0))
    with open(path, "ab") as handle:
        handle.write(b'{"student": "bo", "assignment": "a", "sha2')          # kill -9 in the middle of a line
    again = Journal(path)
    assert len(again) == 1 and again.find("ada", "a", "1", "g") == journalled("ada", "1", score=0.0)
    assert again.find("ada", "a", "1", "g").failures() == {"t": "off by up to 0.25"}
    assert again.find("ada", "a", "2", "g") is None and again.find("ada", "a", "1", "other grader") is None
    again.append(journalled("bo", "3"))
    assert len(Journal(path)) == 2
    again.start_afresh()
    assert len(Journal(path)) == 0 and (tmp_path / "journal.jsonl.old").is_file()


def test_a_journal_line_of_an_older_grader_is_refused_with_a_warning_never_misread(tmp_path, caplog):
    """Version 1 lines (before the result record) held positional check lists: never read as records."""
    path = tmp_path / "journal.jsonl"
    old = {"version": 1, "student": "ada", "assignment": "a", "sha256": "1", "grader": "g", "status": "graded",
           "scores": {"t": 1.0}, "checks": {"t": [["values", 1.0, 1.0, True, "", "reference"]]}, "issues": []}
    path.write_text(json.dumps(old) + "\n")
    with caplog.at_level("WARNING", logger="attnkit_grader.journal"):
        journal = Journal(path)
    assert journal.find("ada", "a", "1", "g") is None and journal.stale == 1
    assert "1 line(s) written by an older grader" in caplog.text and "graded again" in caplog.text
    journal.append(journalled("ada", "1"))              # the new line wins; the old one stays, unread
    again = Journal(path)
    assert again.find("ada", "a", "1", "g") == journalled("ada", "1") and again.stale == 1
    with pytest.raises(ValueError, match="version 1, not 2"):
        SubmissionResult.from_json(old)


def test_progress_prints_one_line_per_submission_when_not_a_terminal():
    stream, clock = io.StringIO(), Clock()
    bar = Progress(4, stream=stream, tty=False, clock=clock)
    bar.update("ada / ps1", "from the journal", timed=False)
    clock.now = 10.0
    bar.update("bo / ps1", "4.5 points, 10.0 s")
    clock.now = 20.0
    bar.update("cy / ps1", "6 points")
    bar.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3 and "\r" not in stream.getvalue()
    assert lines[0].startswith("[######..................] 1/4  25%") and lines[0].endswith("ETA ?"
                                                                                                " | ada / ps1: from the journal")
    assert "2/4" in lines[1] and "ETA 20 s" in lines[1]            # one graded in 10 s, two left
    assert "3/4  75% 20 s elapsed, ETA 10 s | cy / ps1: 6 points" in lines[2]
    assert duration(3725) == "1 h 02 min" and duration(65) == "1 min 05 s"


def test_progress_redraws_one_line_on_a_terminal():
    stream = io.StringIO()
    bar = Progress(2, stream=stream, tty=True, clock=Clock())
    bar.update("ada / ps1")
    bar.update("bo / ps1")
    bar.close()
    text = stream.getvalue()
    assert text.count("\r\x1b[2K") == 2 and text.endswith("done | bo / ps1\n") and text.count("\n") == 1


@pytest.mark.parametrize("assignment", [PS1, "ps2_relative_pe"])
def test_any_change_to_code_that_decides_a_verdict_grades_a_resumed_batch_again(assignment, tmp_path, monkeypatch):
    """The journal reuses a verdict only under the same fingerprint, and the fingerprint covers the reference,
    the checks, the probes, the judging engine, the sandbox package and the student package's helpers."""

    from attnkit_grader.autograders import sandboxed
    from attnkit_grader.isolation.limits import Limits

    labels = [label for label, _ in sandboxed.verdict_code(assignment)]
    for needed in (f"{assignment}/reference.py", f"{assignment}/checks.py",
                   f"{assignment}/probes/__init__.py", "judging/engine.py",
                   "judging/compare.py", "attnkit_sandbox/runner.py", "attnkit_sandbox/probing.py",
                   "attnkit/checking.py"):
        assert needed in labels, needed
    autograder = SimpleNamespace(course=Course(ROOT), key="", cell_timeout=30, retries=2, limits=Limits())
    release = Release.read(autograder.course, assignment)
    before = sandboxed.SandboxAutograder.fingerprint(autograder, release)
    assert sandboxed.SandboxAutograder.fingerprint(autograder, release) == before
    real = sandboxed.verdict_code
    for label, path in real(assignment):
        if label.endswith(("reference.py", "checks.py", "probes/__init__.py", "engine.py")):
            edited = tmp_path / label.replace("/", "_")
            edited.write_bytes(path.read_bytes() + b"\n# a fix\n")
            monkeypatch.setattr(sandboxed, "verdict_code", lambda a, label=label, edited=edited: [
                (lab, edited if lab == label else p) for lab, p in real(a)])
            assert sandboxed.SandboxAutograder.fingerprint(autograder, release) != before, label
    monkeypatch.setattr(sandboxed, "verdict_code", real)
    assert sandboxed.SandboxAutograder.fingerprint(autograder, release) == before
    identity = locks.identity()
    for what, other in (("lock", "0" * 16), ("packages", "1" * 16), ("torch", "2.14.1"), ("numpy", "2.5.0")):
        monkeypatch.setattr(locks, "identity", lambda what=what, other=other: {**identity, what: other})
        assert sandboxed.SandboxAutograder.fingerprint(autograder, release) != before, what   # another environment


# Runs sdpa_patcher's notebook as plain nbgrader would (every code cell in one process), then what a hidden
# test there does: the reference computed in that same process. In a subprocess: its patches stay there.
IN_ITS_OWN_KERNEL = """
import json, sys
import nbformat, torch
from attnkit_assignments.ps3_rope import reference

gen = torch.Generator().manual_seed(2)
q, k, v = (torch.randn(1, 2, 4, 4, generator=gen) for _ in range(3))
slopes = torch.tensor([0.5, 0.25])
truth = reference.causal_alibi_attention(q, k, v, slopes)
torch.manual_seed(0)
rope = reference.RotaryMultiHeadAttention(8, 2, 0.0).eval()
X = torch.randn(2, 5, 8, generator=gen)
rope_truth = rope(X, X, X, causal=True)
namespace = {}
for cell in nbformat.read(sys.argv[1], as_version=4).cells:
    if cell.cell_type == "code" and not cell.metadata.get("nbgrader", {}).get("grade"):
        exec(compile(cell.source, "<cell>", "exec"), namespace)
namespace.update(q=q, k=k, v=v, slopes=slopes, X=X, reference=reference, weights=rope.state_dict())
exec("answer = causal_alibi_attention(q, k, v, slopes)\\n"
     "expected = reference.causal_alibi_attention(q, k, v, slopes)\\n"
     "mine = RotaryMultiHeadAttention(8, 2, 0.0).eval()\\n"
     "mine.load_state_dict(weights)\\n"
     "own = mine(X, X, X, causal=True)", namespace)
print(json.dumps({"fooled": bool(torch.equal(namespace["answer"], namespace["expected"])),
                  "wrong": not bool(torch.allclose(namespace["answer"], truth, atol=1e-3)),
                  "own_code_unpatched": bool(torch.allclose(namespace["own"], rope_truth, atol=1e-5))}))
"""


def test_the_sdpa_patcher_fools_a_reference_computed_in_its_own_kernel():
    """Why the sandbox computes every reference outside the student's process: run as plain nbgrader runs it,
    sdpa_patcher's wrong causal_alibi_attention equals the reference computed beside it (the patched
    F.scaled_dot_product_attention hands the reference the wrong answer), while its own RoPE attention still
    works. The slow tests grade it in the sandbox: its control's points, no more."""
    notebook = HOSTILE / "submissions" / "sdpa_patcher" / PS3 / f"{PS3}.ipynb"
    done = subprocess.run([sys.executable, "-c", IN_ITS_OWN_KERNEL, str(notebook)], capture_output=True, text=True,
                          timeout=300, check=True)
    assert json.loads(done.stdout.splitlines()[-1]) == {"fooled": True, "wrong": True, "own_code_unpatched": True}


def test_seeds_depend_on_course_assignment_and_student_only():
    seed = derive_seed("course", PS1, "ada")
    assert seed == derive_seed("course", PS1, "ada") and 0 <= seed < 2**64
    assert len({seed, derive_seed("other", PS1, "ada"), derive_seed("course", "ps2", "ada"),
                derive_seed("course", PS1, "bo"), derive_seed("course", PS1, "ada", key="secret")}) == 5


def source_only_lines(assignment):
    """Lines of the instructor's test cells that the release does not have (the hidden tests)."""
    def test_lines(step):
        notebook = nbformat.read(ROOT / step / assignment / f"{assignment}.ipynb", as_version=4)
        return {line.strip() for cell in notebook.cells if cell.metadata.get("nbgrader", {}).get("grade")
                and not cell.metadata["nbgrader"].get("solution") for line in cell.source.splitlines() if line.strip()}
    return test_lines("source") - test_lines("release")


@pytest.mark.parametrize("student", ["deleted_test_cell", "ref_solution"])
def test_the_sandbox_gets_release_test_cells_only(student):
    release = Release.read(Course(ROOT), PS1)
    submitted = (EXAMPLE / student / PS1 / f"{PS1}.ipynb").read_bytes()
    source = release.restored(submitted)
    restored = json.loads(source)
    hidden = source_only_lines(PS1)
    assert hidden and not any(line in source.decode() for line in hidden)
    ids = [c.get("metadata", {}).get("nbgrader", {}).get("grade_id") for c in restored["cells"]]
    assert [i for i in ids if i] == release.order                    # a deleted test cell is back, in place
    for cell in restored["cells"]:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id in release.locked:
            assert cell["source"] == release.locked[grade_id]["source"]
        if cell["cell_type"] == "code":
            assert cell["outputs"] == []


def test_release_of_an_assignment_without_trusted_checks_is_refused(tmp_path):
    folder = tmp_path / "release" / "toy"
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "release" / PS1 / f"{PS1}.ipynb", folder / "toy.ipynb")
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    with pytest.raises(ValueError, match="no trusted checks for 'toy'.*--grader nbgrader"):
        Release.read(Course(tmp_path), "toy")


def test_a_forged_runner_report_cannot_break_the_parent():
    """report.json comes from the sandbox: odd types and regex characters are reduced to plain values."""
    release = Release.read(Course(ROOT), PS1)
    report = {"cells": [{"index": "(.*", "grade_id": ["x"], "status": {"a": 1}, "error": "E\x1b[31m" * 200},
                        {"index": True, "grade_id": "pe_answer", "status": "error", "error": "ValueError: no"}, 7],
              "remarks": {"not": "a list"}}
    cells = plain_cells(report)
    assert [c["index"] for c in cells] == [None, None] and cells[0]["grade_id"] is None
    assert all("\x1b" not in c["error"] and len(c["error"]) <= 200 for c in cells)
    assert list(map(str, cell_issues(report, release, "cell (.* crashed"))) == [
        "cell 'pe_answer' raised ValueError: no"]     # no usable number: named by its grade_id, never 'cell None'
    assert cell_issues({"cells": "nope", "remarks": None}, release, None) == []


def test_an_oversized_notebook_is_rejected_unread(tmp_path):
    from attnkit_grader.intake import place

    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    released = ROOT / "release" / PS1
    folder = tmp_path / "handed_in" / "big" / PS1
    folder.mkdir(parents=True)
    with open(folder / f"{PS1}.ipynb", "wb") as handle:
        handle.truncate(33 * 2**20)                      # sparse: no disk used, never read
    record = place(Course(tmp_path), tmp_path / "handed_in", "big", PS1, released, copy=False)
    assert (record.status, record.issue_texts()) == ("rejected", [f"{PS1}.ipynb is larger than 32 MiB"])
    assert not (tmp_path / "submitted").exists()


def test_feedback_page_shows_verdicts_escaped_and_test_source_only_on_request():
    checks = (CheckResult("shape", "shape", 1.0, 1.0, True, "structure"),
              CheckResult("values", "values", 0.0, 1.0, False, "values", Message.text("off by <2>")))
    entry = SubmissionResult("<ada>", PS1, "graded", ["cell 5 raised <script>alert(1)</script>"],
                             {"test_pe_table": CellResult("test_pe_table", "test", 2.0, 1.0, checks),
                              "written": CellResult("written", "written", 3.0, None, answered=True)})
    # the release's side, as Release.read gives it: unscored records in notebook order and the visible sources
    release = SimpleNamespace(graded={"test_pe_table": CellResult("test_pe_table", "test", 2.0),
                                      "written": CellResult("written", "written", 3.0),
                                      "later_written": CellResult("later_written", "written", 4.0)},
                              sources={"test_pe_table": "assert visible_check()", "written": "Answer",
                                       "later_written": ""})
    text = page(entry, release)
    assert "<script>" not in text and "&lt;script&gt;" in text and "off by &lt;2&gt;" in text
    assert "Autograded: 1 / 2 points" in text and "(pending / 3 points)" in text
    assert "(pending / 4 points)" in text and text.index("<h2>test_pe_table") < text.index("<h2>later_written")
    assert "visible_check" not in text
    assert "assert visible_check()" in html.unescape(page(entry, release, show_tests=True))
    alone = page(entry, show_tests=True)                 # the insight report's copies: the record alone
    assert "later_written" not in alone and "visible_check" not in alone and "(pending / 3 points)" in alone


def test_command_line_offers_the_grader_options():
    args = parser().parse_args(["grade", PS1, "--submissions", "x", "--workers", "3", "--fresh", "--show-tests"])
    assert (args.grader, args.workers, args.fresh, args.show_tests) == ("sandbox", 3, True, True)
    assert parser().parse_args(["demo", "--grader", "nbgrader"]).grader == "nbgrader"
    with pytest.raises(SystemExit):
        parser().parse_args(["demo", "--workers", "0"])


# --- slow: the hostile class in a temporary copy of the course --------------------------------------------------

def tree_digest(root, skip=()):
    """{relative path: sha256} of every file under ``root`` but those under the ``skip`` paths."""
    digest = {}
    for path in sorted(Path(root).rglob("*")):
        relative = path.relative_to(root).as_posix()
        if path.is_file() and not any(relative == s or relative.startswith(s + "/") for s in skip):
            digest[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digest


def gradebook_rows(database, leave_out=()):
    """Every row of every table of the gradebook, but those of the students in ``leave_out``."""
    db = sqlite3.connect(database)
    try:
        students = tuple(leave_out) or ("",)
        marks = ",".join("?" * len(students))
        theirs = [r[0] for r in db.execute(f"SELECT id FROM submitted_assignment WHERE student_id IN ({marks})",
                                           students)]
        their_notebooks = [r[0] for r in db.execute(
            f"SELECT id FROM submitted_notebook WHERE assignment_id IN ({','.join('?' * len(theirs)) or 'NULL'})",
            theirs)]
        skip = {("student", "id"): set(leave_out), ("submitted_assignment", "id"): set(theirs),
                ("submitted_notebook", "id"): set(their_notebooks), ("grade", "notebook_id"): set(their_notebooks),
                ("comment", "notebook_id"): set(their_notebooks)}
        rows = {}
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            cursor = db.execute(f"SELECT * FROM {table}")
            columns = [c[0] for c in cursor.description]
            kept = []
            for row in cursor:
                record = dict(zip(columns, row))
                if any(t == table and record.get(column) in ids for (t, column), ids in skip.items()):
                    continue
                kept.append(repr(sorted(record.items())))
            rows[table] = sorted(kept)
        return rows
    finally:
        db.close()


@pytest.fixture(scope="module")
def hostile(sandboxes, tmp_path_factory):
    """Controls graded twice (1 worker, pool), then the attacks; what the course looked like around them."""
    root = copy_course(tmp_path_factory.mktemp("hostile") / "course")
    shutil.copytree(HOSTILE / "controls", root / "controls")
    shutil.copytree(HOSTILE / "submissions", root / "submitted")          # nbgrader's own layout
    sequential = grade(root, [PS1], root / "controls", reports_dir=root / "grades_sequential", workers=1,
                       canary=False)                        # the pool's batch below sings PS1's canary
    pool = grade(root, [PS1], root / "controls", reports_dir=root / "grades_pool")
    # PS3's controls alone, without the canary (the attack batch below sings PS3's): CI time
    ps3 = grade(root, [PS3], root / "controls", reports_dir=root / "grades_ps3", canary=False)
    attacked = sorted(p.name for p in (HOSTILE / "submissions").iterdir())
    classmates = sorted({p.name for p in (root / "submitted").iterdir()} - set(attacked))   # controls, collected
    outputs = OUTPUT_DIRS + ("gradebook.db",) + tuple(f"autograded/{student}" for student in attacked)
    files_before = tree_digest(root, skip=outputs)
    rows_before = gradebook_rows(root / "gradebook.db", leave_out=attacked)
    stderr = io.StringIO()
    saved, sys.stderr = sys.stderr, stderr
    try:
        start = time.monotonic()
        run = grade(root, [PS1, PS3], root / "submitted", reports_dir=root / "grades", progress=True)
        seconds = time.monotonic() - start
    finally:
        sys.stderr = saved
    handed = sorted((p.parent.name, p.name) for p in (root / "submitted").glob("*/*") if p.is_dir())
    return {"root": root, "sequential": sequential, "pool": pool, "ps3": ps3, "run": run, "attacked": attacked,
            "handed": handed,
            "classmates": classmates, "files": (files_before, tree_digest(root, skip=outputs)),
            "rows": (rows_before, gradebook_rows(root / "gradebook.db", leave_out=attacked)),
            "progress": stderr.getvalue(), "seconds": seconds}


def points(run, student, assignment=PS1):
    return {cell: run.table.points[student, assignment][cell] for cell in CELLS[assignment]}


def controls_of(hostile, assignment):
    """The run that graded the controls of ``assignment`` alone (PS1's: the pool)."""
    return hostile["pool"] if assignment == PS1 else hostile["ps3"]


@pytest.mark.slow
def test_controls_grade_the_same_with_one_worker_and_with_the_pool(hostile):
    sequential, pool = hostile["sequential"], hostile["pool"]
    assert set(EXPECTED["controls"][PS1]) == set(pool.table.students)
    assert sequential.table.as_dict() == pool.table.as_dict()
    for key, record in pool.submissions.items():
        other = sequential.submissions[key]
        assert (record.status, record.issues, record.checked) == (other.status, other.issues, other.checked), key
    assert points(pool, "blank") == {"test_pe_table": 0.0, "test_pe_forward": 0.0}
    assert points(pool, "partial") == {"test_pe_table": 2.0, "test_pe_forward": 2.5}      # no length check
    # right shapes and no right value: the structure checks pass and count for nothing
    assert points(pool, "shape_only") == {"test_pe_table": 0.0, "test_pe_forward": 0.0}


@pytest.mark.slow
def test_ps3_controls_graded_alone(hostile):
    """PS3's controls: the blank release scores 0; partial, RoPE and its attention right but without the two
    raises (0.5 each), and the ALiBi answers as released."""
    ps3 = hostile["ps3"]
    statuses = {student: record.status for (student, _), record in ps3.submissions.items()}
    assert statuses == {**dict.fromkeys(EXPECTED["controls"][PS3], "graded"), "shape_only": "missing"}  # PS1 only
    nothing = dict.fromkeys(CELLS[PS3], 0.0)
    assert points(ps3, "blank", PS3) == nothing
    assert points(ps3, "partial", PS3) == {**nothing, "test_rope": 3.5, "test_rotary_attention": 4.5}


@pytest.mark.slow
def test_no_trick_earns_a_point(hostile):
    """Each attack scores what its honest control scores; the flag forgers, what their control would score
    with the raises the exercise asks for where a values check of the cell passes (see the next tests):
    nothing a forger gains is out of reach."""
    run = hostile["run"]
    scored = {student: points(run, student, spec["assignment"]) for student, spec in EXPECTED["attacks"].items()}
    honest = {student: points(controls_of(hostile, spec["assignment"]), spec["control"], spec["assignment"])
              for student, spec in EXPECTED["attacks"].items()}
    honest["flag_forger"]["test_pe_forward"] += flag_check(hostile["pool"], "partial").max_points
    for check in ps3_checks(hostile["ps3"], "partial").values():
        if check.id in ("rope_odd", "attn_odd"):                   # bias_too_many: no values check of test_bias passes
            honest["ps3_flag_forger"][check_cell(check.id)] += check.max_points
    assert scored == honest
    printed = "".join(chunk for cell in run.submissions["sdpa_patcher", PS3].run["outputs"].values() for _, chunk in cell)
    assert "patched scaled_dot_product_attention" in printed        # its patches ran in the sandbox, to no avail
    assert {student: spec["assignment"] for student, spec in EXPECTED["attacks"].items() if spec["assignment"] == PS3} \
        == {"sdpa_patcher": PS3, "ps3_solution_runner": PS3, "ps3_flag_forger": PS3}


@pytest.mark.slow
def test_the_forged_flag_changes_one_verdict_worth_a_one_line_raise(hostile):
    """flag_forger turns the ValueError verdict of pe_too_long (its process's own report, which nothing
    outside it can verify) into a pass, and nothing else. Since issue 25 that check is worth a share of the
    cell (leaving the required error out must cost something), as a check of a property: it counts only once
    a check of the cell's values passes, so a forger gains what the one-line raise would, never more, and
    nothing on a cell whose values are wrong."""
    run, controls = hostile["run"], hostile["pool"]
    forged = {check.name: check.passed for checks in run.submissions["flag_forger", PS1].checked.values()
              for check in checks}
    control = {check.name: check.passed for checks in controls.submissions["partial", PS1].checked.values()
               for check in checks}
    changed = {name for name in forged if forged[name] != control[name]}
    assert len(changed) == 1 and next(iter(changed)).startswith(FLAG_CHECK)
    flag = flag_check(run, "flag_forger")
    assert flag.name in changed and flag.passed and flag.kind == "property" and 0 < flag.max_points <= 0.5


def flag_check(run, student):
    [flag] = [check for checks in run.submissions[student, PS1].checked.values() for check in checks
              if check.name.startswith(FLAG_CHECK)]
    return flag


def ps3_checks(run, student):
    """{check id: CheckResult} of a PS3 submission."""
    return {check.id: check for checks in run.submissions[student, PS3].checked.values() for check in checks}


def check_cell(check_id):
    return next(spec.grade_id for spec in registry.specs(PS3) if spec.id == check_id)


@pytest.mark.slow
def test_the_forged_ps3_flags_gain_the_raises_only_where_the_values_pass(hostile):
    """ps3_flag_forger forges PS3's three self-reported results (rope_odd, attn_odd, bias_too_many: whether a
    ValueError was raised, which nothing outside the process can verify). They are checks of properties, so a
    forged pass counts only where a check of the same cell's values passes: on partial (RoPE and its attention
    right, neither raise written, alibi_bias not written) the forgery turns rope_odd and attn_odd into passes
    and gains their 0.5 + 0.5 points, what the two one-line raises earn; bias_too_many stays failed."""
    forged, control = ps3_checks(hostile["run"], "ps3_flag_forger"), ps3_checks(hostile["ps3"], "partial")
    changed = {name for name in forged if forged[name].passed != control[name].passed}
    assert changed == {"rope_odd", "attn_odd"}
    for name in PS3_FLAGS:
        assert forged[name].kind == control[name].kind == "property", name
    assert not forged["bias_too_many"].passed and not control["bias_too_many"].passed
    assert not any(forged[name].passed for name in forged if check_cell(name) == "test_bias")
    gained = sum(forged[name].points - control[name].points for name in forged)
    assert gained == forged["rope_odd"].max_points + forged["attn_odd"].max_points == 1.0


@pytest.mark.slow
def test_broken_runs_get_a_reason_and_their_controls_points(hostile):
    run, controls = hostile["run"], hostile["pool"]
    for student, spec in EXPECTED["robust"].items():
        assert spec["assignment"] == PS1, student
        record = run.submissions[student, PS1]
        assert record.status == "graded", (student, record.issues)
        assert points(run, student) == points(controls, spec["control"]), student
        assert any(spec["reason"] in issue for issue in record.issue_texts()), (student, record.issues)
        assert f"{student} / {PS1} [graded]" in run.text()


@pytest.mark.slow
def test_the_batch_completes_and_reports_every_submission(hostile):
    run = hostile["run"]
    everyone = hostile["attacked"] + hostile["classmates"]
    handed = hostile["handed"]                                 # (student, assignment): PS1 and PS3
    assert {student for student, _ in handed} == set(everyone) and {a for _, a in handed} == {PS1, PS3}
    statuses = {key: r.status for key, r in run.submissions.items()}
    assert statuses == {(s, a): "graded" if (s, a) in handed else "missing" for s in everyone for a in (PS1, PS3)}
    lines = hostile["progress"].splitlines()
    assert 1 <= len(lines) <= len(handed) and lines[-1].startswith("[" + "#" * 24 + "]")
    assert f" {len(handed)}/{len(handed)} " in lines[-1] and "done" in lines[-1]
    assert all("ETA" in line or "done" in line for line in lines)
    # off a terminal, a line every INTERVAL seconds at most (then the last): elapsed times, rounded to seconds
    elapsed = [elapsed_seconds(line) for line in lines[:-1]]
    assert all(later - earlier >= INTERVAL - 1 for earlier, later in zip(elapsed, elapsed[1:])), lines


def elapsed_seconds(line):
    """The seconds of a progress line's '1 min 05 s elapsed' (or '42 s', '1 h 02 min')."""
    words = line.split("% ", 1)[1].split(" elapsed", 1)[0].split()
    units = {"h": 3600, "min": 60, "s": 1}
    return sum(int(number) * units[unit] for number, unit in zip(words[::2], words[1::2]))


@pytest.mark.slow
def test_nothing_changes_outside_the_output_folder_but_the_attacked_gradebook_rows(hostile):
    before, after = hostile["files"]
    assert before == after
    assert any(name.startswith("submitted/classmate_deleter/") for name in after)
    for student in hostile["attacked"]:
        a = {**EXPECTED["attacks"], **EXPECTED["robust"]}[student]["assignment"]
        original = HOSTILE / "submissions" / student / a / f"{a}.ipynb"
        assert after[f"submitted/{student}/{a}/{a}.ipynb"] == hashlib.sha256(original.read_bytes()).hexdigest()
    rows_before, rows_after = hostile["rows"]
    assert rows_before == rows_after
    assert set(hostile["classmates"]) == {s for controls in EXPECTED["controls"].values() for s in controls}
    assert {(s, a) for s, a in hostile["handed"] if s in hostile["classmates"]} == {
        (s, a) for a, controls in EXPECTED["controls"].items() for s in controls}   # their copies: byte-identical
    root = hostile["root"]
    autograded = sorted(p.relative_to(root).as_posix() for p in (root / "autograded").rglob("*") if not p.is_dir())
    assert autograded == sorted(f"autograded/{s}/{a}/{a}.ipynb" for s, a in hostile["handed"])   # one copy each
    assert not (hostile["root"] / "feedback").exists()


@pytest.mark.slow
def test_autograded_copies_hold_text_verdicts_and_no_hidden_test(hostile):
    """What the formgrader will show of each attack: text streams only, capped, the judge's verdicts under
    the test cells, no line of the hidden tests."""
    from attnkit_grader.autograded_notebook import NOTEBOOK_CHARS

    hidden = {a: source_only_lines(a) for a in (PS1, PS3)}
    for (student, a), record in hostile["run"].submissions.items():
        if record.status == "missing":                           # a student who handed in the other assignment
            continue
        node = nbformat.read(hostile["root"] / "autograded" / student / a / f"{a}.ipynb", as_version=4)
        outputs = [o for cell in node.cells for o in cell.get("outputs", [])]
        assert {o.output_type for o in outputs} <= {"stream"}, student
        assert sum(len(o.text) for o in outputs) < NOTEBOOK_CHARS + 20_000, student
        text = nbformat.writes(node)
        assert not any(json.dumps(line)[1:-1] in text for line in hidden[a]), student
        tests = [c for c in node.cells if c.metadata.get("nbgrader", {}).get("grade_id") in CELLS[a]]
        assert [c.metadata["nbgrader"]["grade_id"] for c in tests] == list(CELLS[a]), student
        for cell in tests:
            earned = points(hostile["run"], student, a)[cell.metadata["nbgrader"]["grade_id"]]
            assert cell.outputs[0].text.startswith(f"Checked by the grader outside the notebook: {earned:g} /")


@pytest.mark.slow
def test_feedback_shows_each_check_and_its_message_never_hidden_test_code(hostile):
    run = hostile["run"]
    hidden = {a: source_only_lines(a) for a in (PS1, PS3)}
    for (student, a), record in run.submissions.items():
        if record.status == "missing":
            assert record.feedback is None, student
            continue
        text = Path(record.feedback).read_text()
        assert all(line not in text for line in hidden[a]), student
        for checks in record.checked.values():
            for check in checks:
                assert escape(check.name) in text and (check.passed or escape(check.text()) in text)   # jinja2's escaping


@pytest.mark.slow
def test_reports_table_csv_and_plots(hostile):
    run = hostile["run"]
    assert sorted(path.name for path in run.reports.values()) == [
        "cells.csv", "checks.csv", "grades.csv", "insight-labels.csv", "insight.html", "insight.json", "report.json",
        "scores.png", "similarity.html", "success.png", "table.txt"]
    insight = run.reports["insight.html"].read_text() + run.reports["insight.json"].read_text()
    assert "<script" not in run.reports["insight.html"].read_text()
    assert not [s for s, _ in run.submissions if f"/{s}/" in insight or f'"{s}"' in insight or f">{s}<" in insight]
    for name in ("scores.png", "success.png"):
        assert run.reports[name].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(run.reports["checks.csv"], newline="") as handle:
        rows = list(csv.DictReader(handle))
    everyone = set(hostile["attacked"]) | set(hostile["classmates"])
    assert {r["student"] for r in rows} == everyone
    assert len(rows) == sum(len(registry.describe(a)) for _, a in hostile["handed"])   # one row per check
    table = run.reports["table.txt"].read_text()
    assert "Lost points (first failed check of each exercise)" in table
    assert "stuck_loop / ps1_learnable_pe / test_pe_forward (2.5/4): " in table
    report = json.loads(run.reports["report.json"].read_text())
    assert "pe(X) with" in report["students"]["stuck_loop"][PS1]["failures"]["test_pe_forward"]


# --- kill -9 in the middle of a batch ----------------------------------------------------------------------------

GRADE_SCRIPT = ("import sys\nfrom attnkit_grader import grade\n"
                "grade(sys.argv[1], [sys.argv[2]], sys.argv[3], reports_dir=sys.argv[4], workers=2)\n")
QUICK = ["classmate_deleter", "comparison_patcher", "crash_segfault", "deleted_cells", "duplicated_cells",
         "equality_liar", "gradebook_writer", "memory_hog"]


def processes_naming(text):
    """Processes whose command line mentions ``text`` (the killed batch's sandboxes bind its folders)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text.encode() in cmdline.read_bytes():
                found.append(cmdline.parent.name)
        except OSError:
            continue
    return found


@pytest.mark.slow
def test_a_batch_killed_with_sigkill_resumes_with_the_same_grades(hostile, tmp_path):
    root = copy_course(tmp_path / "course")
    for student in QUICK:
        shutil.copytree(HOSTILE / "submissions" / student, root / "handed_in" / student)
    before = tree_digest(root / "handed_in")
    reports = root / "grades"
    journal = reports / "journal.jsonl"
    process = subprocess.Popen([sys.executable, "-c", GRADE_SCRIPT, str(root), PS1, str(root / "handed_in"),
                                str(reports)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if journal.is_file() and journal.read_bytes().count(b"\n") >= 2:
            break
        time.sleep(0.05)
    assert process.poll() is None, "the batch ended before it could be killed"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    finished = len(Journal(journal))
    assert 2 <= finished < len(QUICK)
    time.sleep(0.5)
    assert processes_naming(str(reports)) == []                     # its sandboxes died with it
    resumed = grade(root, [PS1], root / "handed_in", reports_dir=reports, workers=2)
    records = resumed.submissions
    assert sum(r.resumed for r in records.values()) >= finished
    assert all(r.status == "graded" for r in records.values())
    reference = hostile["run"]
    for student in QUICK:
        assert points(resumed, student) == points(reference, student), student
        assert records[student, PS1].checked == reference.submissions[student, PS1].checked, student
    assert len(Journal(journal)) == len(QUICK)
    assert tree_digest(root / "handed_in") == before


@pytest.mark.slow
def test_late_submissions_get_the_courses_late_penalty(sandboxes, tmp_path):
    """timestamp.txt handed in after the due date: nbgrader's LateSubmissionPlugin, as the course sets it."""
    from nbgrader.api import Gradebook

    from attnkit_grader.course import use_venv_tools

    use_venv_tools()                                       # nbgrader runs alembic to create the gradebook
    root = copy_course(tmp_path / "course")
    with open(root / "nbgrader_config.py", "a") as config:
        config.write('\nc.LateSubmissionPlugin.penalty_method = "zero"\n')
    course = Course(root)
    with Gradebook(course.db_url, course.course_id) as gradebook:
        gradebook.update_or_create_assignment(PS1, duedate="2030-01-01 00:00:00 UTC")
    for student, when in (("late", "2030-01-02 00:00:00 UTC"), ("early", "2029-12-31 00:00:00 UTC")):
        shutil.copytree(HOSTILE / "controls" / "partial", root / "handed_in" / student)
        (root / "handed_in" / student / PS1 / "timestamp.txt").write_text(when)
    run = grade(root, [PS1], root / "handed_in", workers=2)
    with Gradebook(course.db_url, course.course_id) as gradebook:
        late, early = (gradebook.find_submission(PS1, s) for s in ("late", "early"))
        assert late.total_seconds_late == 86400 and early.total_seconds_late == 0
        assert late.late_submission_penalty == late.score == 4.5 and early.late_submission_penalty == 0
    assert points(run, "late") == points(run, "early") == {"test_pe_table": 2.0, "test_pe_forward": 2.5}


@pytest.mark.slow
def test_a_notebook_linked_to_the_instructors_is_not_graded(sandboxes, tmp_path):
    """A symbolic link (to source/, say) would run the solutions as the student's own notebook."""
    root = copy_course(tmp_path / "course")
    (root / "handed_in" / "linker").mkdir(parents=True)
    (root / "handed_in" / "linker" / PS1).symlink_to(root / "source" / PS1)        # the whole folder
    (root / "handed_in" / "filelink" / PS1).mkdir(parents=True)
    (root / "handed_in" / "filelink" / PS1 / f"{PS1}.ipynb").symlink_to(root / "source" / PS1 / f"{PS1}.ipynb")
    run = grade(root, [PS1], root / "handed_in", workers=1)
    for student in ("linker", "filelink"):
        record = run.submissions[student, PS1]
        assert record.status == "rejected" and any("symbolic link" in issue for issue in record.issue_texts()), record
        assert points(run, student) == {"test_pe_table": 0.0, "test_pe_forward": 0.0}

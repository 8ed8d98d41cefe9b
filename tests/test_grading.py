"""The grading pipeline (attnkit_grader): pre-check, reasons, release drift, and the example class graded.

Fast tests build tiny notebooks by hand and never start nbgrader. The slow ones grade the bundled example
class in a temporary copy of the course (the repository is never written) with the default, sandboxed
grader: ONCE with the default pool of workers and once with one worker, and check every score against
examples/example_class/expected_scores.json and the two runs against each other. Plain nbgrader
(``grader="nbgrader"``) grades a toy course. The sandboxed runs need bubblewrap: without it they are
skipped, or fail when the CI variable is set.
"""

import copy
import csv
import hashlib
import html
import json
import os
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from conftest import copy_course
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from attnkit_grader import (CellResult, CheckResult, Course, Job, Message, SubmissionResult, check_submission, demo,
                            grade, release)
from attnkit_grader import offline
from attnkit_grader.autograders.base import Autograder, execution_issues, failed, nbgrader_failure
from attnkit_grader.cli import main
from attnkit_grader.intake import read_roster
from attnkit_grader.releases import compare_trees, drift

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "example_class"
EXPECTED = EXAMPLE / "expected_scores.json"


# --- a toy assignment, written by hand --------------------------------------------------------------------

def nbgrader_cell(cell, grade_id, *, grade=False, solution=False, locked=False, points=None):
    cell.metadata["nbgrader"] = {"grade_id": grade_id, "grade": grade, "solution": solution,
                                 "locked": locked, "schema_version": 3}
    if points is not None:
        cell.metadata["nbgrader"]["points"] = points
    return cell


def toy_notebook(solved=True):
    """An nbgrader notebook: a solution cell, its 2-point test, and a read-only setup cell."""
    body = "    return x * x" if solved else "    # YOUR CODE HERE\n    raise NotImplementedError()"
    notebook = new_notebook(cells=[
        new_markdown_cell("# Toy assignment"),
        nbgrader_cell(new_code_cell("import math"), "setup", locked=True),
        nbgrader_cell(new_code_cell(f"def square(x):\n{body}"), "square", solution=True),
        nbgrader_cell(new_code_cell("assert square(3) == 9"), "test_square", grade=True, locked=True, points=2),
    ])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                       "language": "python"}
    return notebook


def write_notebook(folder, name, notebook):
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, folder / name)
    return folder / name


@pytest.fixture
def released(tmp_path):
    """A release folder holding toy.ipynb, as students receive it."""
    folder = tmp_path / "release" / "toy"
    write_notebook(folder, "toy.ipynb", toy_notebook(solved=False))
    return folder


def reasons(issues):
    return [(issue.reason, issue.fatal) for issue in issues]


# --- pre-check: fast, no nbgrader -------------------------------------------------------------------------

def test_precheck_accepts_a_solved_notebook(tmp_path, released):
    submission = tmp_path / "alice" / "toy"
    write_notebook(submission, "toy.ipynb", toy_notebook(solved=True))
    assert check_submission(submission, released) == []


def test_precheck_rejects_invalid_json_and_says_where(tmp_path, released):
    submission = tmp_path / "bob" / "toy"
    submission.mkdir(parents=True)
    (submission / "toy.ipynb").write_text('{"cells": [', encoding="utf-8")
    [(reason, fatal)] = reasons(check_submission(submission, released))
    assert fatal and "toy.ipynb is not valid JSON" in reason and "line 1" in reason


@pytest.mark.parametrize("text, expected", [
    ("", "is empty"),
    ('["a list"]', "not a notebook"),
    ('{"cells": [], "nbformat": 3, "nbformat_minor": 0, "metadata": {}}', "nbformat version 3"),
    ('{"cells": [{"cell_type": "poem"}], "nbformat": 4, "nbformat_minor": 5, "metadata": {}}',
     "not a valid notebook"),
])
def test_precheck_rejects_files_that_are_not_notebooks(tmp_path, released, text, expected):
    submission = tmp_path / "carol" / "toy"
    submission.mkdir(parents=True)
    (submission / "toy.ipynb").write_text(text, encoding="utf-8")
    [(reason, fatal)] = reasons(check_submission(submission, released))
    assert fatal and expected in reason


def test_precheck_rejects_a_missing_notebook_and_a_missing_folder(tmp_path, released):
    empty = tmp_path / "dave" / "toy"
    empty.mkdir(parents=True)
    assert reasons(check_submission(empty, released)) == [("notebook toy.ipynb is missing", True)]
    [(reason, fatal)] = reasons(check_submission(tmp_path / "nobody" / "toy", released))
    assert fatal and "nothing handed in" in reason


def test_precheck_names_a_wrongly_named_notebook(tmp_path, released):
    submission = tmp_path / "erin" / "toy"
    write_notebook(submission, "toy (1).ipynb", toy_notebook())
    [(reason, fatal)] = reasons(check_submission(submission, released))
    assert fatal and "found toy (1).ipynb instead" in reason and "must be toy.ipynb" in reason


def test_precheck_remarks_on_deleted_tests_edited_locked_cells_and_extra_files(tmp_path, released):
    notebook = toy_notebook()
    notebook.cells[1].source = "import os"           # read-only setup cell edited
    del notebook.cells[3]                             # test deleted
    submission = tmp_path / "frank" / "toy"
    write_notebook(submission, "toy.ipynb", notebook)
    (submission / "notes.txt").write_text("hello")
    (submission / ".ipynb_checkpoints").mkdir()
    (submission / ".ipynb_checkpoints" / "toy-checkpoint.ipynb").write_text("{}")
    found = reasons(check_submission(submission, released))
    assert found == [("toy.ipynb: read-only cell 'setup' was edited (nbgrader grades the original)", False),
                     ("toy.ipynb: test cell 'test_square' was deleted", False),
                     ("extra files ignored: notes.txt", False)]


def test_precheck_accepts_read_only_cells_as_in_the_instructors_source(tmp_path, released):
    source = toy_notebook()
    source.cells[3].source += "\n### BEGIN HIDDEN TESTS\nassert square(-2) == 4\n### END HIDDEN TESTS"
    write_notebook(tmp_path / "source" / "toy", "toy.ipynb", source)
    submission = tmp_path / "instructor" / "toy"
    write_notebook(submission, "toy.ipynb", source)
    remarks = check_submission(submission, released, tmp_path / "source" / "toy")
    assert [i.reason for i in remarks if "alike to the notebook's solution" not in i.reason] == []
    [(reason, fatal)] = reasons(check_submission(submission, released))
    assert not fatal and "'test_square' was edited" in reason


def test_precheck_remarks_on_untouched_answers_and_on_the_reference_solutions(tmp_path, released):
    untouched = tmp_path / "gil" / "toy"
    write_notebook(untouched, "toy.ipynb", nbformat.read(released / "toy.ipynb", as_version=4))
    assert reasons(check_submission(untouched, released)) == [
        ("toy.ipynb: no answer changed since the release (nothing attempted?)", False)]
    notebook = toy_notebook()
    notebook.cells[2].source = "from attnkit_assignments.toy.reference import square"
    notebook.cells.append(new_code_cell("import importlib\nimportlib.import_module('attnkit_assignments.toy')"))
    copier = tmp_path / "hal" / "toy"
    write_notebook(copier, "toy.ipynb", notebook)
    assert reasons(check_submission(copier, released)) == [
        ("toy.ipynb: cell 'square' uses the reference solutions (attnkit_assignments)", False),
        ("toy.ipynb: cell 5 uses the reference solutions (attnkit_assignments)", False)]


def test_precheck_needs_a_released_notebook(tmp_path):
    with pytest.raises(FileNotFoundError, match="release_dir"):
        check_submission(tmp_path, tmp_path)


def test_hand_ins_are_collected_into_submitted_and_odd_ones_rejected_uncopied(tmp_path, released):
    """Collect before grading (nbgrader's layout): a plain hand-in is copied, one holding a symbolic link
    or a named pipe is rejected and not copied; the hand-in folder itself is never written."""
    import os

    from attnkit_grader.intake import place

    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    course, handed_in = Course(tmp_path), tmp_path / "handed_in"
    write_notebook(handed_in / "ada" / "toy", "toy.ipynb", toy_notebook())
    write_notebook(handed_in / "bo" / "toy", "toy.ipynb", toy_notebook())
    (handed_in / "bo" / "toy" / "data").symlink_to(tmp_path / "nbgrader_config.py")
    write_notebook(handed_in / "cy" / "toy", "toy.ipynb", toy_notebook())
    os.mkfifo(handed_in / "cy" / "toy" / "pipe")
    (handed_in / "di").mkdir()
    (handed_in / "di" / "toy").symlink_to(handed_in / "ada" / "toy")
    before = file_hashes(handed_in)
    records = {s: place(course, handed_in, s, "toy", released) for s in ("ada", "bo", "cy", "di")}
    assert {s: r.status for s, r in records.items()} == {"ada": "pending", "bo": "rejected", "cy": "rejected",
                                                         "di": "rejected"}
    assert records["bo"].issue_texts() == ["bo/toy/data is a symbolic link; hand in plain files"]
    assert records["cy"].issue_texts() == ["cy/toy/pipe is not a plain file; hand in plain files"]
    assert records["di"].issue_texts() == ["di/toy is a symbolic link (or lies behind one); hand in plain files"]
    assert file_hashes(tmp_path / "submitted") == {"ada/toy/toy.ipynb": before["ada/toy/toy.ipynb"]}
    assert file_hashes(handed_in) == before
    again = place(course, tmp_path / "submitted", "ada", "toy", released)      # already in submitted/: kept
    assert again.status == "pending" and file_hashes(tmp_path / "submitted") == {"ada/toy/toy.ipynb": before[
        "ada/toy/toy.ipynb"]}


# --- reasons read from nbgrader's output: fast --------------------------------------------------------------

def error_output(ename, evalue=""):
    return nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[])


def test_execution_issues_report_timeouts_and_crashing_setup_but_not_failed_tests():
    notebook = toy_notebook()
    notebook.cells[1].outputs = [error_output("ModuleNotFoundError", "No module named 'nope'")]
    notebook.cells[2].outputs = [error_output("KeyboardInterrupt"), error_output("CellTimeoutError")]
    notebook.cells[3].outputs = [error_output("AssertionError")]
    assert list(map(str, execution_issues(notebook, "toy.ipynb", 20))) == [
        "cell 2 ('setup') of toy.ipynb raised ModuleNotFoundError: No module named 'nope'",
        "cell 3 ('square') of toy.ipynb ran over the 20 s limit and was interrupted",
    ]


def test_later_errors_are_counted_not_listed():
    notebook = toy_notebook()
    notebook.cells[1].outputs = [error_output("ImportError", "boom")]
    notebook.cells[2].outputs = [error_output("NameError", "name 'math' is not defined")]
    issues = list(map(str, execution_issues(notebook, "toy.ipynb", 20)))
    assert issues == ["cell 2 ('setup') of toy.ipynb raised ImportError: boom",
                      "1 later non-test cell(s) of toy.ipynb also raised"]


@pytest.mark.parametrize("log, expected", [
    ("nbformat.reader.NotJSONError: Notebook does not appear to be JSON", "not valid JSON"),
    ("[ERROR] No notebooks were matched by 'submitted/x/toy/*.ipynb'", "no notebook with the released name"),
    ("[ERROR] While processing assignment, the kernel became unresponsive", "stopped responding"),
    ("    nbclient.exceptions.DeadKernelError: Kernel died\n", "kernel died"),
    ("    ValueError: bad thing\n    nbgrader.converters.base.NbGraderException: Please see the above",
     "ValueError: bad thing"),
    ("nothing recognisable", "see its log"),
])
def test_nbgrader_failures_are_explained(log, expected):
    reason = str(nbgrader_failure(log))
    assert reason.startswith("nbgrader could not grade it") and expected in reason


# --- the autograded copy the sandboxed grader writes for nbgrader's formgrader: fast, no sandbox ----------------

PS1 = "ps1_learnable_pe"


def hidden_test_lines(assignment, *also_allowed):
    """Lines between '### BEGIN HIDDEN TESTS' and '### END HIDDEN TESTS' in source/ that appear nowhere in the
    release (or in ``also_allowed`` texts): what must never reach a student or an autograded copy."""
    source = nbformat.read(ROOT / "source" / assignment / f"{assignment}.ipynb", as_version=4)
    released = (ROOT / "release" / assignment / f"{assignment}.ipynb").read_text()
    hidden, inside = set(), False
    for cell in source.cells:
        for line in cell.source.splitlines():
            if "### BEGIN HIDDEN TESTS" in line:
                inside = True
            elif "### END HIDDEN TESTS" in line:
                inside = False
            elif inside and len(line.strip()) > 8:
                hidden.add(line.strip())
    assert hidden, f"source/{assignment} has no hidden tests"
    return {line for line in hidden if json.dumps(line)[1:-1] not in released
            and not any(line in text for text in also_allowed)}


def shown_text(node):
    """Every source and output text of a notebook, one after the other."""
    return "\n".join([cell.source for cell in node.cells]
                     + [output.get("text", "") for cell in node.cells for output in cell.get("outputs", [])])


def formgrade_html(node, student="ada", assignment=PS1):
    """The page nbgrader's formgrader serves for an autograded notebook (its SubmissionHandler's exporter)."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers
    from traitlets.config import Config

    config = Config()
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    resources = {"assignment_id": assignment, "notebook_id": assignment, "submission_id": "x", "index": 0,
                 "total": 1, "base_url": "", "student": student, "last_name": None, "first_name": None,
                 "notebook_path": f"autograded/{student}/{assignment}/{assignment}.ipynb"}
    html, _ = HTMLExporter(config=config).from_notebook_node(node, resources=resources)
    return html


def tampered_submission():
    """The example class's partial PS1, made hostile where the formgrader would show it (see the test)."""
    notebook = json.loads((EXAMPLE / "partial" / PS1 / f"{PS1}.ipynb").read_text())
    cells = notebook["cells"]
    by_id = {c.get("metadata", {}).get("nbgrader", {}).get("grade_id"): c for c in cells}
    by_id["experiment_written"]["source"] = (
        "Learned fails. <img src=x onerror=alert(1)> <script>alert(2)</script> [see](JaVaScript:alert(3)) "
        "&#60;script&#62;alert(4)&#60;/script&#62;")
    by_id["experiment_written"]["metadata"]["nbgrader"]["points"] = 100          # forged metadata
    by_id["test_pe_table"]["source"] = "### BEGIN HIDDEN TESTS\nprint('forged')\n### END HIDDEN TESTS"
    by_id["pe_answer"]["outputs"] = [{"output_type": "display_data", "metadata": {},
                                      "data": {"text/html": "<script>alert(5)</script>"}}]
    cells.append(copy.deepcopy(by_id["pe_answer"]))                               # a duplicated answer cell
    cells.append({"cell_type": "markdown", "id": "bad id!", "source": "extra",
                  "metadata": {"nbgrader": {"grade": True, "grade_id": 'x"><script>alert(6)</script>', "points": 9,
                                            "solution": True, "locked": False, "schema_version": 3}}})
    cells.append("not a cell")
    return notebook


def test_the_autograded_copy_keeps_what_the_formgrader_needs_and_shows_text_only(tmp_path):
    """What the sandboxed grader writes into autograded/: release cells and metadata, text streams only
    (escape sequences gone, capped), verdict lines under test cells, inert student markdown."""
    from attnkit_grader import autograded_notebook as autograded
    from attnkit_grader.autograders.sandboxed import plain_cells
    from attnkit_grader.release_cells import Release

    release = Release.read(Course(ROOT), PS1)
    submission = tampered_submission()
    number = {}
    for i, cell in enumerate(submission["cells"][:-1], start=1):
        number.setdefault(cell.get("metadata", {}).get("nbgrader", {}).get("grade_id"), i)
    duplicate = len(submission["cells"]) - 2
    report = {"cells": [                                                         # untrusted: from the sandbox
        {"index": number["setup"], "status": "ok"},
        {"index": number["pe_answer"], "status": "ok", "stdout": "\x1b[31mred\x1b[0m <b>bold</b>\x07\n",
         "result": "'<i>value</i>'"},
        {"index": number["experiment_answer"], "status": "ok", "stdout": "y" * 50_000, "stdout_bytes": 123_456,
         "result": "<matplotlib.lines.Line2D object at 0x7f00>"},
        {"index": duplicate, "status": "error", "error": "ValueError: \ud800 no", "line": 2},
        {"index": "(.*", "status": {"odd": 1}, "stdout": ["not", "text"]}, 7]}
    checks = (CheckResult("shape", "shape <ok>", 0.5, 0.5, True, "structure"),
              CheckResult("values", "values", 0.0, 1.5, False, "values", Message.text("off by <2>\x1b[0m")))
    result = SubmissionResult("ada", PS1, "graded", cells={"test_pe_table": CellResult("test_pe_table", "test", 2.0,
                                                                                         0.5, checks)},
                              run={"cells": plain_cells(report), "outputs": autograded.captured(report)})
    result = SubmissionResult.from_json(json.loads(json.dumps(result.to_json())))   # as the journal keeps it
    data = json.dumps(submission).encode()
    node = autograded.notebook(release, data, result)

    grade_ids = [c.metadata["nbgrader"]["grade_id"] for c in node.cells if "nbgrader" in c.metadata]
    assert grade_ids == release.order                     # each release cell once, in place; forged ids gone
    released = {c["metadata"]["nbgrader"]["grade_id"]: c["metadata"] for c in release.notebook["cells"]
                if "nbgrader" in c.get("metadata", {})}
    for cell in node.cells:
        assert set(cell.metadata) <= {"deletable", "editable", "nbgrader", "tags"}
        if "nbgrader" in cell.metadata:
            assert cell.metadata == released[cell.metadata["nbgrader"]["grade_id"]]      # points: 2, not 100
        for output in cell.get("outputs", []):
            assert output.output_type == "stream" and not any(ch in output.text for ch in "\x1b\x07")
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in node.cells}
    assert [(o.name, o.text) for o in cells["pe_answer"].outputs] == [("stdout", "red <b>bold</b>\n"),
                                                                      ("stdout", "'<i>value</i>'\n")]
    [long] = cells["experiment_answer"].outputs                   # the cell ends with ';': no value shown
    assert len(long.text) < autograded.OUTPUT_CHARS + 200 and "123456 bytes in all" in long.text
    assert [o.text for o in node.cells[duplicate - 1].outputs] == ["ValueError: ? no (line 2)\n"]
    assert "nbgrader" not in node.cells[duplicate - 1].metadata
    [verdicts] = cells["test_pe_table"].outputs
    assert verdicts.text.splitlines() == ["Checked by the grader outside the notebook: 0.5 / 2 points",
                                          "passed 0.5/0.5 [structure] shape <ok>",
                                          "FAILED 0/1.5 [values] values: off by <2>"]
    assert cells["test_pe_table"].source == "".join(release.locked["test_pe_table"]["source"])
    assert cells["test_pe_forward"].outputs[0].text.startswith("Checked by the grader outside the notebook: 0 / 4")
    text = shown_text(node)
    assert "forged" not in text and not any(line in text for line in hidden_test_lines(PS1))
    written = cells["experiment_written"].source
    assert written.startswith("Learned fails.") and "<img" not in written and "<script" not in written

    html = formgrade_html(node)                           # what the instructor's browser would get
    assert "Learned fails." in html and 'id="experiment_written"' in html and "0.5/0.5 [structure]" in html
    for attack in ("<img src=x", "<script>alert", 'href="javascript:', "<i>value", "<b>bold", "alert(6)"):
        assert attack not in html.lower(), attack

    path = tmp_path / "autograded" / "ada" / PS1 / f"{PS1}.ipynb"
    assert autograded.write(path, node) and not autograded.write(path, autograded.notebook(release, data, result))
    assert nbformat.read(path, as_version=4) == node and sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_inert_markdown_shows_html_as_text():
    from attnkit_grader.autograded_notebook import inert_markdown

    assert inert_markdown("a < b & c") == "a &lt; b &amp; c"
    assert inert_markdown("[x](javascript:go()) VBScript :") == "[x](javascript\u200b:go()) VBScript \u200b:"
    assert inert_markdown("plain $x_i$ **bold**") == "plain $x_i$ **bold**"


# --- class list, drift, command line: fast -------------------------------------------------------------------

def test_roster_is_read_like_nbgrader_student_import(tmp_path):
    path = tmp_path / "students.csv"
    path.write_text("id, first_name,last_name,email,shoe_size\nada,Ada,Lovelace,,42\nbo,,,bo@x.org,\n")
    assert read_roster(path) == {
        "ada": {"first_name": "Ada", "last_name": "Lovelace", "email": None},
        "bo": {"first_name": None, "last_name": None, "email": "bo@x.org"}}


@pytest.mark.parametrize("text, match", [("name\nada\n", "needs an 'id' column"),
                                         ("id\nada\nada\n", "line 3")])
def test_roster_errors_name_the_argument(tmp_path, text, match):
    path = tmp_path / "students.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=f"students_csv: .*{match}"):
        read_roster(path)


def test_compare_trees_lists_each_difference(tmp_path):
    committed, fresh = tmp_path / "committed", tmp_path / "fresh"
    original = toy_notebook(solved=False)
    write_notebook(committed, "toy.ipynb", original)
    changed = copy.deepcopy(original)
    changed.cells[3].source = "assert square(4) == 16"
    write_notebook(fresh, "toy.ipynb", changed)
    (fresh / "data.csv").write_text("1,2\n")
    (committed / "old.txt").write_text("gone")
    assert compare_trees(committed, fresh) == ["missing from committed/: data.csv",
                                               "not generated from source any more: old.txt",
                                               "differs: toy.ipynb (cells 4)"]
    assert compare_trees(committed, committed) == []


def test_cli_reports_a_missing_course_with_exit_status_2(tmp_path, capsys):
    assert main(["--root", str(tmp_path), "release"]) == 2
    assert "no nbgrader_config.py" in capsys.readouterr().err


# --- a toy course through nbgrader: slow ---------------------------------------------------------------------

@pytest.fixture
def toy_course(tmp_path):
    root = tmp_path / "course"
    write_notebook(root / "source" / "toy", "toy.ipynb", toy_notebook(solved=True))
    (root / "nbgrader_config.py").write_text('c = get_config()\nc.CourseDirectory.course_id = "toy"\n')
    return Course(root)


@pytest.mark.slow
def test_release_check_finds_drift_and_release_fixes_it(toy_course, capsys):
    root = str(toy_course.root)
    assert main(["--root", root, "release", "--check"]) == 1          # nothing released yet
    assert main(["--root", root, "release"]) == 0
    released = nbformat.read(toy_course.assignment_dir("release", "toy") / "toy.ipynb", as_version=4)
    assert "raise NotImplementedError()" in released.cells[2].source  # the solution was stripped
    assert main(["--root", root, "release", "--check"]) == 0
    assert drift(toy_course) == {"toy": []}
    capsys.readouterr()


class PretendAutograder(Autograder):
    """Grades nothing: proves the pipeline only needs the Autograder interface (and keeps this test fast)."""

    def __init__(self):
        self.jobs = []

    def run(self, jobs):
        for job in reversed(list(jobs)):                 # any order must do
            self.jobs.append(job)
            yield failed(job, "pretend failure"), ""


@pytest.mark.slow
def test_pipeline_sorts_submissions_and_reports_with_any_autograder(toy_course, tmp_path):
    release(toy_course)
    submissions = tmp_path / "handed_in"
    write_notebook(submissions / "ada" / "toy", "toy.ipynb", toy_notebook(solved=True))
    (submissions / "bo" / "toy").mkdir(parents=True)
    (submissions / "bo" / "toy" / "toy.ipynb").write_text("{not json")
    (tmp_path / "students.csv").write_text("id\nada\nbo\ncy\n")
    autograder = PretendAutograder()
    run = grade(toy_course, ["toy"], submissions, tmp_path / "students.csv", autograder=autograder)
    assert autograder.jobs == [Job("toy", "ada")]
    assert {s.student: s.status for s in run.submissions.values()} == {
        "ada": "failed", "bo": "rejected", "cy": "missing"}
    assert run.table.as_dict() == {s: {"toy": {"test_square": 0.0}} for s in ("ada", "bo", "cy")}
    assert (toy_course.root / "submitted" / "ada" / "toy" / "toy.ipynb").is_file()
    assert sorted(p.name for p in run.reports.values()) == [
        "cells.csv", "grades.csv", "insight-labels.csv", "insight.html", "insight.json", "report.json",
        "scores.png", "similarity.html", "success.png", "table.txt"]
    assert "bo / toy [rejected]: toy.ipynb is not valid JSON" in run.text()


@pytest.mark.slow
def test_plain_nbgrader_is_still_one_option_away(toy_course, tmp_path, capsys):
    """``--grader nbgrader``: nbgrader autograde in this process, a copy in submitted/, nbgrader's feedback."""
    release(toy_course)
    submissions = tmp_path / "handed_in"
    write_notebook(submissions / "ada" / "toy", "toy.ipynb", toy_notebook(solved=True))
    write_notebook(submissions / "bo" / "toy", "toy.ipynb", toy_notebook(solved=False))
    assert main(["--root", str(toy_course.root), "-q", "grade", "toy", "--submissions", str(submissions),
                 "--grader", "nbgrader"]) == 0
    out = capsys.readouterr().out
    assert "2 of 2 submissions graded" in out, out
    assert (toy_course.root / "submitted" / "ada" / "toy" / "toy.ipynb").is_file()
    page = (toy_course.root / "feedback" / "ada" / "toy" / "toy.html").read_text(encoding="utf-8")
    # made complete offline as it was written (attnkit_grader.offline): nbgrader's MathJax from a CDN is gone
    assert "<script" not in page and "cdnjs" not in page and offline.POLICY in page and "pre-wrap" in page
    report = json.loads((toy_course.root / "grades" / "report.json").read_text())
    assert {s: report["students"][s]["toy"]["points"] for s in ("ada", "bo")} == {
        "ada": {"test_square": 2.0}, "bo": {"test_square": 0.0}}


# --- the example class, graded once per session: slow ---------------------------------------------------------

# What the pipeline must say about each submission that expected_scores.json explains with a "reason".
REPORTED = {
    ("blank", "ps1_learnable_pe"): "no answer changed since the release",
    ("blank", "ps2_relative_pe"): "no answer changed since the release",
    ("blank", "ps3_rope"): "no answer changed since the release",
    ("broken_json", "ps1_learnable_pe"): "is not valid JSON",
    ("cheat_exec", "ps1_learnable_pe"): "uses the reference solutions",
    ("cheat_import", "ps2_relative_pe"): "uses the reference solutions",
    ("cheat_import", "ps3_rope"): "uses the reference solutions",
    ("deleted_test_cell", "ps1_learnable_pe"): "test cell 'test_pe_forward' was deleted",
    ("import_error", "ps2_relative_pe"): "raised ModuleNotFoundError: No module named 'not_a_module'",
    ("infinite_loop", "ps1_learnable_pe"): "ran over the 30 s limit and was interrupted",
}
# Re-graded to prove idempotence: one of each kind (a cheap subset: every autograde costs seconds).
REGRADED = ["broken_json", "deleted_test_cell", "import_error", "partial"]


def file_hashes(folder):
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def expected():
    if not EXPECTED.is_file():
        pytest.fail(f"{EXPECTED.relative_to(ROOT)} is missing: the example class has no expected scores")
    return json.loads(EXPECTED.read_text())


@pytest.fixture(scope="module")
def example_course(tmp_path_factory):
    """A temporary copy of the course: config, source/, release/ and the example class."""
    root = copy_course(tmp_path_factory.mktemp("kit"))
    shutil.copytree(EXAMPLE, root / "examples" / "example_class")
    for language in ("", "fr", "zh"):                       # the insight report names their sections,
        (root / "course" / language).mkdir(parents=True)    # in each report language
        for lecture in (ROOT / "course" / language).glob("*.ipynb"):
            shutil.copy(lecture, root / "course" / language)
    return root


@pytest.fixture(scope="module")
def graded(example_course, expected, sandboxes):
    """(run, hashes of the submissions before, after): `attnkit demo` on the copy, once (default pool)."""
    submissions = example_course / "examples" / "example_class"
    before = file_hashes(submissions)
    run = demo(example_course)
    return run, before, file_hashes(submissions)


# Left out of the one-worker run: its cell loops until the 30 s timeout, the same with one worker or two (a run's
# limits are its own), and one worker would wait for it alone.
SEQUENTIAL_SKIPS = {"infinite_loop"}


@pytest.fixture(scope="module")
def graded_sequentially(tmp_path_factory):
    """The same class but :data:`SEQUENTIAL_SKIPS` graded again with one worker, in a course of its own (the pool's
    keeps its gradebook for the tests below), without the canary (the pool's batch sang it)."""
    root = copy_course(tmp_path_factory.mktemp("one_worker"))
    for student in EXAMPLE.iterdir():
        if student.is_dir() and student.name not in SEQUENTIAL_SKIPS:
            shutil.copytree(student, root / "handed_in" / student.name)
    return grade(root, [], root / "handed_in", EXAMPLE / "students.csv", workers=1, canary=False)


@pytest.mark.slow
def test_every_score_matches_the_expected_points(graded, expected):
    run, _, _ = graded
    wrong = {(student, assignment, grade_id): (run.table.points[student, assignment].get(grade_id), points)
             for student, assignments in expected.items() for assignment, cells in assignments.items()
             for grade_id, points in cells.items()
             if grade_id != "reason" and run.table.points[student, assignment].get(grade_id) != points}
    assert not wrong, f"(student, assignment, cell): (scored, expected): {wrong}"


@pytest.mark.slow
def test_the_gradebooks_table_and_the_graders_records_agree_on_every_cell(graded):
    """Two views of one grade (the contributors' guide): the ScoreTable read back from the gradebook, where hand
    grades will live, and the SubmissionResult the grader decided. Before any hand grade they agree cell by
    cell; a written answer is 0 in both when unanswered, and pending in the record (None) when answered."""
    run, _, _ = graded
    compared = 0
    for (student, assignment), record in run.submissions.items():
        if record.status != "graded":
            continue
        table = run.table.points[student, assignment]
        assert set(table) == set(record.cells), (student, assignment)
        for grade_id, cell in record.cells.items():
            assert table[grade_id] == (cell.score or 0.0), (student, assignment, grade_id)
            compared += 1
        assert dict(run.table.cells[assignment]) == {g: c.max_points for g, c in record.cells.items()}
    assert compared > 50


@pytest.mark.slow
def test_every_bad_submission_is_reported_by_name_with_its_reason(graded, expected):
    run, _, _ = graded
    explained = {(s, a) for s, assignments in expected.items() for a, cells in assignments.items()
                 if "reason" in cells}
    assert explained == set(REPORTED), "expected_scores.json explains other submissions than this test"
    text = run.text()
    for (student, assignment), reason in REPORTED.items():
        record = run.submissions[student, assignment]
        assert any(reason in issue for issue in record.issue_texts()), (student, assignment, record.issues)
        assert f"{student} / {assignment} [{record.status}]" in text and reason in text
    for assignment, cells in (("ps1_learnable_pe", 2), ("ps2_relative_pe", 4)):   # the instructor's own answers:
        issues = run.submissions["ref_solution", assignment].issue_texts()    # each answer cell flagged, no more
        assert len(issues) == cells and all("100% alike to the notebook's solution" in i for i in issues), issues


@pytest.mark.slow
def test_the_batch_completes_despite_bad_submissions(graded, expected):
    run, _, _ = graded
    handed_in = {(s, a) for s, assignments in expected.items() for a in assignments}
    statuses = {key: record.status for key, record in run.submissions.items()}
    assert {k for k, status in statuses.items() if status != "missing"} == handed_in
    assert {k for k, status in statuses.items() if status == "rejected"} == {("broken_json", "ps1_learnable_pe")}
    assert {k for k, status in statuses.items() if status == "graded"} == handed_in - {
        ("broken_json", "ps1_learnable_pe")}


@pytest.mark.slow
def test_one_worker_and_the_pool_give_the_same_grades(graded, graded_sequentially):
    pool, _, _ = graded
    one = graded_sequentially
    kept = {student: assignments for student, assignments in pool.table.as_dict().items()
            if student not in SEQUENTIAL_SKIPS}
    assert {s: a for s, a in one.table.as_dict().items() if s not in SEQUENTIAL_SKIPS} == kept
    assert one.table.review == pool.table.review
    assert {s for (s, _), record in one.submissions.items() if record.status == "missing"} >= SEQUENTIAL_SKIPS
    for key, record in pool.submissions.items():
        if key[0] in SEQUENTIAL_SKIPS:
            continue
        other = graded_sequentially.submissions[key]
        assert (other.status, other.issues, other.checked, other.failures()) == (
            record.status, record.issues, record.checked, record.failures()), key


@pytest.mark.slow
def test_the_submissions_are_only_read(graded, example_course):
    run, before, after = graded
    assert before == after
    assert before == file_hashes(EXAMPLE), "the copy differs from the repository's example class"
    handed_in = {path: digest for path, digest in before.items() if path.count("/") == 2}
    assert file_hashes(example_course / "submitted") == handed_in      # collected as nbgrader lays it out
    copies = {f"{s}/{a}/{a}.ipynb" for (s, a), record in run.submissions.items() if record.status == "graded"}
    assert set(file_hashes(example_course / "autograded")) == copies  # one notebook per graded submission
    assert not (example_course / "feedback").exists()                 # the sandboxed grader's pages: grades/


# Graded by hand in the formgrader and given nbgrader's feedback: one of each kind.
FORMGRADED = ["ref_solution", "partial", "bug_sign_flip", "deleted_test_cell", "import_error"]


def written_answer(student, assignment, grade_id):
    """A run of plain words from the student's written answer, as any HTML page would show it."""
    notebook = nbformat.read(EXAMPLE / student / assignment / f"{assignment}.ipynb", as_version=4)
    [source] = [c.source for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]
    return max(re.findall(r"[A-Za-z][A-Za-z ,]{20,}", source), key=len)


@pytest.mark.slow
def test_nbgrader_formgrader_and_feedback_work_on_the_sandboxed_copies(graded, example_course, expected, tmp_path):
    """nbgrader's own machinery on the sandboxed grader's autograded/ copies: the formgrader lists every
    graded submission as autograded with the gradebook's scores and renders the written answers;
    generate_feedback shows them with each cell's score. No copy holds hidden tests or rich outputs."""
    from attnkit_grader.release_cells import Release

    run, _, _ = graded
    course = Course(example_course)
    api = course.api(**{"CourseDirectory.feedback_directory": str(tmp_path / "feedback")})
    for assignment in run.assignments:
        graded_here = {s for (s, a), r in run.submissions.items() if a == assignment and r.status == "graded"}
        listed = {s["student"]: s for s in api.get_submissions(assignment) if s["submitted"]}
        assert {s for s, info in listed.items() if info["autograded"]} == graded_here, assignment
        notebooks = {s["student"]: s for s in api.get_notebook_submissions(assignment, assignment)}
        assert set(notebooks) == graded_here                 # the formgrader finds each copy on disk
        written = [g for g, cell in Release.read(course, assignment).graded.items() if cell.kind == "written"]
        for student in graded_here:
            assert notebooks[student]["score"] == pytest.approx(run.table.total(student, assignment))
            awaiting = any((student, assignment, g) in run.table.review for g in written)   # answered, not graded
            assert notebooks[student]["needs_manual_grade"] == awaiting, student
        assert notebooks["ref_solution"]["needs_manual_grade"]
        hidden = hidden_test_lines(assignment)
        for student in graded_here:
            node = nbformat.read(example_course / "autograded" / student / assignment / f"{assignment}.ipynb",
                                 as_version=4)
            nbformat.validate(node)
            assert {o.output_type for c in node.cells for o in c.get("outputs", [])} <= {"stream"}, student
            assert not any(line in shown_text(node) for line in hidden), student
    for student in FORMGRADED:
        for assignment, cells in expected[student].items():
            result = api.generate_feedback(assignment, student, force=True)
            assert result["success"], result.get("log", "") + result.get("error", "")
            page = html.unescape((tmp_path / "feedback" / student / assignment / f"{assignment}.html").read_text())
            total, top = run.table.total(student, assignment), run.table.max_total(assignment)
            assert f"{assignment} (Score: {round(float(total), 2)} / {round(float(top), 2)})" in page, student
            for grade_id, points in cells.items():
                if grade_id != "reason":
                    maximum = float(dict(run.table.cells[assignment])[grade_id])
                    score = f"(Score: {round(float(points), 2)} / {round(maximum, 2)})"
                    assert f"Test cell</a> {score}" in page, grade_id
            written = [g for g, cell in Release.read(course, assignment).graded.items() if cell.kind == "written"]
            assert page.count("Written response</a> (Score: 0.0 / ") == len(written)      # not graded by hand yet
            if student == "ref_solution":
                for grade_id in written:
                    assert written_answer(student, assignment, grade_id) in page, grade_id
            assert not any(line in page for line in hidden_test_lines(assignment)), student
    node = nbformat.read(example_course / "autograded" / "ref_solution" / PS1 / f"{PS1}.ipynb", as_version=4)
    page = html.unescape(formgrade_html(node, "ref_solution"))
    assert 'id="experiment_written"' in page and 'id="deep_stacks_written"' in page
    assert written_answer("ref_solution", PS1, "deep_stacks_written") in page
    for points in (2, 4):                                 # test_pe_table, test_pe_forward: full marks
        assert f"Checked by the grader outside the notebook: {points} / {points} points" in page


@pytest.mark.slow
def test_feedback_html_for_every_graded_submission(graded, example_course):
    run, _, _ = graded
    for (student, assignment), record in run.submissions.items():
        if record.status != "graded":
            assert record.feedback is None and not (example_course / "grades" / "feedback" / student / assignment).exists()
            continue
        page = Path(record.feedback)
        assert page == example_course / "grades" / "feedback" / student / assignment / f"{assignment}.html"
        text = page.read_text()
        assert "<html" in text[:500].lower() and all(grade_id in text for grade_id in record.checked), page


@pytest.mark.slow
def test_reports_csv_histogram_and_table(graded, expected):
    run, _, _ = graded
    students = read_roster(EXAMPLE / "students.csv")
    with open(run.reports["grades.csv"], newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted((r["student_id"], r["assignment"]) for r in rows) == sorted(
        (s, a) for s in students for a in run.assignments)
    totals = {(r["student_id"], r["assignment"]): float(r["score"]) for r in rows}
    assert totals["ref_solution", "ps2_relative_pe"] == run.table.total("ref_solution", "ps2_relative_pe")
    with open(run.reports["cells.csv"], newline="") as handle:
        cells = {(r["student"], r["assignment"], r["grade_id"]): float(r["points"]) for r in csv.DictReader(handle)}
    assert cells["partial", "ps1_learnable_pe", "test_pe_forward"] == expected["partial"]["ps1_learnable_pe"][
        "test_pe_forward"]
    assert run.reports["scores.png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = run.reports["table.txt"].read_text()
    assert "test_rel_attention" in table and "bug_skew_reversed" in table


# The catalogued mistakes each submission of the example class holds (examples.py of each assignment says how
# it was made): the insight report must rank exactly these.
MISTAKES = {
    ("bug_frozen_table", "ps1_learnable_pe"): {"table_frozen"},
    # partial's missing length check fails pe_too_long, a check of a property (issue 25), whose failures
    # the catalogue's variants are not compared with: its own message says what to do, and names no mistake
    ("partial", "ps1_learnable_pe"): {"dropout_missing"},
    ("bug_sign_flip", "ps2_relative_pe"): {"index_i_minus_j"},
    ("bug_no_clip", "ps2_relative_pe"): {"index_not_clipped"},
    ("bug_num_hiddens_scale", "ps2_relative_pe"): {"scale_num_hiddens_no_root"},
    ("bug_no_value_term", "ps2_relative_pe"): {"relative_values_missing"},
    ("bug_skew_reversed", "ps2_relative_pe"): {"skewed_rows_reversed"},     # its skew: no catalogued mistake
    ("partial", "ps2_relative_pe"): {"valid_lens_ignored"},
    ("partial", "ps3_rope"): {"alibi_formula_for_any_count", "alibi_no_causal_mask"},
    ("bug_sign_flip", "ps3_rope"): {"alibi_bias_sign"},
}
SITE_INSIGHT = ROOT / "site" / "pages" / "en" / "guide" / "insight.json"


@pytest.mark.slow
def test_the_insight_report_ranks_the_mistakes_the_bug_submissions_hold_and_names_nobody(graded):
    run, _, _ = graded
    insight = json.loads(run.reports["insight.json"].read_text())
    with open(run.reports["insight-labels.csv"], newline="") as handle:
        labels = {(row["student"], row["assignment"]): row["label"] for row in csv.DictReader(handle)}
    parts = {part["name"]: part for part in insight["assignments"]}
    held = {key: {m["name"] for m in parts[key[1]]["mistakes"] if labels.get(key) in m["examples"]}
            for key in MISTAKES}
    assert held == MISTAKES
    assert {(m["assignment"], m["name"]) for m in insight["ranked"]} == {
        (a, name) for (_, a), names in MISTAKES.items() for name in names}
    skew = {c["cause"] for cell in parts["ps2_relative_pe"]["cells"] if cell["grade_id"] == "test_skew"
            for check in cell["checks"] for c in check["causes"] if labels["bug_skew_reversed", "ps2_relative_pe"]
            in c["examples"]}
    assert "unexplained" in skew                       # a prompt to catalogue the reversed skew
    page = run.reports["insight.html"].read_text()
    for student in run.table.students:
        assert f">{student}<" not in page and f"/{student}/" not in page, student
    for label in labels.values():
        assert f'feedback/_anonymous/{label}/' in page


@pytest.mark.slow
def test_the_sites_insight_report_is_the_example_class_graded_today(graded):
    """site/pages/en/guide/insight.json, which the instructors' guide shows, is what grading the example class
    writes now (with no grading key set): regenerate it with `make demo` and `cp grades/insight.json
    site/pages/en/guide/insight.json`."""
    run, _, _ = graded
    assert not os.environ.get("ATTNKIT_GRADING_KEY"), "the committed labels are those of no grading key"
    assert json.loads(SITE_INSIGHT.read_text()) == json.loads(run.reports["insight.json"].read_text()), \
        "the site's insight.json has drifted: make demo && cp grades/insight.json site/pages/en/guide/insight.json"


@pytest.mark.slow
def test_grading_again_gives_the_same_table(graded, example_course, tmp_path):
    """Re-grade a subset of one of each kind (no class list, so nobody else is touched): same everything."""
    first, _, _ = graded
    subset = tmp_path / "subset"
    for student in REGRADED:
        shutil.copytree(example_course / "examples" / "example_class" / student, subset / student)
    again = grade(example_course, [], subset, reports_dir=tmp_path / "reports")
    for key, record in again.submissions.items():
        if key[0] in REGRADED and record.status != "missing":
            assert again.table.points[key] == first.table.points[key], key
            assert (record.status, record.issues) == (first.submissions[key].status, first.submissions[key].issues)
    assert Course(example_course).assignments() == first.assignments


# Plain nbgrader on the example class (issue 4's pipeline: submitted/, autograde, nbgrader feedback), on a
# subset that covers every kind of outcome; the 30 s infinite loop is left to the sandboxed runs above, and
# problem set 3 (whose experiment trains five models per notebook) to its reference solution.
NBGRADER_SUBSET = ["ref_solution", "blank", "bug_sign_flip", "bug_frozen_table", "broken_json",
                   "deleted_test_cell", "cheat_import"]
NBGRADER_PS3 = ["ref_solution"]


@pytest.fixture(scope="module")
def graded_by_nbgrader(tmp_path_factory):
    root = copy_course(tmp_path_factory.mktemp("kit_nbgrader"))
    handed_in = root / "handed_in"
    for student in NBGRADER_SUBSET:
        shutil.copytree(EXAMPLE / student, handed_in / student,
                        ignore=lambda folder, names: [] if student in NBGRADER_PS3 else ["ps3_rope"])
    with open(EXAMPLE / "students.csv", newline="") as source, open(root / "students.csv", "w") as target:
        rows = [row for row in source if row.split(",")[0] in NBGRADER_SUBSET + ["id"]]
        target.writelines(rows)
    before = file_hashes(handed_in)
    run = grade(root, [], handed_in, root / "students.csv", grader="nbgrader")
    return root, run, before, file_hashes(handed_in)


@pytest.mark.slow
def test_plain_nbgrader_gives_the_expected_points_and_files(graded_by_nbgrader, expected):
    root, run, before, after = graded_by_nbgrader
    wrong = {(student, assignment, grade_id): (run.table.points[student, assignment].get(grade_id), points)
             for student in NBGRADER_SUBSET for assignment, cells in expected[student].items()
             if assignment != "ps3_rope" or student in NBGRADER_PS3 for grade_id, points in cells.items()
             if grade_id != "reason" and run.table.points[student, assignment].get(grade_id) != points}
    assert not wrong, f"(student, assignment, cell): (scored, expected): {wrong}"
    assert before == after, "grading must never alter a handed-in file"
    placed = root / "submitted" / "ref_solution" / "ps2_relative_pe" / "ps2_relative_pe.ipynb"
    assert placed.is_file(), "nbgrader expects submissions under submitted/STUDENT/ASSIGNMENT/"
    assert (root / "feedback" / "ref_solution" / "ps2_relative_pe" / "ps2_relative_pe.html").is_file()
    assert (root / "autograded" / "bug_sign_flip" / "ps2_relative_pe" / "ps2_relative_pe.ipynb").is_file()


# --- generated files compared by what they say ---------------------------------------------------------------

def test_a_release_compares_by_content_not_by_the_tools_stamps(tmp_path):
    """A fresh generation that only a newer tool wrote otherwise (JSON laid out anew, new cell ids, another
    nbformat minor, another kernel's language_info) is no drift; a changed source line or nbgrader field is."""
    committed, fresh = tmp_path / "committed", tmp_path / "fresh"
    for folder in (committed, fresh):
        folder.mkdir()
    notebook = toy_notebook(solved=False)
    notebook.metadata["language_info"] = {"name": "python", "version": "3.11.7"}
    nbformat.write(notebook, committed / "toy.ipynb")
    restamped = json.loads((committed / "toy.ipynb").read_text())
    restamped["nbformat_minor"] = 9
    restamped["metadata"]["language_info"]["version"] = "3.14.0"
    for number, cell in enumerate(restamped["cells"]):
        cell["id"] = f"new-{number}"
        cell["source"] = "".join(cell["source"])                            # one string instead of lines
    (fresh / "toy.ipynb").write_text(json.dumps(restamped, indent=4, sort_keys=True))
    assert compare_trees(committed, fresh) == []
    restamped["cells"][2]["source"] = ["def square(x):\n", "    return x ** 2"]
    restamped["cells"][3]["metadata"]["nbgrader"]["points"] = 3
    (fresh / "toy.ipynb").write_text(json.dumps(restamped))
    assert compare_trees(committed, fresh) == ["differs: toy.ipynb (cells 3, 4)"]


@pytest.mark.parametrize("language, cut, skipped, timeout, line", [
    ("en", "[output cut by the grader: 123456 bytes in all", "[not run by the grader: the run ended there]",
     "ran over its time limit", "ValueError: no (line 2)"),
    ("fr", "[sortie coupée par le correcteur\u00a0: 123456 octets en tout",
     "[non exécutée par le correcteur\u00a0: l'exécution s'est arrêtée là]", "a dépassé sa limite de temps",
     "ValueError: no (ligne 2)"),
    ("zh", "[输出已被评分程序截断：共 123456 字节", "[评分程序没有运行此单元格：运行在此处结束]", "超过了时限",
     "ValueError: no（第 2 行）"),
])
def test_what_the_grader_adds_to_a_cells_outputs_is_in_the_hand_ins_language(language, cut, skipped, timeout, line):
    """The autograded copy's notes (an output cut, a cell not run, a timeout, the error's line) are the grader's
    words, worded in the hand-in's language; the sandbox's own text for a timeout is never shown."""
    from attnkit_grader import autograded_notebook as autograded

    report = {"cells": [{"index": 1, "status": "ok", "stdout": "y" * 50_000, "stdout_bytes": 123_456},
                        {"index": 2, "status": "skipped"},
                        {"index": 3, "status": "timeout", "error": "forged words from the sandbox"},
                        {"index": 4, "status": "error", "error": "ValueError: no", "line": 2}]}
    outputs = autograded.captured(report, [(2, Message.make("the run ended there"))], language)
    texts = {number: "".join(text for _, text in streams) for number, streams in outputs.items()}
    assert cut in texts["1"] and texts["2"] == skipped + "\n"
    assert texts["3"] == timeout + "\n" and "forged" not in texts["3"]
    assert texts["4"] == line + "\n"

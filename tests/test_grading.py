"""The grading pipeline (attnkit.grading): pre-check, reasons, release drift, and the example class graded.

Fast tests build tiny notebooks by hand and never start nbgrader. The slow ones grade the bundled example
class ONCE per session, in a temporary copy of the course (the repository is never written), and check
every score against tests/fixtures/example_class/expected_scores.json.
"""

import copy
import hashlib
import json
import shutil
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from attnkit.grading import Course, Issue, Job, Outcome, check_submission, grade, release
from attnkit.grading.autograder import Autograder, execution_issues, nbgrader_failure
from attnkit.grading.cli import main
from attnkit.grading.pipeline import read_roster
from attnkit.grading.release import compare_trees, drift

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "tests" / "fixtures" / "example_class"
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
    assert check_submission(submission, released, tmp_path / "source" / "toy") == []
    [(reason, fatal)] = reasons(check_submission(submission, released))
    assert not fatal and "'test_square' was edited" in reason


def test_precheck_needs_a_released_notebook(tmp_path):
    with pytest.raises(FileNotFoundError, match="release_dir"):
        check_submission(tmp_path, tmp_path)


# --- reasons read from nbgrader's output: fast --------------------------------------------------------------

def error_output(ename, evalue=""):
    return nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[])


def test_execution_issues_report_timeouts_and_crashing_setup_but_not_failed_tests():
    notebook = toy_notebook()
    notebook.cells[1].outputs = [error_output("ModuleNotFoundError", "No module named 'nope'")]
    notebook.cells[2].outputs = [error_output("KeyboardInterrupt"), error_output("CellTimeoutError")]
    notebook.cells[3].outputs = [error_output("AssertionError")]
    assert execution_issues(notebook, "toy.ipynb", 20) == [
        "toy.ipynb cell 2 ('setup') raised ModuleNotFoundError: No module named 'nope'",
        "toy.ipynb cell 3 ('square') ran over the 20 s limit and was interrupted",
    ]


def test_later_errors_are_counted_not_listed():
    notebook = toy_notebook()
    notebook.cells[1].outputs = [error_output("ImportError", "boom")]
    notebook.cells[2].outputs = [error_output("NameError", "name 'math' is not defined")]
    issues = execution_issues(notebook, "toy.ipynb", 20)
    assert issues == ["toy.ipynb cell 2 ('setup') raised ImportError: boom",
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
    reason = nbgrader_failure(log)
    assert reason.startswith("nbgrader could not grade it") and expected in reason


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
            yield Outcome(job, ok=False, seconds=0.0, issues=["pretend failure"])


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
        "cells.csv", "grades.csv", "report.json", "scores.png", "table.txt"]
    assert "bo / toy [rejected]: toy.ipynb is not valid JSON" in run.text()

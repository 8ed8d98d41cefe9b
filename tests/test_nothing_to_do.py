"""An instructor's command with nothing to work on ends with one sentence and exit status 0, never a traceback
(issue 44): release-feedback with nothing graded, grade with nothing handed in. Nothing is written either."""

import shutil

import pytest
from nbgrader.api import Gradebook

from attnkit_grader import cli
from attnkit_grader.course import Course, use_venv_tools
from conftest import copy_course

PS1, PS2 = "ps1_learnable_pe", "ps2_relative_pe"


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return copy_course(tmp_path_factory.mktemp("template") / "course")


@pytest.fixture
def course(template, tmp_path):
    return Course(shutil.copytree(template, tmp_path / "course"))


def said(capsys):
    """What the command printed, checked to be one sentence on stdout and nothing on stderr."""
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and err == "", err
    assert out.count("\n") == 1 and out.startswith("attnkit: nothing to do: "), out
    return out


def test_release_feedback_with_no_gradebook_says_so_and_creates_none(course, tmp_path, capsys):
    exchange = tmp_path / "exchange"
    (exchange / course.course_id).mkdir(parents=True)
    assert cli.main(["--root", str(course.root), "release-feedback", PS1, "--exchange", str(exchange)]) == 0
    assert f"{PS1}: nothing graded yet" in said(capsys)
    assert not (course.root / "gradebook.db").exists() and not (course.root / "feedback").exists()


def test_release_feedback_with_the_assignment_graded_for_nobody_says_so(course, tmp_path, capsys):
    use_venv_tools()
    with Gradebook(course.db_url, course.course_id) as gradebook:
        gradebook.add_assignment(PS1)
        gradebook.add_student("ada")
    assert cli.main(["--root", str(course.root), "release-feedback", PS1, "--exchange", str(tmp_path / "nowhere")]) == 0
    assert f"attnkit grade {PS1}" in said(capsys)                  # what to do first


def test_grade_before_anything_was_collected_says_so(course, capsys):
    assert cli.main(["--root", str(course.root), "-q", "grade", PS1]) == 0
    assert "nothing handed in" in said(capsys)
    assert not (course.root / "grades").exists() and not (course.root / "gradebook.db").exists()


def test_grade_with_hand_ins_of_other_assignments_only_says_so_and_writes_nothing(course, tmp_path, capsys):
    (course.root / "submitted" / "ada" / PS2).mkdir(parents=True)
    roster = tmp_path / "students.csv"
    roster.write_text("id\nada\nbo\n")
    assert cli.main(["--root", str(course.root), "-q", "grade", PS1, "--students", str(roster)]) == 0
    assert f"nothing handed in for {PS1}" in said(capsys)
    assert not (course.root / "grades").exists() and not (course.root / "gradebook.db").exists()


def test_grade_from_an_empty_folder_without_a_class_list_says_so(course, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert cli.main(["--root", str(course.root), "-q", "grade", PS1, "--submissions", str(tmp_path / "empty")]) == 0
    assert "no student folder" in said(capsys)


def test_a_mistyped_submissions_folder_is_still_an_error_naming_the_argument(course, tmp_path, capsys):
    assert cli.main(["--root", str(course.root), "-q", "grade", PS1, "--submissions", str(tmp_path / "typo")]) == 2
    assert "submissions:" in capsys.readouterr().err

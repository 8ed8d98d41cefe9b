"""A link planted in the folders attnkit grade writes (grades/, autograded/) is refused with its path named, before
any work, and what it points to is left untouched (issue 44: it died with a raw PermissionError traceback, after
the door had run). Hostile: the link points to a file the instructor must not overwrite. Fast: the refusal
comes before the canary, the gradebook and any sandbox."""

import os
import shutil

import pytest

from attnkit_grader import cli
from attnkit_grader.course import Course
from conftest import copy_course

PS1 = "ps1_learnable_pe"


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    root = copy_course(tmp_path_factory.mktemp("template") / "course")
    (root / "submitted" / "ada" / PS1).mkdir(parents=True)
    shutil.copy(root / "release" / PS1 / f"{PS1}.ipynb", root / "submitted" / "ada" / PS1)
    return root


@pytest.fixture
def course(template, tmp_path):
    """The course with a hand-in, and a file the instructor must not lose (writable: only the grader's care keeps
    it), whose bytes the test compares before and after."""
    precious = tmp_path / "precious.txt"
    precious.write_text("the instructor's own notes\n")
    return Course(shutil.copytree(template, tmp_path / "course", symlinks=True)), precious


def refused(course, capsys, *extra):
    """attnkit grade PS1: exit 2, one line on stderr, no traceback, nothing graded."""
    assert cli.main(["--root", str(course.root), "-q", "grade", PS1, *extra]) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and err.count("\n") == 1, err
    assert not (course.root / "gradebook.db").exists()
    return err


@pytest.mark.parametrize("planted", ["grades/table.txt", "grades/logs/ps1_learnable_pe--ada.log",
                                     "grades/records/ps1_learnable_pe.json", "grades/feedback/ada/ps1_learnable_pe"])
def test_a_link_planted_in_the_reports_folder_is_refused_by_path_and_its_target_kept(course, capsys, planted):
    course, precious = course
    link = course.root / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(precious)
    err = refused(course, capsys)
    assert f"reports: {link} is a symbolic link" in err
    assert precious.read_text() == "the instructor's own notes\n" and link.is_symlink()


def test_a_link_in_autograded_is_refused_by_path_and_its_target_kept(course, capsys):
    course, precious = course
    link = course.root / "autograded" / "ada" / PS1 / f"{PS1}.ipynb"
    link.parent.mkdir(parents=True)
    link.symlink_to(precious)
    err = refused(course, capsys)
    assert f"autograded: {link} is a symbolic link" in err
    assert precious.read_text() == "the instructor's own notes\n"


def test_a_reports_folder_that_is_a_link_is_refused(course, tmp_path, capsys):
    course, _ = course
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (course.root / "grades").symlink_to(elsewhere)
    err = refused(course, capsys)
    assert f"reports: {course.root / 'grades'} is a symbolic link" in err
    assert list(elsewhere.iterdir()) == []


def test_a_named_pipe_in_the_reports_folder_is_refused_rather_than_hanging(course, capsys):
    course, _ = course
    (course.root / "grades").mkdir()
    os.mkfifo(course.root / "grades" / "table.txt")
    assert f"reports: {course.root / 'grades' / 'table.txt'} is not a plain file" in refused(course, capsys)


def test_a_link_above_the_course_is_the_owners_business(course, tmp_path, capsys):
    """The course reached through a link of the instructor's own (a home on another disk) is no refusal: only
    links inside the folders the grader writes are. (Nothing is handed in for PS2: the run stops there, in one
    sentence.)"""
    course, _ = course
    alias = tmp_path / "alias"
    alias.symlink_to(course.root)
    (course.root / "grades").mkdir()
    assert cli.main(["--root", str(alias), "-q", "grade", "ps2_relative_pe"]) == 0
    out, err = capsys.readouterr()
    assert "nothing to do" in out and "symbolic link" not in out + err

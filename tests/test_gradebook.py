"""A course's gradebook is made in the grading process (attnkit_grader.course.create_gradebook), as nbgrader makes it.

nbgrader stamps a new gradebook with the revision it learns by running ``alembic heads``, a second interpreter
that cost every new course's first grading run about 3 s before anything else could start. The kit reads the
same revision in process: the database must be the one nbgrader would have made, and an existing one is left
as it is.
"""

import os
import sqlite3
import sys
from pathlib import Path

import nbgrader.api
from conftest import copy_course

from attnkit_grader.course import Course, create_gradebook


def layout(path):
    """The database's tables and indexes (their SQL) and its alembic revision."""
    with sqlite3.connect(path) as db:
        return (sorted(db.execute("SELECT type, name, sql FROM sqlite_master").fetchall()),
                db.execute("SELECT version_num FROM alembic_version").fetchall())


def test_the_gradebook_made_here_is_the_one_nbgrader_makes(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")   # nbgrader's alembic
    nbgrader.api.Gradebook(f"sqlite:///{tmp_path / 'nbgrader.db'}").close()
    create_gradebook(f"sqlite:///{tmp_path / 'kit.db'}")
    assert layout(tmp_path / "kit.db") == layout(tmp_path / "nbgrader.db")
    assert layout(tmp_path / "kit.db")[1][0][0]          # a revision, not an empty stamp


def test_a_course_opens_its_gradebook_without_running_alembic(tmp_path, monkeypatch):
    def refuse():
        raise AssertionError("nbgrader ran `alembic heads`")

    monkeypatch.setattr(nbgrader.api, "get_alembic_version", refuse)
    course = Course(copy_course(tmp_path / "course"))
    with course.gradebook() as gradebook:
        gradebook.add_student("ada")
    with course.gradebook() as gradebook:                # made once: the second opening keeps what the first wrote
        assert [s.id for s in gradebook.students] == ["ada"]


def test_an_existing_gradebook_is_left_as_it_is(tmp_path):
    path = tmp_path / "gradebook.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE kept (x INTEGER)")
    before = path.read_bytes()
    create_gradebook(f"sqlite:///{path}")
    assert path.read_bytes() == before


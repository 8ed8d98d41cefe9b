"""The reports folder covers the course (issue 44): grading one assignment, then another, leaves grades/ holding
both, and a student who handed nothing in is in every report with 0 and the reason.

Two students of the example class (the reference solution and the partial one) and one on the class list who
handed nothing in, graded in the sandbox without the canary (its own tests are in test_canary.py): slow.
"""

import csv
import json
import shutil
from pathlib import Path

import pytest
from conftest import copy_course

from attnkit_grader import Course
from attnkit_grader.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "example_class"
PS1, PS2 = "ps1_learnable_pe", "ps2_relative_pe"
HANDED_IN = ("ref_solution", "partial")
ABSENT = "absent"


@pytest.fixture(scope="module")
def graded_one_then_the_other(tmp_path_factory, sandboxes):
    """`attnkit grade ps1` then `attnkit grade ps2` on the same course: (course, what the second run printed)."""
    course = Course(copy_course(tmp_path_factory.mktemp("course")))
    for student in HANDED_IN:
        for assignment in (PS1, PS2):
            shutil.copytree(EXAMPLE / student / assignment, course.assignment_dir("submitted", assignment, student))
    roster = course.root / "students.csv"
    roster.write_text("id,first_name,last_name\n" + "".join(f"{s},{s.title()},Doe\n" for s in (*HANDED_IN, ABSENT)))
    import attnkit_grader.pipeline as pipeline
    original = pipeline.make_autograder
    pipeline.make_autograder = lambda *args, **options: original(*args, **{**options, "canary": False, "workers": 2})
    try:
        for assignment in (PS1, PS2):
            code = main(["--root", str(course.root), "-q", "grade", assignment, "--students", str(roster)])
            assert code == 0
    finally:
        pipeline.make_autograder = original
    return course


@pytest.mark.slow
def test_grading_one_assignment_then_another_keeps_both_in_every_report(graded_one_then_the_other):
    course = graded_one_then_the_other
    grades = course.root / "grades"
    with open(grades / "grades.csv", newline="") as handle:
        totals = {(row["student_id"], row["assignment"]): float(row["score"]) for row in csv.DictReader(handle)}
    assert set(totals) == {(s, a) for s in (*HANDED_IN, ABSENT) for a in (PS1, PS2)}
    assert totals["ref_solution", PS1] > 0 and totals["ref_solution", PS2] > 0
    with open(grades / "cells.csv", newline="") as handle:
        assert {row["assignment"] for row in csv.DictReader(handle)} == {PS1, PS2}
    report = json.loads((grades / "report.json").read_text())
    assert set(report["assignments"]) == {PS1, PS2}
    assert report["students"]["ref_solution"][PS1]["status"] == "graded"
    insight = json.loads((grades / "insight.json").read_text())
    assert [part["name"] for part in insight["assignments"]] == [PS1, PS2]
    assert any(m["assignment"] == PS1 for m in insight["ranked"])       # partial's PS1 mistakes are kept
    table = (grades / "table.txt").read_text()
    assert f"{PS1}\n" in table and f"{PS2}\n" in table
    page = (grades / "insight.html").read_text()
    course_view = page[page.index('id="insight-course"'):page.index('id="insight-ranked"')]
    assert f'href="#insight-{PS1}"' in course_view and f'href="#insight-{PS2}"' in course_view
    assert (grades / "records" / f"{PS1}.json").is_file() and (grades / "records" / f"{PS2}.json").is_file()


@pytest.mark.slow
def test_a_student_who_handed_nothing_in_is_listed_with_0_and_the_reason(graded_one_then_the_other):
    grades = graded_one_then_the_other.root / "grades"
    table = (grades / "table.txt").read_text()
    rows = [line.split() for line in table.splitlines() if line.startswith(ABSENT + " ")]
    assert len(rows) == 2 and all(row[-2:] == ["0", "missing"] for row in rows), table
    assert f"{PS1}: {ABSENT}" in table and f"{PS2}: {ABSENT}" in table         # the 'Nothing handed in' section
    report = json.loads((grades / "report.json").read_text())
    for assignment in (PS1, PS2):
        entry = report["students"][ABSENT][assignment]
        assert (entry["status"], entry["total"]) == ("missing", 0)
        assert entry["issues"] == [f"nothing handed in (no folder {ABSENT}/{assignment}/)"]
    with open(grades / "cells.csv", newline="") as handle:
        absent = [row for row in csv.DictReader(handle) if row["student"] == ABSENT]
    assert absent and all(float(row["points"]) == 0 for row in absent)


@pytest.mark.slow
def test_grading_one_student_keeps_the_classmates_results(graded_one_then_the_other, capsys, monkeypatch):
    """`attnkit grade ps1 --student partial` (what the hub's Formgrader Autograde button runs) grades partial's
    hand-in alone: the output speaks of partial only, and every report still holds the classmates' results."""
    course = graded_one_then_the_other
    grades = course.root / "grades"
    before = {record["student"]: record for record in json.loads((grades / "records" / f"{PS1}.json").read_text())}
    import attnkit_grader.pipeline as pipeline
    original = pipeline.make_autograder
    monkeypatch.setattr(pipeline, "make_autograder",
                        lambda *args, **options: original(*args, **{**options, "canary": False, "workers": 1}))
    capsys.readouterr()
    assert main(["--root", str(course.root), "-q", "grade", PS1, "--student", "partial"]) == 0
    printed = capsys.readouterr().out
    assert "partial" in printed and "ref_solution" not in printed and ABSENT not in printed, printed
    after = {record["student"]: record for record in json.loads((grades / "records" / f"{PS1}.json").read_text())}
    assert set(after) == {*HANDED_IN, ABSENT}
    assert {s: after[s] for s in after if s != "partial"} == {s: before[s] for s in before if s != "partial"}
    assert after["partial"]["status"] == before["partial"]["status"] == "graded"
    assert after["partial"]["cells"] == before["partial"]["cells"]      # the same hand-in, judged the same
    report = json.loads((grades / "report.json").read_text())
    assert report["students"]["ref_solution"][PS1]["status"] == "graded"
    assert report["students"][ABSENT][PS1]["status"] == "missing"
    insight = json.loads((grades / "insight.json").read_text())
    assert any(m["assignment"] == PS1 for m in insight["ranked"])
    assert main(["--root", str(course.root), "-q", "grade", PS1, "--student", "nobody"]) == 2
    assert "student: nobody" in capsys.readouterr().err

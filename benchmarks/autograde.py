"""Seconds per submission to grade the example class: the kit's pipeline against plain nbgrader.

Usage: .venv/bin/python benchmarks/autograde.py      (or: make benchmark-grading)

Each variant runs in its own temporary copy of the course (nbgrader_config.py, source/, release/) with
the example class as submissions, so the repository is never written and no run warms another's files:

  pipeline      attnkit_grader.grade with --grader nbgrader: pre-check, autograde in this process,
                feedback, reports (benchmarks/grading.py times the sandboxed grader)
  per-student   plain `nbgrader autograde ASSIGNMENT --student S --force`, one command per submission
  batch         plain `nbgrader autograde ASSIGNMENT --force`, one command per assignment

Not a test: timings depend on the machine and on what else runs on it.
"""

import logging
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from attnkit_grader import Course, grade
from attnkit_grader.course import use_venv_tools
from attnkit_grader.intake import class_list, read_roster
from attnkit_grader.pipeline import EXAMPLE_CLASS

ROOT = Path(__file__).resolve().parents[1]
NBGRADER = [sys.executable, "-m", "nbgrader"]


def course_copy(scratch):
    """A fresh copy of the course (config, source/, release/) under ``scratch``, released into its gradebook."""
    root = Path(scratch) / "course"
    root.mkdir()
    shutil.copy2(ROOT / "nbgrader_config.py", root)
    for folder in ("source", "release"):
        shutil.copytree(ROOT / folder, root / folder)
    return root


def time_pipeline(example, students_csv):
    """(wall seconds of the whole grade call, seconds spent in autograde)."""
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as scratch:
        course = Course(course_copy(scratch))
        start = time.perf_counter()
        run = grade(course, [], example, students_csv, grader="nbgrader")
        wall = time.perf_counter() - start
        return wall, sum(s.seconds or 0.0 for s in run.submissions.values())


def prepare_plain(root, example, students_csv, assignments, handed_in):
    """What an instructor does by hand before autograding: release, import students, copy submissions."""
    for assignment in assignments:
        nbgrader(root, "generate_assignment", assignment, "--force")
    nbgrader(root, "db", "student", "import", str(students_csv))
    for student, assignment in handed_in:
        shutil.copytree(example / student / assignment, root / "submitted" / student / assignment)


def time_plain(example, students_csv, assignments, handed_in, per_student):
    """Wall seconds of plain nbgrader autograde over ``handed_in`` [(student, assignment)]."""
    with tempfile.TemporaryDirectory(prefix="bench-plain-") as scratch:
        root = course_copy(scratch)
        prepare_plain(root, example, students_csv, assignments, handed_in)
        start = time.perf_counter()
        if per_student:
            for student, assignment in handed_in:
                nbgrader(root, "autograde", assignment, "--student", student, "--force")
        else:
            for assignment in assignments:
                nbgrader(root, "autograde", assignment, "--force")
        return time.perf_counter() - start


def nbgrader(root, *args):
    """Run one nbgrader command in the course ``root``; failures are expected for broken submissions."""
    return subprocess.run(NBGRADER + list(args), cwd=root, capture_output=True, text=True).returncode


def main():
    logging.getLogger("attnkit").setLevel(logging.ERROR)   # the pipeline's progress lines are not figures
    use_venv_tools()
    example = ROOT / EXAMPLE_CLASS
    students_csv = example / "students.csv"
    assignments = Course(ROOT).assignments()
    students = class_list(read_roster(students_csv), example)
    handed_in = [(s, a) for s in students for a in assignments if (example / s / a).is_dir()]
    count = len(handed_in)
    wall, autograde = time_pipeline(example, students_csv)
    per_student = time_plain(example, students_csv, assignments, handed_in, per_student=True)
    batch = time_plain(example, students_csv, assignments, handed_in, per_student=False)
    print(f"example class: {count} submissions handed in ({len(students)} students, "
          f"{len(assignments)} assignments); seconds per submission handed in")
    print(f"{'variant':52s} {'total s':>8s} {'s/submission':>13s}")
    rows = [("kit pipeline: attnkit grade (all steps)", wall),
            ("  of which autograde (in-process nbgrader)", autograde),
            ("plain nbgrader autograde --student S --force", per_student),
            ("plain nbgrader autograde --force (one per assignment)", batch)]
    for name, seconds in rows:
        print(f"{name:52s} {seconds:8.1f} {seconds / count:13.2f}")


if __name__ == "__main__":
    main()

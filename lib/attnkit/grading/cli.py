"""Command line of the grading pipeline: ``python -m attnkit.grading`` (console script: ``attnkit``).

  release [ASSIGNMENT...] [--check]   student versions from source/ (--check: report drift, exit 1 if any)
  grade ASSIGNMENT... --submissions DIR [--students CSV] [--reports DIR]
  demo [--reports DIR]                grade the bundled example class in the kit's repository

Exit status: 0 done (bad submissions are reported, they do not fail the run), 1 release drift,
2 usage or course errors.
"""

import argparse
import logging
import sys
from pathlib import Path

from .course import Course
from .pipeline import demo, grade
from .release import NbgraderError, drift, release


def parser():
    top = argparse.ArgumentParser(prog="attnkit", description="Grading pipeline of the attention course kit.")
    top.add_argument("--root", type=Path, default=None, metavar="DIR",
                     help="course folder holding nbgrader_config.py (default: current folder; "
                          "for demo: the kit's repository)")
    top.add_argument("-q", "--quiet", action="store_true", help="no progress lines, only the results")
    commands = top.add_subparsers(dest="command", required=True)

    rel = commands.add_parser("release", help="nbgrader generate_assignment --force for each assignment")
    rel.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="default: every folder in source/")
    rel.add_argument("--check", action="store_true",
                     help="regenerate in a temporary copy and compare with release/ (exit 1 on drift)")

    run = commands.add_parser("grade", help="enrol, pre-check, autograde, feedback, export and report")
    run.add_argument("assignments", nargs="+", metavar="ASSIGNMENT")
    run.add_argument("--submissions", type=Path, required=True, metavar="DIR",
                     help="folder of STUDENT/ASSIGNMENT/ folders (only read)")
    run.add_argument("--students", type=Path, metavar="CSV", help="class list CSV with an 'id' column (nbgrader's format)")
    run.add_argument("--reports", type=Path, metavar="DIR", help="where the reports go (default: COURSE/grades)")

    example = commands.add_parser("demo", help="grade the example class (tests/fixtures/example_class)")
    example.add_argument("--reports", type=Path, metavar="DIR", help="where the reports go (default: COURSE/grades)")
    return top


def main(argv=None):
    args = parser().parse_args(argv)
    configure_logging(logging.WARNING if args.quiet else logging.INFO)
    try:
        return COMMANDS[args.command](args)
    except (ValueError, FileNotFoundError, NbgraderError) as error:
        print(f"attnkit: error: {error}", file=sys.stderr)
        return 2


def run_release(args):
    course = Course(args.root or Path.cwd())
    if not args.check:
        for assignment in release(course, args.assignments):
            print(f"released {assignment} -> {course.assignment_dir('release', assignment)}")
        return 0
    drifted = 0
    for assignment, differences in drift(course, args.assignments).items():
        print(f"{assignment}: {'DRIFT' if differences else 'up to date'}")
        for line in differences:
            print(f"  {line}")
        drifted += bool(differences)
    return 1 if drifted else 0


def run_grade(args):
    course = Course(args.root or Path.cwd())
    show(grade(course, args.assignments, args.submissions, args.students, args.reports))
    return 0


def run_demo(args):
    show(demo(args.root, args.reports))
    return 0


def show(run):
    print(run.text())
    graded = sum(s.status == "graded" for s in run.submissions.values())
    print(f"\n{graded} of {len(run.submissions)} submissions graded; reports:")
    for path in run.reports.values():
        print(f"  {path}")


def configure_logging(level):
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("attnkit")
    logger.handlers[:] = [handler]
    logger.setLevel(level)
    logger.propagate = False


COMMANDS = {"release": run_release, "grade": run_grade, "demo": run_demo}

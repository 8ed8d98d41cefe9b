"""Grading pipeline of the course kit: release, pre-check, autograde, feedback and reports, on nbgrader.

Command line: ``python -m attnkit.grading {release,grade,demo}`` (see :mod:`attnkit.grading.cli`).
Library: :func:`grade` runs the instructor's whole grading workflow; the autograde step sits behind
:class:`Autograder` so that another implementation (sandboxed, parallel) can replace
:class:`NbgraderAutograder`.
"""

from .autograder import Autograder, Job, NbgraderAutograder, Outcome
from .course import Course
from .pipeline import GradingRun, Submission, demo, grade
from .precheck import Issue, check_submission
from .release import NbgraderError, drift, release

__all__ = [
    "Autograder", "Course", "GradingRun", "Issue", "Job", "NbgraderAutograder", "NbgraderError", "Outcome",
    "Submission", "check_submission", "demo", "drift", "grade", "release",
]

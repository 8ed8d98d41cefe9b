"""Hidden part of problem set 1's test cells under plain nbgrader: one function per test cell.

Called from the hidden part of a cell with the student's objects, e.g. ``hidden.pe_table(checks,
LearnablePositionalEncoding)``; see ``attnkit_grader.judging.in_kernel``.
"""

from attnkit_grader.authoring import run

from .assignment import ASSIGNMENT


def pe_table(checks, cls):
    run(checks, ASSIGNMENT, "test_pe_table", {"LearnablePositionalEncoding": cls})


def pe_forward(checks, cls):
    run(checks, ASSIGNMENT, "test_pe_forward", {"LearnablePositionalEncoding": cls})

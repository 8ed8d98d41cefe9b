"""How the sandbox's runner is called: its command line and defaults, the one contract both sides read.

The trusted grader builds the command with :func:`argv` and checks a door request's numbers against the
defaults here; the runner (:mod:`.runner`, the program that runs inside bubblewrap) reads it with
:func:`parse`. Neither side imports the other: a change in the runner never reaches the grader's root
door, and the two cannot disagree on an option's name or default. Only ``argparse``: importing this
loads nothing of the student package, torch or numpy.
"""

import argparse

__all__ = ["CELL_TIMEOUT", "EXIT_STUCK", "LANGUAGES", "LANGUAGE_VARIABLE", "MODULE", "STUCK_GRACE", "argv", "parse"]

MODULE = "attnkit_sandbox.runner"   # run as ``python -m MODULE``
CELL_TIMEOUT = 30.0                 # seconds per cell and probe, as nbgrader_config.py sets for nbgrader
STUCK_GRACE = 5.0                   # seconds a timed-out cell may take to give up before the process ends
EXIT_STUCK = 70                     # the runner's exit status when a cell or probe ignored its timeout
# attnkit.i18n's languages and its environment variable, named here so that reading the command line imports
# nothing of attnkit (tests/test_languages.py holds the two to the same values)
LANGUAGES = ("en", "fr", "zh")
LANGUAGE_VARIABLE = "ATTNKIT_LANG"


def argv(scratch, *, channel=None, cell_timeout=CELL_TIMEOUT, grace=STUCK_GRACE, reap=False, assignment=None,
         probes=None, skip=(), language=None, python="python"):
    """The runner's command line over the folder ``scratch`` (see :func:`parse` for each option)."""
    if language is not None and language not in LANGUAGES:
        raise ValueError(f"language: expected one of {LANGUAGES}, got {language!r}")
    command = [python, "-m", MODULE, str(scratch)]
    if channel is not None:
        command += ["--channel", str(channel)]
    command += ["--cell-timeout", str(cell_timeout), "--grace", str(grace)]
    if reap:
        command.append("--reap")
    if assignment:
        command += ["--assignment", assignment]
    if probes:
        command += ["--probes", probes]
    if skip:
        command += ["--skip", ",".join(str(int(n)) for n in skip)]
    if language:
        command += ["--language", language]
    return command


def parse(args=None):
    """The runner's options from ``args`` (default: ``sys.argv[1:]``)."""
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description="Run one submitted notebook inside "
                                     "the sandbox: its code cells in order in one namespace, then the probes.")
    parser.add_argument("scratch", help="folder holding notebook.ipynb and the probe inputs")
    parser.add_argument("--assignment", help="run the probes of this assignment")
    parser.add_argument("--probes", help="module defining PROBES (default: attnkit_assignments.ASSIGNMENT.probes)")
    parser.add_argument("--channel", type=int, help="file descriptor to send progress and the files on")
    parser.add_argument("--cell-timeout", type=float, default=CELL_TIMEOUT, help="seconds per cell and probe")
    parser.add_argument("--skip", default="", help="comma-separated cell numbers (from 1) not to run")
    parser.add_argument("--grace", type=float, default=STUCK_GRACE,
                        help="seconds past its timeout before a stuck cell ends the process (default: %(default)s)")
    parser.add_argument("--language", choices=LANGUAGES,
                        help="the language attnkit's messages are printed in (the hand-in's edition; a "
                             "set_language call in the notebook still wins, as in the student's kernel)")
    parser.add_argument("--reap", action="store_true",
                        help="after each cell and probe, kill every other process of the PID namespace (only "
                             "in the sandbox's own PID namespace; refused when run as root)")
    return parser.parse_args(args)

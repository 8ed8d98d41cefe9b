"""One notebook, end to end in a sandbox: the runner's job, its report, and the reason a run ended.

The work is split where the privileges are: :func:`prepare` writes the scratch folder and
:func:`interpret` reads what came back, both in the grading process; in between a *launcher* runs the
runner over that folder. The launcher is either a :class:`~.bwrap.Sandbox` (this process starts
bubblewrap itself: as root, or with user namespaces) or a :class:`~.door.Door` (a root process started
through sudo takes the folder's files and the :class:`RunnerJob` as data, and answers with the
sandbox's result). Both have ``launch(job, scratch_dir, limits) -> SandboxResult`` and ``limits``.
"""

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from attnkit_sandbox import channel, command, remarks
from attnkit_sandbox.cells import EXPECTED, NOTEBOOK

from ..results import Message, message
from .bwrap import CHANNEL, SCRATCH, SandboxResult
from .reasons import human

# What a scratch folder may hold when a run starts (the runner's inputs), each written by the grading process.
SCRATCH_FILES = (NOTEBOOK, channel.INPUTS_NPZ, channel.INPUTS_JSON, EXPECTED)


@dataclass
class NotebookRun:
    """A notebook run in the sandbox: the runner's report (or one rebuilt from its progress), the reason, and
    the probes' outputs and errors (:func:`attnkit_sandbox.channel.decode_outputs`), decoded from memory."""

    report: dict
    reason: object        # a Message (a remark of the runner) or a text made by a lower layer, or None
    result: SandboxResult
    outputs: dict
    errors: dict


@dataclass(frozen=True)
class RunnerJob:
    """What the runner is asked to do besides reading the scratch folder: a name and numbers, no code.

    ``probes``: a module other than ``attnkit_assignments.<assignment>.probes`` (tests only; a door refuses it);
    ``language``: the hand-in's edition ('en', 'fr', 'zh'), which the checks print their messages in.
    """

    assignment: str = None
    cell_timeout: float = command.CELL_TIMEOUT
    grace: float = command.STUCK_GRACE
    skip: tuple = ()
    probes: str = None
    language: str = None

    def argv(self):
        """The runner's command line inside the sandbox."""
        return command.argv(SCRATCH, channel=CHANNEL, cell_timeout=self.cell_timeout, grace=self.grace, reap=True,
                            assignment=self.assignment, probes=self.probes, skip=self.skip, language=self.language)


def run_notebook(sandbox, notebook, scratch_dir, assignment=None, inputs=None, limits=None, probes=None,
                 expected=None, cell_timeout=command.CELL_TIMEOUT, skip=(), grace=command.STUCK_GRACE, language=None):
    """Run ``notebook`` (a path) with the runner through ``sandbox`` (a launcher, see the module's docstring)
    over ``scratch_dir`` (its inputs are written there; nothing comes back through it).

    ``inputs``: the probe inputs (channel.write_inputs); ``expected``: the release's {grade_id: cell_type}
    (attnkit_sandbox.cells.expected_cells) for remarks on deleted and retyped cells; ``probes``: a module other than
    attnkit_assignments.<assignment>.probes (it must be importable in the sandbox); ``skip``: cell numbers not to run;
    ``grace``: seconds a cell may ignore its timeout before the runner ends itself; ``language``: what the
    checks print their messages in (the hand-in's edition; None: the runner's default, English).
    """
    scratch_dir = prepare(scratch_dir, notebook, inputs, expected)
    if language is not None and language not in command.LANGUAGES:
        raise ValueError(f"language: expected one of {command.LANGUAGES}, got {language!r}")
    job = RunnerJob(assignment, float(cell_timeout), float(grace), tuple(int(n) for n in skip), probes, language)
    result = sandbox.launch(job, scratch_dir, limits or sandbox.limits)
    return interpret(result, assignment, cell_timeout)


def prepare(scratch_dir, notebook, inputs=None, expected=None):
    """The scratch folder of one run: a copy of ``notebook``, the probe inputs, the release's cell types."""
    if Path(notebook).is_symlink():
        raise ValueError(f"notebook: {notebook} is a symbolic link; copy the submission's own file")
    scratch_dir = Path(scratch_dir)
    scratch_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(notebook, scratch_dir / NOTEBOOK)
    if inputs is not None:
        channel.write_inputs(scratch_dir, inputs)
    if expected is not None:
        (scratch_dir / EXPECTED).write_text(json.dumps({"cells": expected}), encoding="utf-8")
    return scratch_dir


def interpret(result, assignment, cell_timeout):
    """The :class:`NotebookRun` of a finished run, from the files it sent (in memory, read as hostile): its
    report (or one rebuilt from its progress), the one-line reason, the probes' outputs and errors."""
    report = channel.parse_report(result.files[channel.REPORT_JSON]) if channel.REPORT_JSON in result.files else {}
    outputs, errors = channel.decode_outputs(result.files.get(channel.OUTPUTS_NPZ), report)
    progress = channel.decode_jsonl(result.files.get(channel.PROGRESS_JSONL, b""))
    if not report:
        report = partial_report(progress, assignment, channel.REPORT_JSON in result.files)
    reason = combined_reason(result, report, progress, cell_timeout)
    return NotebookRun(report, reason, result, outputs, errors)


def partial_report(progress, assignment, unreadable=False):
    """What the progress messages say, for a run that ended before the runner wrote a readable report."""
    cells = [event["cell"] for event in progress
             if event.get("event") == "done" and isinstance(event.get("cell"), dict)]
    return {"version": 1, "status": "unreadable-report" if unreadable else "crashed", "reason": None,
            "remarks": [], "cells": cells, "probes": {}, "assignment": assignment}


def current_step(progress):
    """What was running when the messages stopped, as a Message ('cell 4 ('grade_id')', 'probe NAME'), or None.
    The progress comes from the sandbox: a cell's number and grade_id are checked as a remark's are."""
    step = None
    for event in progress:
        kind = event.get("event")
        if kind == "stuck":
            return Message.text(channel.clip_message(event.get("step"), 120))
        if kind == "start":
            if "probe" in event:
                step = Message.make(PROBE, name=channel.clip_message(event["probe"], 64))
            else:
                step = cell_message(event.get("cell"), event.get("grade_id"))
        elif kind == "done":
            step = None
    return step


def combined_reason(result, report, progress, cell_timeout):
    """One line, as a Message: the sandbox's reason with the step it happened in, else the runner's own reason."""
    step = current_step(progress)
    stuck = any(event.get("event") == "stuck" for event in progress)
    if stuck and result.exit_code == command.EXIT_STUCK and not result.timed_out:
        return Message.make(STUCK, step=step or Message.make(UNKNOWN_STEP), seconds=float(cell_timeout))
    if result.reason:
        if step and (result.exit_code not in (None, 0) or result.timed_out or result.output_exceeded):
            return Message.make(DURING, reason=message(result.reason), step=step)
        return message(result.reason)               # the sandbox's own words (reasons.exit_reason)
    if report.get("status") == "crashed":
        return Message.make(CRASHED_DURING, step=step) if step else Message.make(CRASHED)
    if report.get("status") == "unreadable-report":
        return Message.make(UNREADABLE_REPORT, size=human(channel.MAX_REPORT_BYTES))
    reason = report.get("reason")
    if isinstance(reason, dict):
        return remark_message(reason)
    return Message.text(channel.clip_message(reason)) if isinstance(reason, str) else None


# How the grader words what the runner names by numbers (message ids of the grader's catalog).
CELL = "cell {index}"
CELL_NAMED = "cell {index} ('{grade_id}')"
CELL_ID = "cell '{grade_id}'"
PROBE = "probe {name}"
UNKNOWN_STEP = "a step the grader could not name"
STUCK = "{step} ran over the {seconds:g} s limit and ignored the interrupt; the run was stopped"
DURING = "{reason} during {step}"
CRASHED = "the run ended before the grader's report was written"
CRASHED_DURING = "the run ended before the grader's report was written during {step}"
UNREADABLE_REPORT = "the grader's report was unreadable (not JSON, or over {size})"
UNREADABLE_REMARK = "the grader's runner sent a remark it never makes; see the run's log"
TEMPLATES = (CELL, CELL_NAMED, CELL_ID, PROBE, UNKNOWN_STEP, STUCK, DURING, CRASHED, CRASHED_DURING, UNREADABLE_REPORT,
             UNREADABLE_REMARK)


def cell_message(index, grade_id):
    """'cell 4' or 'cell 4 ('grade_id')' as a Message, from a number and grade_id the sandbox sent (checked as a
    remark's are: a cell it cannot name is 'a step the grader could not name')."""
    accepted = remarks.accept(remarks.remark(remarks.KILLED, index, grade_id, count=0))
    if accepted is None:
        return Message.make(UNKNOWN_STEP)
    if index is None:
        return Message.make(CELL_ID, grade_id=grade_id)            # a cell of the release the notebook lacks
    return (Message.make(CELL_NAMED, index=index, grade_id=grade_id) if accepted[1]["grade_id"]
            else Message.make(CELL, index=index))


def remark_message(data):
    """The Message of a remark the runner sent (:mod:`attnkit_sandbox.remarks`), read as hostile: one the runner
    does not make (another template, other arguments, values of another kind) is never shown."""
    accepted = remarks.accept(data)
    if accepted is None:
        return Message.make(UNREADABLE_REMARK)
    template, args = accepted
    if "index" not in args:                                         # a remark on the whole notebook
        return Message.make(template, **args)
    index, grade_id = args.pop("index"), args.pop("grade_id")
    return Message.make(template, cell=cell_message(index, grade_id), **args)

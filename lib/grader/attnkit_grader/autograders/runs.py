"""What a sandboxed run brought back, read as untrusted: the runner's cells, its remarks, the cell it died in.

Everything here comes from a report the runner wrote inside the sandbox (or rebuilt from its progress
messages): types are checked, text is clipped, nothing is trusted for points.
"""

import re

from attnkit_sandbox import channel, remarks

from ..isolation.notebook_run import cell_message, remark_message
from ..results import Message
from .base import issues_from_cells

CELL_WORDS = 200                  # characters kept of a cell's error for the reports


def dying_cell(run):
    """The cell number a run ended in when it ended abnormally (crash, wall clock, flood, stuck), else None."""
    if run.result.reason is None and run.report.get("status") != "crashed":
        return None
    current = None
    for event in channel.decode_jsonl(run.result.files.get(channel.PROGRESS_JSONL, b"")):
        kind = event.get("event")
        if kind == "start":
            current = event.get("cell") if isinstance(event.get("cell"), int) else None
        elif kind == "done":
            current = None
    return current


def plain_cells(report):
    """The runner's cell records (untrusted JSON) reduced to index (int), grade_id, status, error, clipped."""
    cells = []
    for cell in report.get("cells", []) if isinstance(report.get("cells"), list) else []:
        if not isinstance(cell, dict):
            continue
        index = cell.get("index")
        grade_id = cell.get("grade_id")
        cells.append({"index": index if isinstance(index, int) and not isinstance(index, bool) else None,
                      "grade_id": clip(grade_id, 64) if isinstance(grade_id, str) else None,
                      "status": clip(cell.get("status"), 20), "error": clip(cell.get("error"))})
    return cells


def clip(text, limit=CELL_WORDS):
    return channel.clip_message(text, limit) if isinstance(text, str) else ""


def names_cell(text, number):
    """True when ``text`` (a reason) already speaks of cell ``number``."""
    return (bool(text) and number is not None
            and re.search(rf"\bcell {re.escape(str(number))}\b", str(text)) is not None)


def cell_issues(report, release, reason):
    """Remarks on the run (Messages), in the words the nbgrader path uses: timeouts, errors outside test
    cells, then the runner's own remarks (templates and values from the sandbox, read as hostile)."""
    tests = {grade_id for grade_id, cell in release.graded.items() if cell.kind == "test"}
    outcomes = [(cell_message(cell["index"], cell["grade_id"]), cell["status"], cell.get("grade_id") in tests,
                 Message.make("ran over its time limit") if cell["status"] == "timeout" else cell["error"])
                for cell in plain_cells(report) if not names_cell(reason, cell["index"])]   # the reason says it
    issues = issues_from_cells(outcomes)
    for remark in report.get("remarks", []) if isinstance(report.get("remarks"), list) else []:
        if isinstance(remark, dict) and remark.get("template") != remarks.MISSING:   # the release's cell, put back
            issue = remark_message(remark)
            if issue not in issues:
                issues.append(issue)
    return issues

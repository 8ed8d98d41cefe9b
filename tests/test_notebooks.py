"""The lecture notebooks are committed executed, in order, with figures, and few nbval markers.

nbval itself (make test: pytest --nbval course) re-runs each notebook and compares every output;
these checks catch what nbval cannot: unexecuted or out-of-order cells, markers that hide too much.
"""

import json
from pathlib import Path

import pytest

from attnkit_grader import registry

ROOT = Path(__file__).resolve().parents[1]
LECTURES = ["01_self_attention", "02_cnn_rnn_attention", "03_positional_encoding", "04_multihead_attention"]
MAX_IGNORED_OUTPUTS = 3
ASSIGNMENTS = registry.assignments()


def load(name):
    path = ROOT / "course" / f"{name}.ipynb"
    assert path.exists(), f"missing lecture {path.relative_to(ROOT)}"
    return json.loads(path.read_text())


def code_cells(notebook):
    return [c for c in notebook["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]


def markdown(notebook):
    return "\n".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown")


@pytest.mark.parametrize("name", LECTURES)
def test_lecture_is_executed_top_to_bottom_without_errors(name):
    cells = code_cells(load(name))
    counts = [c["execution_count"] for c in cells]
    assert counts == list(range(1, len(cells) + 1)), f"{name}: run it from a fresh kernel, in order"
    errors = [o for c in cells for o in c["outputs"] if o["output_type"] == "error"]
    assert not errors, f"{name}: committed error outputs"
    stderr = ["".join(o["text"]) for c in cells for o in c["outputs"]
              if o["output_type"] == "stream" and o["name"] == "stderr"]
    assert not stderr, f"{name}: output on stderr (warnings?): {stderr[:2]}"


@pytest.mark.parametrize("name", LECTURES)
def test_lecture_has_figures_and_few_nbval_markers(name):
    cells = code_cells(load(name))
    figures = sum("image/png" in o.get("data", {}) for c in cells for o in c["outputs"])
    assert figures >= 2, f"{name}: expected its figures as outputs, found {figures}"
    first_lines = ["".join(c["source"]).lstrip().splitlines()[0] for c in cells]
    ignored = sum("NBVAL_IGNORE_OUTPUT" in line for line in first_lines)
    skipped = sum("NBVAL_SKIP" in "".join(c["source"]) for c in cells)
    assert ignored <= MAX_IGNORED_OUTPUTS and not skipped, (
        f"{name}: {ignored} cells ignore their output and {skipped} are skipped; only timings may vary")


@pytest.mark.parametrize("name", LECTURES)
def test_lecture_ends_with_summary_and_exercises_pointing_to_real_assignments(name):
    text = markdown(load(name))
    assert "## Summary" in text and "## Exercises" in text, f"{name}: needs Summary and Exercises sections"
    named = [a for a in ASSIGNMENTS if a in text]
    assert named, f"{name}: graded exercises should name their assignment ({ASSIGNMENTS})"
    for assignment in named:
        assert (ROOT / "source" / assignment).is_dir(), f"{name} points to missing source/{assignment}"

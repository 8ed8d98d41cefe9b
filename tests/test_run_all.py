"""Run All runs to the end of an assignment (attnkit_grader.run_all): the cells that run the student's code carry
``raises-exception`` in every notebook of every edition, a notebook of stubs runs to its last cell under nbclient
(as JupyterLab's Run All does in tests_browser/), and, since the tag lets nbclient and nbval accept an error, the
instructor's notebook and the solved release are run here and must show no error and no stderr at all.
"""

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from attnkit_grader.editions import TRANSLATIONS, split
from attnkit_grader import registry
from attnkit_grader.run_all import TAG, tagged

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = registry.assignments()
FOLDERS = sorted(ASSIGNMENTS + [p.name for p in (ROOT / TRANSLATIONS).iterdir() if p.is_dir()])


def notebook_of(step, folder):
    name = split(folder, ASSIGNMENTS)[0]
    base = ROOT / (step if step != "source" or folder in ASSIGNMENTS else TRANSLATIONS)
    return nbformat.read(base / folder / f"{name}.ipynb", as_version=4)


def tagged_ids(notebook):
    return {cell.id for cell in notebook.cells if TAG in cell.metadata.get("tags", [])}


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_cells_that_run_the_students_code_carry_raises_exception(folder):
    """In source/ (or translations/) and release/: exactly the answer cells, the test cells and the cells using a
    name an answer defines; the release keeps what the source says (nbgrader keeps tags)."""
    source = notebook_of("source", folder)
    expected = {source.cells[index].id for index in tagged(source.cells)}
    assert {c.metadata["nbgrader"]["grade_id"] for c in source.cells if c.id in expected} >= \
        {c.metadata["nbgrader"]["grade_id"] for c in source.cells
         if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")}
    assert tagged_ids(source) == expected, "run python -c 'from attnkit_grader.run_all import tag' over it (see its doc)"
    assert tagged_ids(notebook_of("release", folder)) == expected


def execute(notebook, folder):
    """``notebook`` run top to bottom by nbclient in a fresh kernel, in ``folder``; returns it with its outputs."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    client = NotebookClient(notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(folder)}},
                            env=env)
    client.execute()
    return notebook


def errors_and_stderr(notebook):
    return [(cell.metadata.get("nbgrader", {}).get("grade_id"), output.get("ename") or output.get("text", "")[:300])
            for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs
            if output.output_type == "error" or (output.output_type == "stream" and output.name == "stderr")]


@pytest.mark.slow
@pytest.mark.parametrize("step", ["source", "solved release"])
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_instructors_notebook_and_the_solved_release_show_no_error_at_all(assignment, step, tmp_path):
    """The source (hidden tests included) and the release answered with the instructor's code (the example class's
    ref_solution): no error output, nothing on stderr, and every test cell at full marks."""
    if step == "source":
        notebook = notebook_of("source", assignment)
    else:
        notebook = nbformat.read(ROOT / "examples" / "example_class" / "ref_solution" / assignment / f"{assignment}.ipynb",
                                 as_version=4)
    execute(notebook, tmp_path)
    assert not errors_and_stderr(notebook)
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
            assert f"Score: {meta['points']:g} / {meta['points']:g} points" in text, (meta["grade_id"], text[-500:])


@pytest.mark.slow
def test_a_release_of_stubs_runs_to_its_last_cell_and_still_fails_its_tests(tmp_path):
    """problem set 2 as released: nbclient, which stops at an untagged error as JupyterLab's Run All does, runs every
    cell; each test cell ends with CellScoredZero (what Validate lists, and what nbgrader scores 0)."""
    assignment = "ps2_relative_pe"
    notebook = notebook_of("release", assignment)
    execute(notebook, tmp_path)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code), "Run All stopped before the last cell"
    tests = [cell for cell in code if cell.metadata["nbgrader"].get("grade")]
    assert all(any(o.output_type == "error" and o.ename == "CellScoredZero" for o in cell.outputs) for cell in tests)
    errors = {cell.metadata["nbgrader"]["grade_id"] for cell in code for o in cell.outputs if o.output_type == "error"}
    assert errors == {cell.metadata["nbgrader"]["grade_id"] for cell in tests} | {"memory_demo"}

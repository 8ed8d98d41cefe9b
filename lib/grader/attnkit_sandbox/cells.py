"""Reading a submitted notebook inside the sandbox: its code cells, what changed against the release, magics.

The sandbox has no nbformat (nor nbgrader): a notebook is read here as plain JSON, defensively, since the
student wrote it.
"""

import ast
import json
import linecache
from pathlib import Path

from . import channel

NOTEBOOK = "notebook.ipynb"
EXPECTED = "expected.json"          # optional, trusted: {"cells": {grade_id: cell_type}} of the release
MAX_NOTEBOOK_BYTES = 32 * 2**20


def cell_label(index, grade_id=None):
    """How every message names a cell: "cell 5 ('pe_answer')", or "cell 5" for a cell without a grade id."""
    return f"cell {index}" + (f" ('{grade_id}')" if isinstance(grade_id, str) and grade_id else "")


def read_cells(path):
    """(cells, remarks, problem): the notebook's cells as dicts, remarks on odd cells, or why there are none.

    Each cell: {"index", "cell_type", "source", "grade_id", "nbgrader"}; ``index`` counts from 1 over all
    cells. ``problem`` is a one-line reason when the file cannot be used at all (then ``cells`` is empty).
    """
    path = Path(path)
    name = path.name
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_NOTEBOOK_BYTES + 1)
    except FileNotFoundError:
        return [], [], f"{name} is missing"
    except OSError as error:
        return [], [], f"{name} cannot be read ({channel.clip_message(error)})"
    if len(data) > MAX_NOTEBOOK_BYTES:
        return [], [], f"{name} is larger than {MAX_NOTEBOOK_BYTES // 2**20} MiB"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return [], [], f"{name} is not UTF-8 text (byte {error.start})"
    if not text.strip():
        return [], [], f"{name} is empty"
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as error:
        return [], [], f"{name} is not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})"
    except RecursionError:
        return [], [], f"{name} is JSON nested too deeply to read"
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        return [], [], f"{name} is JSON but not a notebook (no list of cells)"
    cells, remarks = [], []
    for index, cell in enumerate(notebook["cells"], start=1):
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
            remarks.append(f"cell {index} is not a notebook cell (no cell_type); ignored")
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        if not isinstance(source, str):
            remarks.append(f"cell {index} has a source that is not text; ignored")
            source = ""
        metadata = cell.get("metadata")
        nbgrader = metadata.get("nbgrader") if isinstance(metadata, dict) else None
        nbgrader = nbgrader if isinstance(nbgrader, dict) else {}
        grade_id = nbgrader.get("grade_id") if isinstance(nbgrader.get("grade_id"), str) else None
        cells.append({"index": index, "cell_type": cell["cell_type"], "source": source,
                      "grade_id": grade_id, "nbgrader": nbgrader})
    return cells, remarks, None


def structure_remarks(cells, expected=None):
    """Remarks on duplicated, retyped and (given the release's {grade_id: cell_type}) deleted cells."""
    remarks, seen = [], {}
    for cell in cells:
        if cell["grade_id"]:
            seen.setdefault(cell["grade_id"], []).append(cell)
    for grade_id, copies in seen.items():
        if len(copies) > 1:
            where = ", ".join(str(c["index"]) for c in copies)
            remarks.append(f"cell '{grade_id}' appears {len(copies)} times (cells {where}): duplicated?")
    for grade_id, copies in seen.items():
        cell = copies[0]
        meta = cell["nbgrader"]
        wanted = (expected or {}).get(grade_id)
        if wanted and cell["cell_type"] != wanted:
            remarks.append(f"cell '{grade_id}' is a {cell['cell_type']} cell; the release has a {wanted} "
                           f"cell: retyped?")
        elif not wanted and meta.get("grade") and not meta.get("solution") and cell["cell_type"] != "code":
            remarks.append(f"test cell '{grade_id}' is a {cell['cell_type']} cell, not code: retyped?")
    for grade_id in expected or {}:
        if grade_id not in seen:
            remarks.append(f"cell '{grade_id}' of the release is missing: deleted?")
    return remarks


def expected_cells(notebook):
    """{grade_id: cell_type} of a released notebook (a dict from json), for SCRATCH_DIR/expected.json."""
    found = {}
    for cell in notebook.get("cells", []):
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id:
            found.setdefault(grade_id, cell.get("cell_type"))
    return found


def read_expected(scratch):
    try:
        expected = json.loads((Path(scratch) / EXPECTED).read_text(encoding="utf-8"))["cells"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return expected if isinstance(expected, dict) else None


# --- turning a cell into Python ---------------------------------------------------------------------------

def python_source(source):
    """(code, notes): the cell as plain Python, or (None, notes) for a cell magic the grader does not run."""
    try:
        ast.parse(source)
        return source, []
    except SyntaxError:
        pass                                  # maybe IPython syntax: magics are never valid Python
    except ValueError:                         # source holding NUL bytes
        return source, []
    lines = source.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    notes = []
    if first is not None and lines[first].lstrip().startswith("%%"):
        magic = lines[first].lstrip()[2:].split(" ")[0]
        if magic not in ("time", "capture"):
            return None, [f"cell magic %%{magic} is not run by the grader"]
        notes.append(f"ran the body of %%{magic}")
        lines = lines[first + 1:]
    kept = []
    for line in lines:
        stripped = line.lstrip()
        indent = line[:len(line) - len(stripped)]
        if stripped.startswith(("%time ", "%time\t")):
            kept.append(indent + stripped[5:].lstrip())
            notes.append("ran the statement of %time")
        elif stripped.startswith(("%", "!")):
            kept.append(indent + "pass")
            notes.append(f"skipped {stripped.split()[0] if stripped.split() else stripped}")
        else:
            kept.append(line)
    return "\n".join(kept), notes


def compile_cell(source, filename):
    """(body, last): code objects; ``last`` evaluates the final expression (its value is recorded) or None."""
    tree = ast.parse(source, filename)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = compile(ast.Expression(tree.body.pop().value), filename, "eval", dont_inherit=True)
    body = compile(tree, filename, "exec", dont_inherit=True)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return body, last


# --- capturing output ---------------------------------------------------------------------------------------

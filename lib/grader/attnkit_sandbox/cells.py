"""Reading a submitted notebook inside the sandbox: its code cells, what changed against the release, magics.

The sandbox has no nbformat (nor nbgrader): a notebook is read here as plain JSON, defensively, since the
student wrote it.
"""

import ast
import json
import linecache
from pathlib import Path

from . import channel, remarks
from .remarks import remark

NOTEBOOK = "notebook.ipynb"
EXPECTED = "expected.json"          # optional, trusted: {"cells": {grade_id: cell_type}} of the release
MAX_NOTEBOOK_BYTES = 32 * 2**20


def read_cells(path):
    """(cells, remarks, problem): the notebook's cells as dicts, remarks on odd cells, or why there are none.

    Each cell: {"index", "cell_type", "source", "grade_id", "nbgrader"}; ``index`` counts from 1 over all
    cells. The remarks and ``problem`` (why the file cannot be used at all; then ``cells`` is empty) are the
    runner's remarks (:mod:`.remarks`: a template and its values), worded by the grader.
    """
    path = Path(path)
    name = path.name
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_NOTEBOOK_BYTES + 1)
    except FileNotFoundError:
        return [], [], remark(remarks.NO_NOTEBOOK, name=name)
    except OSError as error:
        return [], [], remark(remarks.UNREADABLE, name=name, error=channel.clip_message(error))
    if len(data) > MAX_NOTEBOOK_BYTES:
        return [], [], remark(remarks.TOO_LARGE, name=name, size=MAX_NOTEBOOK_BYTES // 2**20)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return [], [], remark(remarks.NOT_UTF8, name=name, byte=error.start)
    if not text.strip():
        return [], [], remark(remarks.EMPTY, name=name)
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as error:
        return [], [], remark(remarks.NOT_JSON, name=name, line=error.lineno, column=error.colno, error=error.msg)
    except RecursionError:
        return [], [], remark(remarks.TOO_DEEP, name=name)
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        return [], [], remark(remarks.NOT_A_NOTEBOOK, name=name)
    cells, found = [], []
    for index, cell in enumerate(notebook["cells"], start=1):
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
            found.append(remark(remarks.NOT_A_CELL, index))
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        if not isinstance(source, str):
            found.append(remark(remarks.SOURCE_NOT_TEXT, index))
            source = ""
        metadata = cell.get("metadata")
        nbgrader = metadata.get("nbgrader") if isinstance(metadata, dict) else None
        nbgrader = nbgrader if isinstance(nbgrader, dict) else {}
        grade_id = nbgrader.get("grade_id") if isinstance(nbgrader.get("grade_id"), str) else None
        cells.append({"index": index, "cell_type": cell["cell_type"], "source": source,
                      "grade_id": grade_id, "nbgrader": nbgrader})
    return cells, found, None


def structure_remarks(cells, expected=None):
    """Remarks (:mod:`.remarks`) on duplicated, retyped and (given the release's {grade_id: cell_type}) deleted
    cells."""
    found, seen = [], {}
    for cell in cells:
        if cell["grade_id"]:
            seen.setdefault(cell["grade_id"], []).append(cell)
    for grade_id, copies in seen.items():
        if len(copies) > 1:
            where = ", ".join(str(c["index"]) for c in copies)
            found.append(remark(remarks.DUPLICATED, copies[0]["index"], grade_id, count=len(copies), where=where))
    for grade_id, copies in seen.items():
        cell = copies[0]
        meta = cell["nbgrader"]
        wanted = (expected or {}).get(grade_id)
        if wanted and cell["cell_type"] != wanted:
            found.append(remark(remarks.RETYPED, cell["index"], grade_id, kind=cell_type(cell["cell_type"]),
                                wanted=cell_type(wanted)))
        elif not wanted and meta.get("grade") and not meta.get("solution") and cell["cell_type"] != "code":
            found.append(remark(remarks.TEST_RETYPED, cell["index"], grade_id, kind=cell_type(cell["cell_type"])))
    for grade_id in expected or {}:
        if grade_id not in seen:
            found.append(remark(remarks.MISSING, None, grade_id))
    return found


def cell_type(name):
    """A cell type as a remark names it: code, markdown, raw, or other (a notebook may hold any string there)."""
    return name if name in remarks.CELL_TYPES else "other"


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

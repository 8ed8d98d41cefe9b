"""Run All runs to the end of an assignment: the cells that run the student's code carry ``raises-exception``.

JupyterLab stops *Run All* at the first cell that raises, unless that cell is tagged ``raises-exception``. In an
assignment two kinds of cell raise while the work is unfinished: a test cell that earns nothing raises
``CellScoredZero`` (its list of what failed is what nbgrader's *Validate* shows), and an answer left as released
raises ``NotImplementedError``. Untagged, a student's Run All stops at the first of them and never shows the
exercises after it. The tag changes no grade: nbgrader's checksums leave tags out, and nbgrader scores a cell
by the error it recorded, tagged or not (its autograde and Validate already go on after an error).

The tag also makes nbclient and nbval accept an error in the cell, so the tests that run the instructor's
notebook and the solved release look for error outputs themselves (``tests/test_assignments.py``).

Tagged: every answer code cell, every test cell, and every other code cell that uses a name an answer cell
defines (problem set 2's memory demonstration calls the student's functions); no other cell. The source and
translated notebooks carry the tags, so nbgrader's ``generate_assignment`` (from ``attnkit release``, the hub's
setup or the formgrader) keeps them in every release; the tests hold every notebook to :func:`tagged`, and
``attnkit new-assignment`` writes its notebook with them.
"""

import ast

__all__ = ["TAG", "answer_names", "tag", "tagged"]

TAG = "raises-exception"


def _nbgrader(cell):
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def _tree(cell):
    source = cell.get("source", "")
    try:
        return ast.parse("".join(source) if isinstance(source, list) else source)
    except SyntaxError:                  # a cell with IPython magics, or half-written code: it defines nothing
        return None


def answer_names(cells):
    """The names the answer code cells of ``cells`` (notebook cell dicts) define at their top level."""
    names = set()
    for cell in cells:
        if cell.get("cell_type") != "code" or not _nbgrader(cell).get("solution"):
            continue
        tree = _tree(cell)
        for node in tree.body if tree else ():
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names |= {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def tagged(cells):
    """The indexes of the code cells of ``cells`` that must carry the tag (see the module's docstring)."""
    names = answer_names(cells)
    found = set()
    for index, cell in enumerate(cells):
        if cell.get("cell_type") != "code":
            continue
        meta = _nbgrader(cell)
        tree = _tree(cell)
        uses = tree is not None and any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(tree))
        if meta.get("solution") or meta.get("grade") or uses:
            found.add(index)
    return found


def tag(notebook):
    """Tag the cells of ``notebook`` (a dict) that must carry the tag, and untag the others; returns it."""
    wanted = tagged(notebook["cells"])
    for index, cell in enumerate(notebook["cells"]):
        tags = [t for t in cell.get("metadata", {}).get("tags", []) if t != TAG]
        if index in wanted:
            tags.append(TAG)
        if tags:
            cell.setdefault("metadata", {})["tags"] = tags
        else:
            cell.get("metadata", {}).pop("tags", None)
    return notebook

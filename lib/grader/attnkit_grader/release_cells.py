"""The released notebook of an assignment as the sandboxed grader needs it, and cells of untrusted notebooks.

Submitted notebooks are untrusted JSON: :func:`grade_id_of` and :func:`source_of` read a cell without
assuming anything of its shape. :class:`Release` is the assignment's released notebook: its graded cells
and points, the read-only cells put back into every submission, the answer cells as released.
"""

import json
from dataclasses import dataclass, field

import nbformat
from nbgrader.utils import is_grade, is_locked, is_solution

from attnkit_sandbox.cells import expected_cells

from . import registry
from .results import CellResult


def grade_id_of(cell):
    """The nbgrader grade_id of a cell dict read from untrusted JSON, or None."""
    if not isinstance(cell, dict):
        return None
    metadata = cell.get("metadata")
    meta = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
    return grade_id if isinstance(grade_id, str) else None


def source_of(cell):
    source = cell.get("source", "") if isinstance(cell, dict) else ""
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    return source if isinstance(source, str) else None


@dataclass
class Release:
    """The released notebook of one assignment and what the grader needs from it."""

    assignment: str
    name: str                     # notebook stem, the file students hand in is NAME.ipynb
    data: bytes
    notebook: dict
    graded: dict                  # {grade_id: CellResult, not yet scored} of the graded cells, in notebook order
    sources: dict                 # {grade_id: source} of the graded cells as released (a test cell's visible part)
    locked: dict                  # {grade_id: cell} read-only cells, put back into every submission
    order: list                   # every grade_id of the release, in order
    expected: dict                # {grade_id: cell_type} for the runner's remarks
    solutions: dict               # {grade_id: (cell_type, source)} of the answer cells as released
    translated: dict = field(default_factory=dict)   # {grade_id: [(cell_type, source)]} the same, per edition

    @classmethod
    def read(cls, course, assignment):
        names = course.notebook_names(assignment, step="release")
        if len(names) != 1:
            raise ValueError(f"assignments: the sandboxed grader grades assignments of exactly one notebook; "
                             f"release/{assignment} has {len(names)} ({', '.join(names) or 'none'})")
        path = course.assignment_dir("release", assignment) / f"{names[0]}.ipynb"
        data = path.read_bytes()
        notebook = json.loads(data.decode("utf-8"))
        graded, sources, locked, order, solutions = {}, {}, {}, [], {}
        for raw in notebook["cells"]:
            cell = nbformat.from_dict(raw)                    # the release: nbgrader's own metadata, trusted
            grade_id = grade_id_of(cell)
            if not grade_id:
                continue
            order.append(grade_id)
            if is_locked(cell):
                locked[grade_id] = raw
            if is_solution(cell):
                solutions[grade_id] = (cell.cell_type, source_of(cell))
            if is_grade(cell):
                kind = "test" if not is_solution(cell) and cell.cell_type == "code" else "written"
                graded[grade_id] = CellResult(grade_id, kind, float(cell.metadata.nbgrader.get("points", 0)))
                sources[grade_id] = source_of(cell)
        release = cls(assignment, names[0], data, notebook, graded, sources, locked, order, expected_cells(notebook),
                      solutions, translated_answers(course, assignment, names[0]))
        release.check_judges()
        return release

    def check_judges(self):
        """The release's test cells and points must be those the trusted checks were written for."""
        if self.assignment not in registry.assignments():
            raise ValueError(f"assignments: no trusted checks for {self.assignment!r} (the kit's assignment "
                             f"folders are {', '.join(registry.assignments())}); grade it with --grader nbgrader")
        tests = {grade_id: cell.max_points for grade_id, cell in self.graded.items() if cell.kind == "test"}
        judged = registry.max_points(self.assignment)
        if tests != judged:
            raise ValueError(f"assignments: the test cells of release/{self.assignment} ({tests}) do not match "
                             f"the points of its trusted checks ({judged}); update the judges or the release")

    def restored(self, data):
        """The submitted notebook (bytes) with the release's read-only cells put back, outputs dropped.

        Cells with a release grade_id that is read-only are replaced by the release's cell (so a test
        cell never holds more than its visible part); those missing are inserted after the cell that
        precedes them in the release. Anything that is not a readable notebook is passed on as it is:
        the runner reports why it cannot run it.
        """
        try:
            notebook = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return data
        if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
            return data
        cells, seen = [], set()
        for cell in notebook["cells"]:
            grade_id = grade_id_of(cell)
            if grade_id in self.locked:
                cells.append(self.clean(self.locked[grade_id]))
                seen.add(grade_id)
            elif isinstance(cell, dict) and cell.get("cell_type") == "code":
                cells.append({**cell, "outputs": [], "execution_count": None})
            else:
                cells.append(cell)
        for grade_id in (g for g in self.order if g in self.locked and g not in seen):
            before = set(self.order[:self.order.index(grade_id)])
            position = max((i + 1 for i, cell in enumerate(cells) if grade_id_of(cell) in before), default=0)
            cells.insert(position, self.clean(self.locked[grade_id]))
        notebook["cells"] = cells
        return json.dumps(notebook).encode("utf-8")

    @staticmethod
    def clean(cell):
        cell = json.loads(json.dumps(cell))
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
        return cell

    def answers(self, data):
        """{grade_id: True when changed since the release} for every answer cell (code and written)."""
        try:
            cells = json.loads(data.decode("utf-8"))["cells"]
            cells = cells if isinstance(cells, list) else []
        except (UnicodeDecodeError, ValueError, RecursionError, KeyError, TypeError):
            cells = []
        submitted = {}
        for cell in cells:
            grade_id = grade_id_of(cell)
            if grade_id and grade_id not in submitted:
                submitted[grade_id] = cell
        answered = {}
        for grade_id, released in self.solutions.items():
            cell = submitted.get(grade_id)
            as_released = [released, *self.translated.get(grade_id, [])]
            answered[grade_id] = cell is not None and (cell.get("cell_type"), source_of(cell)) not in as_released
        return answered


def translated_answers(course, assignment, name):
    """{grade_id: [(cell_type, source)]} of the answer cells as released in ``assignment``'s language
    editions (release/ASSIGNMENT_LANG/NAME.ipynb, those that exist): a student of that edition who leaves
    one as it came has not answered it."""
    found = {}
    for language, folder in course.editions(assignment).items():
        path = course.assignment_dir("release", folder) / f"{name}.ipynb"
        if folder == assignment or not path.is_file():
            continue
        for raw in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            cell = nbformat.from_dict(raw)
            if grade_id_of(cell) and is_solution(cell):
                found.setdefault(grade_id_of(cell), []).append((cell.cell_type, source_of(cell)))
    return found


# --- one submission -------------------------------------------------------------------------------------

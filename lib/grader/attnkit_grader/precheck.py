"""Look at a submission before grading it, without running nbgrader or any student code.

A *fatal* issue means nbgrader cannot grade the submission at all (no notebook, not JSON, not a valid
notebook): the pipeline skips it and reports the reason. Other issues are remarks for the instructor
(a deleted test cell, an edited read-only cell, answers left as released, code naming the reference
solutions, an answer as alike to a known solution as a copy (:mod:`.copies`), extra or missing files); the
submission is graded anyway.
"""

import json
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbgrader.utils import is_grade, is_locked, is_solution

from . import copies
from .release_cells import grade_id_of
from .results import Message

# Files a student's tools leave behind; never worth a remark.
NOISE = {".ipynb_checkpoints", "__pycache__", ".DS_Store",
         "timestamp.txt", "submission_secret.txt",   # nbgrader's exchange writes these into every hand-in,
         "collect.json"}                             # and attnkit collect its record (exchange.RECORD)
# The kit's reference solutions: student code that names them is worth the instructor's look.
REFERENCE_MODULES = ("attnkit_assignments",)


@dataclass(frozen=True)
class Issue:
    """One thing wrong with a submission; ``fatal`` when it cannot be graded at all; ``message``: the reason as
    a Message, where it was made as one (the reports count those by template)."""

    reason: str
    fatal: bool = False
    message: Message = None

    def __str__(self):
        return self.reason


def check_submission(submission_dir, release_dir, source_dir=None, editions=(), known=None, limits=None):
    """Issues of the submission in ``submission_dir`` against the released assignment in ``release_dir``.

    ``source_dir`` (the instructor's version, optional) is a second accepted version of read-only cells:
    test cells there may hold hidden tests the release does not show. ``editions``: release folders of the
    assignment's language editions (same notebook names); an answer left as any of them released is
    unanswered. ``known``: the solutions answers are compared with ([copies.Solution], default: the
    notebook's in ``source_dir``), ``limits`` their thresholds per answer cell (:func:`copies.thresholds`).
    Returns a list of :class:`Issue` (empty when all is well). Never raises for a bad submission;
    raises FileNotFoundError when ``release_dir`` holds no notebook (a broken course, not a bad student).
    """
    submission_dir, release_dir = Path(submission_dir), Path(release_dir)
    expected = sorted(release_dir.glob("*.ipynb"))
    if not expected:
        raise FileNotFoundError(f"release_dir: no notebook in {release_dir}; run the release step first")
    if not submission_dir.is_dir():
        return [Issue(f"nothing handed in (no folder {submission_dir.name}/)", fatal=True)]
    issues = []
    for released in expected:
        translated = [Path(folder) / released.name for folder in editions]
        source = Path(source_dir) / released.name if source_dir else None
        releases = [released] + [p for p in translated if p.is_file()]
        issues += check_notebook(submission_dir / released.name, releases,
                                 source if source and source.is_file() else None, known, limits)
    if any(issue.fatal for issue in issues):
        return issues
    return issues + check_files(submission_dir, release_dir)


def check_notebook(path, releases, source=None, known=None, limits=None):
    """Issues of the notebook at ``path``; ``releases``: the released notebooks it may start from (the
    graded one first, then its language editions); ``source``: the instructor's notebook, or None; ``known``
    and ``limits``: as :func:`check_submission` takes them."""
    if not path.is_file():
        return [missing_notebook(path)]
    notebook, problem = read_notebook(path)
    if problem:
        return [Issue(problem, fatal=True)]
    released = [nbformat.read(version, as_version=4) for version in releases]
    instructor = nbformat.read(source, as_version=4) if source else None
    versions = released + ([instructor] if instructor is not None else [])
    remarks = cell_changes(notebook, versions, path.name) + answer_remarks(notebook, released, path.name)
    issues = [Issue(reason) for reason in remarks]
    if known is None and instructor is not None:
        known = [copies.Solution("notebook", Message.make("the notebook's solution"), "notebook",
                                 copies.answer_cells(source, strip=True))]
    if known:
        issues += [Issue(str(remark), message=remark) for remark in copy_remarks(notebook, released[0], known,
                                                                                  limits or {}, path.name)]
    return issues


PASTED = ("{notebook}: its answer cells together hold {alike:.0f}% of {solution}, as a copy pasted whole or split "
          "across cells does; flagged for the instructor to read, the score is unchanged")
COPY = ("{notebook}: answer cell '{cell}' is {alike:.0f}% alike to {solution}, as a pasted or lightly edited "
        "copy is; flagged for the instructor to read, the score is unchanged")


def copy_remarks(notebook, released, known, limits, name):
    """A remark (a Message) per answer cell that resembles one of the ``known`` solutions as much as a pasted
    or lightly edited copy does (from its threshold in ``limits``): names, numbers, strings, comments and
    layout set aside, the code the release gives left out. It flags for a person to read; it never changes a
    score (the course's own example answers and the known-bug catalogue are built from the solutions on
    purpose)."""
    original, submitted = nbgrader_cells(released), nbgrader_cells(notebook)
    answers = {g: cell.source for g, cell in original.items() if is_solution(cell) and cell.cell_type == "code"}
    mine = {g: submitted[g].source for g in answers if g in submitted and submitted[g].cell_type == "code"}
    found = copies.flags(mine, answers, known, limits)
    remarks = [Message.make(COPY, notebook=name, cell=flag.cell, alike=100 * flag.alike, solution=flag.solution.label)
               for flag in found]
    whole = copies.pasted(mine, answers, known)
    if whole is not None and whole[1].name not in {flag.solution.name for flag in found}:
        remarks.append(Message.make(PASTED, notebook=name, alike=100 * whole[0], solution=whole[1].label))
    return remarks


def missing_notebook(path):
    """Fatal issue for a notebook that is not where it should be, naming look-alikes when there are some."""
    others = sorted(p.name for p in path.parent.glob("*.ipynb"))
    reason = f"notebook {path.name} is missing"
    if others:
        reason += f"; found {', '.join(others)} instead (wrong name? it must be {path.name})"
    return Issue(reason, fatal=True)


def read_notebook(path):
    """(notebook, None) for a readable nbformat-4 notebook, else (None, why not)."""
    name = path.name
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        return None, f"{name} is not UTF-8 text (byte {error.start})"
    if not text.strip():
        return None, f"{name} is empty"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        return None, f"{name} is not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})"
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        return None, f"{name} is JSON but not a notebook (no list of cells)"
    if data.get("nbformat") != 4:
        return None, f"{name} has nbformat version {data.get('nbformat')!r}; expected 4"
    try:
        notebook = nbformat.reads(text, as_version=4)
        nbformat.validate(notebook)
    except Exception as error:  # nbformat raises several types for broken structure
        return None, f"{name} is not a valid notebook (nbformat: {first_line(error)})"
    return notebook, None


def cell_changes(notebook, originals, name):
    """Remarks on graded cells: deleted grade cells, and read-only cells matching none of ``originals``.

    The first of ``originals`` (the released notebook) decides which cells exist; nbgrader scores a deleted
    test cell 0 (or re-runs it when configured to add missing cells) and grades the original of edited ones.
    """
    submitted = nbgrader_cells(notebook)
    versions = [nbgrader_cells(original) for original in originals]
    remarks = []
    for grade_id, cell in versions[0].items():
        if grade_id not in submitted:
            kind = "test cell" if is_grade(cell) and not is_solution(cell) else "graded cell"
            remarks.append(f"{name}: {kind} '{grade_id}' was deleted")
        elif is_locked(cell) and all(submitted[grade_id].source != v.get(grade_id, cell).source
                                        for v in versions):
            remarks.append(f"{name}: read-only cell '{grade_id}' was edited (nbgrader grades the original)")
    return remarks


def answer_remarks(notebook, releases, name):
    """Remarks on the answers: none changed since the release (in any of the ``releases``, the language
    editions), or code naming the reference solutions."""
    versions = [nbgrader_cells(released) for released in releases]
    original = versions[0]
    submitted = nbgrader_cells(notebook)
    answers = [g for g, cell in original.items() if is_solution(cell)]
    remarks = []
    if answers and all(g in submitted and any(submitted[g].source == v[g].source for v in versions if g in v)
                       for g in answers):
        remarks.append(f"{name}: no answer changed since the release (nothing attempted?)")
    for number, cell in enumerate(notebook.cells, start=1):
        grade_id = grade_id_of(cell)
        locked = grade_id in original and is_locked(original[grade_id])
        if cell.cell_type == "code" and not locked and any(m in cell.source for m in REFERENCE_MODULES):
            label = f"'{grade_id}'" if grade_id else f"{number}"
            remarks.append(f"{name}: cell {label} uses the reference solutions ({REFERENCE_MODULES[0]})")
    return remarks


def nbgrader_cells(notebook):
    """{grade_id: cell} for the cells nbgrader tracks."""
    cells = {}
    for cell in notebook.cells:
        grade_id = grade_id_of(cell)
        if grade_id:
            cells.setdefault(grade_id, cell)
    return cells


def check_files(submission_dir, release_dir):
    """Remarks on files other than the notebooks: extra ones are ignored, missing ones come from the course."""
    handed_in, released = relative_files(submission_dir), relative_files(release_dir)
    extra = sorted(f for f in handed_in - released if not f.endswith(".ipynb"))
    stray = sorted(f for f in handed_in - released if f.endswith(".ipynb"))
    missing = sorted(f for f in released - handed_in if not f.endswith(".ipynb"))
    issues = []
    if extra:
        issues.append(Issue(f"extra files ignored: {', '.join(extra)}"))
    if stray:
        issues.append(Issue(f"extra notebooks not graded: {', '.join(stray)}"))
    if missing:
        issues.append(Issue(f"files missing (the released copies are used): {', '.join(missing)}"))
    return issues


def relative_files(folder):
    """Paths (as POSIX strings) of the files under ``folder``, skipping editor and tool noise."""
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")
            if p.is_file() and not NOISE.intersection(p.relative_to(folder).parts)}


def first_line(error):
    """The first non-empty line of an exception's message."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__

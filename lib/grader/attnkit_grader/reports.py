"""What the instructor reads after grading: points per test cell, totals, a histogram, CSV files.

nbgrader's own export only has totals per assignment, so the per-cell table is read straight from the
gradebook (:class:`nbgrader.api.Gradebook`).
"""

import csv
import math
from dataclasses import dataclass, field

import nbformat
from matplotlib.figure import Figure
from nbgrader.api import Assignment, BaseCell, Grade, Notebook, SubmittedAssignment, SubmittedNotebook
from nbgrader.plugins import CsvExportPlugin
from nbgrader.utils import is_grade
from sqlalchemy import func

from .feedback import number


@dataclass
class ScoreTable:
    """Points per grade cell for every student and assignment, as the gradebook holds them."""

    cells: dict       # assignment -> [(grade_id, max points)] in notebook order
    points: dict      # (student, assignment) -> {grade_id: points}
    review: set = field(default_factory=set)   # (student, assignment, grade_id) awaiting a manual grade

    @property
    def students(self):
        return sorted({student for student, _ in self.points})

    def total(self, student, assignment):
        return sum(self.points[student, assignment].values())

    def max_total(self, assignment):
        return sum(points for _, points in self.cells[assignment])

    def as_dict(self):
        """{student: {assignment: {grade_id: points}}}, the shape of the fixtures' expected_scores.json."""
        nested = {}
        for (student, assignment), points in sorted(self.points.items()):
            nested.setdefault(student, {})[assignment] = dict(points)
        return nested


def read_scores(course, assignments, students):
    """The ScoreTable of ``students`` x ``assignments`` from the course gradebook (0 where nothing was graded).

    One query for every grade (and one counting each submission's notebooks): asking nbgrader's objects submission
    by submission took 900 queries and a third of a second at a hundred hand-ins, after the last sandbox."""
    cells = {a: grade_cells(course, a) for a in assignments}
    table = ScoreTable(cells, {})
    for assignment in assignments:
        for student in students:
            table.points[student, assignment] = {grade_id: 0.0 for grade_id, _ in cells[assignment]}
    wanted = set(students)
    with course.gradebook() as gradebook:
        db = gradebook.db
        notebooks = dict(db.query(SubmittedNotebook.assignment_id, func.count(SubmittedNotebook.id))
                         .group_by(SubmittedNotebook.assignment_id))
        rows = (db.query(SubmittedAssignment.id, SubmittedAssignment.student_id, Assignment.name, Notebook.name,
                         BaseCell.name, Grade.score, Grade.needs_manual_grade)
                .select_from(Grade)
                .join(SubmittedNotebook, Grade.notebook_id == SubmittedNotebook.id)
                .join(Notebook, SubmittedNotebook.notebook_id == Notebook.id)
                .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
                .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
                .join(BaseCell, Grade.cell_id == BaseCell.id)
                .filter(Assignment.name.in_(list(assignments)))
                .order_by(SubmittedAssignment.id, Notebook.name, BaseCell.name))
        for submission, student, assignment, notebook, cell, score, review in rows:
            if student not in wanted:
                continue
            key = f"{notebook}:{cell}" if notebooks.get(submission, 0) > 1 else cell
            table.points[student, assignment][key] = float(score)
            if review:
                table.review.add((student, assignment, key))
    return table


def grade_cells(course, assignment):
    """[(grade_id, max points)] of ``assignment``, in the order of its source notebook(s)."""
    names = course.notebook_names(assignment, step="source")
    cells = []
    for name in names:
        notebook = nbformat.read(course.assignment_dir("source", assignment) / f"{name}.ipynb", as_version=4)
        for cell in notebook.cells:
            if is_grade(cell):
                meta = cell.metadata.nbgrader
                key = f"{name}:{meta['grade_id']}" if len(names) > 1 else meta["grade_id"]
                cells.append((key, float(meta.get("points", 0))))
    return cells


def format_table(table, assignment, statuses):
    """Plain-text table of ``assignment``: one row per student, one column per grade cell, then the total.

    ``statuses`` maps student -> a short status word shown in the last column.
    """
    columns = [grade_id for grade_id, _ in table.cells[assignment]]
    header = ["student"] + columns + ["total", "status"]
    maxima = ["(max)"] + [number(p) for _, p in table.cells[assignment]] + [number(table.max_total(assignment)), ""]
    rows = [header, maxima]
    for student in table.students:
        points = table.points[student, assignment]
        row = [student] + [number(points[c]) + ("*" if (student, assignment, c) in table.review else "")
                           for c in columns]
        rows.append(row + [number(table.total(student, assignment)), statuses.get(student, "")])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths)))
             for row in rows]
    return "\n".join(lines)


def write_cell_csv(table, path):
    """One row per student, assignment and grade cell: the per-exercise scores nbgrader's export lacks."""
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "assignment", "grade_id", "points", "max_points", "needs_manual_grade"])
        for student in table.students:
            for assignment, cells in table.cells.items():
                for grade_id, max_points in cells:
                    review = (student, assignment, grade_id) in table.review
                    writer.writerow([student, assignment, grade_id, number(table.points[student, assignment][grade_id]),
                                     number(max_points), review])


def export_totals(course, path, assignments):
    """nbgrader's CSV export (``nbgrader export``): one row per student and assignment, with totals."""
    plugin = CsvExportPlugin(to=str(path), assignment=list(assignments))
    with course.gradebook() as gradebook:
        plugin.export(gradebook)


def bin_edges(top):
    """One bar per whole point (centred on it) up to 40 points, else 20 equal bars from 0 to ``top``."""
    if top <= 40:
        return [k - 0.5 for k in range(math.ceil(top) + 2)]
    return [top * k / 20 for k in range(21)]


def plot_totals(table, path):
    """Save a histogram of total scores, one panel per assignment, to ``path`` (PNG)."""
    assignments = list(table.cells)
    figure = Figure(figsize=(4.5 * len(assignments), 3.2))  # no pyplot: no GUI backend, no global state
    axes = figure.subplots(1, len(assignments), squeeze=False)
    for ax, assignment in zip(axes[0], assignments):
        top = table.max_total(assignment)
        totals = [table.total(student, assignment) for student in table.students]
        ax.hist(totals, bins=bin_edges(top), color="tab:blue", edgecolor="white")
        ax.set_title(f"{assignment} ({len(totals)} students)")
        ax.set_xlabel(f"total points (max {number(top)})")
        ax.set_ylabel("students")
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def write_check_csv(records, path):
    """One row per submission and judged check, with its message: ``records`` {(student, assignment):
    SubmissionResult} (those without judged checks, e.g. under plain nbgrader, add no row). ``kind`` is the
    judge's class of the check: values, property or structure (shapes and dtypes)."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "assignment", "grade_id", "check", "kind", "passed", "points", "max_points",
                         "message"])
        for (student, assignment), record in sorted(records.items()):
            for grade_id, checks in record.checked.items():
                for check in checks:
                    writer.writerow([student, assignment, grade_id, check.name, check.kind, check.passed,
                                     number(check.points), number(check.max_points), check.text()])


def plot_success(table, handed_in, path):
    """Save, per assignment, the share of handed-in submissions with full points in each exercise (bars)
    and the mean share of points (dots) to ``path`` (PNG). ``handed_in``: {(student, assignment)}.

    Cells that still await a hand grade for some submission are left out (their score is not known yet).
    """
    assignments = list(table.cells)
    figure = Figure(figsize=(4.5 * len(assignments), 3.4))
    axes = figure.subplots(1, len(assignments), squeeze=False)
    for ax, assignment in zip(axes[0], assignments):
        students = [s for s in table.students if (s, assignment) in handed_in]
        cells = [(grade_id, top) for grade_id, top in table.cells[assignment] if top > 0 and not any(
            (s, assignment, grade_id) in table.review for s in students)]     # hand grading still pending
        names = [grade_id for grade_id, _ in cells]
        full, mean = [], []
        for grade_id, top in cells:
            shares = [table.points[s, assignment][grade_id] / top for s in students]
            full.append(sum(share >= 1.0 for share in shares) / len(shares) if shares else 0.0)
            mean.append(sum(shares) / len(shares) if shares else 0.0)
        positions = range(len(names))
        ax.bar(positions, full, color="tab:green", label="full points")
        ax.plot(positions, mean, "o", color="black", label="mean share of points")
        ax.set_xticks(list(positions))
        ax.set_xticklabels(names, rotation=35, ha="right", fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("share of submissions")
        ax.set_title(f"{assignment} ({len(students)} handed in)")
        ax.legend(fontsize=7, loc="upper right")
    figure.tight_layout()
    figure.savefig(path, dpi=100)

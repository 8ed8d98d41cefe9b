"""Fill an LMS's own gradebook file with the kit's totals: match students, find or add columns, write cells.

Students are matched on one identity: a roster field (``match``: lms_user_id, email or id) equal to one LMS column
(``identifier``), compared without surrounding spaces or case. Nothing is dropped silently: a student on one
side only, an identity found twice on either side and a matched pair whose names differ are findings, and
only uniquely matched students are filled. Names are compared as words, in any order, without case, accents
or commas ('Lovelace, Ada' is 'Ada Lovelace').

What each cell gets (``missing``: 'zero' or 'blank' for students without a submission):

- a submission: its total (nbgrader's score minus the late penalty), replacing whatever the file held;
- no submission in the gradebook (nothing handed in, or a hand-in the pre-check rejected): 0
  (``missing='zero'``, as ``nbgrader export`` and the kit's reports count it) or an empty cell (``'blank'``:
  no grade), but a value the LMS file already holds there (an excused ``EX``, a grade entered in the LMS) is
  kept.
"""

import re
import unicodedata
from collections import defaultdict

from .report import Column, Export
from .roster import FIELDS

MISSING = ("zero", "blank")
NO_GRADE = ("", "-")             # what both LMSs export, and import, for "no grade"


def fill(layout, table, roster, totals, maxima, *, identifier=None, identity_column=None, match=None,
         columns=None, missing="zero", argument="lms_csv"):
    """Fill ``table`` (a :class:`~.table.Table` in ``layout``'s format: the ``canvas`` or ``moodle`` module) in
    memory; return the :class:`~.report.Export`.

    ``roster``: [Student]; ``totals``: {(student id, assignment): Total}; ``maxima``: {assignment: max points},
    the assignments to fill, in order; ``identifier``: a key of ``layout.IDENTIFIERS`` (its column, unless
    ``identity_column`` names another); ``match``: the roster field (default: the identifier's);
    ``columns``: {assignment: column header} for columns not titled after their assignment.
    """
    identifier = identifier or layout.DEFAULT_IDENTIFIER
    if identifier not in layout.IDENTIFIERS:
        raise ValueError(f"identifier: expected one of {sorted(layout.IDENTIFIERS)} for {layout.NAME}, "
                         f"got {identifier!r}")
    header, field = layout.IDENTIFIERS[identifier]
    header, field = identity_column or header, match or field
    if field not in FIELDS:
        raise ValueError(f"match: expected one of {list(FIELDS)}, got {field!r}")
    if missing not in MISSING:
        raise ValueError(f"missing: expected one of {MISSING}, got {missing!r}")
    layout.check(table, argument)
    if table.column(header) is None:
        raise ValueError(f"{argument}: {table.path} has no {header!r} column to find students by (identifier "
                         f"{identifier!r}); its columns: {table.header}")
    report = Export(layout.NAME, str(table.path), header, field, roster=len(roster))
    targets = place_columns(layout, table, maxima, columns or {}, report)
    key = table.column(header)                               # after the columns added
    pairs = pair(layout, table, key, roster, field, report)
    check_names(layout, table, key, pairs, report)
    for column in report.columns:
        index = targets[column.assignment]
        for student, row in pairs:
            write_cell(table.rows[row], index, totals[student.id, column.assignment], missing, column, report)
    return report


def place_columns(layout, table, maxima, columns, report):
    """{assignment: column index}, adding a column for each assignment the file lacks; records the columns and
    checks the LMS's points against the gradebook's."""
    unknown = sorted(set(columns) - set(maxima))
    if unknown:
        raise ValueError(f"columns: {unknown} are not among the assignments exported ({list(maxima)})")
    found = {}
    for assignment in maxima:
        title = columns.get(assignment, assignment)
        indices = layout.assignment_columns(table, title)
        if assignment in columns:
            if table.column(title) is None:
                raise ValueError(f"columns: {table.path} has no column {title!r} (for {assignment}); "
                                 f"its columns: {table.header}")
            indices = [i for i in indices if table.header[i].strip() == title]
            if not indices:
                raise ValueError(f"columns: {title!r} is a read-only or identity column of {table.path}")
        if len(indices) > 1:
            raise ValueError(f"columns: {len(indices)} columns of {table.path} are titled {title!r} "
                             f"({[table.header[i] for i in indices]}); name one: --column {assignment}=HEADER")
        found[assignment] = indices[0] if indices else None
    for assignment, maximum in maxima.items():
        if found[assignment] is None:
            title = columns.get(assignment, assignment)
            index = layout.add_column(table, title, points_text(maximum))
            found = {a: (i + 1 if i is not None and i >= index else i) for a, i in found.items()}
            found[assignment] = index
            report.add("new_column", assignment=assignment, points=points_text(maximum), how=layout.NEW_COLUMN)
            report.columns.append(Column(assignment, title, maximum, new=True))
            continue
        index = found[assignment]
        report.columns.append(Column(assignment, table.header[index], maximum))
        stated = layout.points_possible(table, index)
        if stated and not same_number(stated, maximum):
            report.add("points_possible", assignment=assignment, header=table.header[index], lms=stated,
                       kit=points_text(maximum))
    return found


def pair(layout, table, key, roster, field, report):
    """[(Student, row index)] of the students found exactly once on each side; the rest become findings."""
    column = table.header[key]
    rows = layout.student_rows(table)
    report.rows = len(rows)
    by_value = defaultdict(list)
    for row, why in rows.items():
        if why:
            report.add("skipped_row", line=table.lines[row], name=layout.row_name(table, row), why=why)
        else:
            by_value[identity(table.rows[row][key])].append(row)
    students = defaultdict(list)
    for student in roster:
        value = identity(getattr(student, field))
        if value:
            students[value].append(student)
        else:
            report.add("no_identity", student=student.id, name=student.name, field=field)
    pairs = []
    for value, found in sorted(students.items()):
        lms_rows = by_value.get(value, [])
        if len(found) > 1:
            report.add("duplicate_roster", field=field, value=getattr(found[0], field),
                       students=", ".join(s.id for s in found))
        elif not lms_rows:
            report.add("not_in_lms", student=found[0].id, name=found[0].name, column=column,
                       value=getattr(found[0], field))
        elif len(lms_rows) == 1:
            pairs.append((found[0], lms_rows[0]))
    for value, lms_rows in sorted(by_value.items(), key=lambda item: item[1][0]):
        names = [layout.row_name(table, row) for row in lms_rows]
        if len(lms_rows) > 1:
            report.add("duplicate_lms", column=column, value=table.rows[lms_rows[0]][key].strip(),
                       lines=", ".join(str(table.lines[row]) for row in lms_rows), names="; ".join(map(str, names)))
        elif value not in students:
            report.add("not_in_roster", line=table.lines[lms_rows[0]], name=names[0], column=column,
                       value=table.rows[lms_rows[0]][key].strip())
    report.matched = len(pairs)
    return sorted(pairs, key=lambda item: item[1])


def check_names(layout, table, key, pairs, report):
    """A finding for each matched pair whose names differ (where both sides have one)."""
    for student, row in pairs:
        lms = layout.row_name(table, row)
        if lms is None or not (student.first_name or student.last_name):
            continue
        report.named += 1
        if words(lms) != words(student.name):
            report.add("name_mismatch", student=student.id, roster=student.name, line=table.lines[row], lms=lms,
                       column=table.header[key], value=table.rows[row][key].strip())


def write_cell(row, index, total, missing, column, report):
    """Put ``total`` into ``row[index]`` (see the module docstring), recording what was worth a finding."""
    where = {"student": total.student, "assignment": total.assignment}
    old = row[index].strip()
    graded = old not in NO_GRADE
    if total.points is None:
        column.missing += 1
        if graded:
            report.add("kept", value=old, **where)
            return
        row[index] = "0" if missing == "zero" else ""
        report.add("missing", policy=missing, cell=row[index], **where)
        return
    column.graded += 1
    new = points_text(total.points)
    if graded and not same_number(old, total.points):
        report.add("changed", old=old, new=new, **where)
    if total.late_penalty:
        report.add("late", score=points_text(total.score), penalty=points_text(total.late_penalty), points=new, **where)
    if total.pending:
        report.add("pending", count=total.pending, points=new, **where)
    row[index] = new


def identity(value):
    """An identity as compared: surrounding spaces and case ignored ('' for none)."""
    return (value or "").strip().casefold()


def words(name):
    """A name as compared: its words sorted, without case, accents or commas."""
    plain = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    return sorted(plain.replace(",", " ").casefold().split())


def points_text(value):
    """Points as the file gets them: 8 -> '8', 5.5 -> '5.5' (up to 6 decimals, no exponent)."""
    return f"{value:.6f}".rstrip("0").rstrip(".")


def same_number(text, value):
    """True when ``text`` (as an LMS writes it: '8.00', '8,5') is ``value`` to the 2 decimals LMSs show."""
    if not re.fullmatch(r"-?[0-9.,]*[0-9][0-9.,]*", text.strip()):
        return False
    *whole, decimals = re.split(r"[.,]", text.strip())
    number = float(f"{''.join(whole)}.{decimals}" if whole else decimals)
    return abs(number - value) < 0.005

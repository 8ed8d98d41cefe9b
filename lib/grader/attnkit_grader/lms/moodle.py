"""Moodle's grade file: the gradebook's "Plain text file" export, which its "CSV file" import reads back.

The layout, from Moodle's exporter and importer (``grade/export/txt/grade_export_txt.php``,
``grade/import/csv/classes/load_data.php``) and its documentation (cited in docs-drafts/lms-export.md):

- the header: the user fields the site exports (by default ``First name``, ``Last name``, ``ID number``,
  ``Institution``, ``Department``, ``Email address``; ``Username`` when the site adds it), then one column per
  grade item titled ``Module: Item (Real)`` (``Assignment: Essay (Real)``; ``(Percentage)``, ``(Letter)`` and
  ``(Feedback)`` columns for other display types), and ``Last downloaded from this course``;
- one row per student, no row of maxima.

On import, the teacher maps one column to a user field ("Map from" a column, "Map to" useremail,
useridnumber or username) and each grade column to a grade item, or to a new one; an empty cell or ``-``
means no grade. Delimiter: the one chosen at export (comma, semicolon, tab or colon).
"""

import re

NAME = "Moodle"
WHAT = "Moodle's grade export (Grades > Export > Plain text file)"
DELIMITERS = (",", ";", "\t", ":")
# --identifier: the column it names, the roster field matched against it by default, and Moodle's "Map to".
IDENTIFIERS = {"email": ("Email address", "email"), "idnumber": ("ID number", "lms_user_id"),
               "username": ("Username", "id")}
MAP_TO = {"email": "useremail", "idnumber": "useridnumber", "username": "username"}
DEFAULT_IDENTIFIER = "email"
IDENTITY = ("First name", "Last name", "ID number", "Institution", "Department", "Email address", "Username")
LAST_DOWNLOADED = "Last downloaded from this course"
NEW_COLUMN = "map it to a new grade item, or to the assignment's grade item, on import"


def check(table, argument):
    """Moodle's import needs no particular column but the one it maps users from (checked by the caller)."""


def student_rows(table):
    """{row index: None}: every row of Moodle's export is a student."""
    return {index: None for index in range(len(table.rows))}


def row_name(table, index):
    """'First Last' from the 'First name' and 'Last name' columns, or None when the export lacks them."""
    first, last = table.column("First name"), table.column("Last name")
    if first is None or last is None:
        return None
    row = table.rows[index]
    return f"{row[first].strip()} {row[last].strip()}"


def assignment_columns(table, title):
    """Indices of the columns of grade item ``title`` in points: 'Module: Title (Real)', 'Title (Real)' or 'Title'."""
    pattern = re.compile(rf"(?:[^:]+:\s*)?{re.escape(title)}(?:\s+\(Real\))?")
    return [index for index, header in enumerate(table.header)
            if pattern.fullmatch(header.strip()) and header.strip() not in IDENTITY]


def add_column(table, title, points):
    """A new column ``title`` before 'Last downloaded from this course' (at the end without it). Moodle's file
    has no row of maxima, so ``points`` is only reported. Returns its index."""
    index = table.column(LAST_DOWNLOADED)
    index = len(table.header) if index is None else index
    table.insert_column(index, title)
    return index


def points_possible(table, index):
    """Moodle's file holds no maxima: always ''."""
    return ""

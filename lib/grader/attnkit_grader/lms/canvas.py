"""Canvas's gradebook CSV, as Grades > Export writes it and Grades > Import reads it back.

The layout, from Canvas's exporter and importer (canvas-lms ``lib/gradebook_exporter.rb``,
``app/models/gradebook_importer.rb``) and its instructor guides (cited in docs-drafts/lms-export.md):

- the header: ``Student`` (or ``LastName``, ``FirstName``), ``ID``, optionally ``SIS User ID``, then ``SIS Login
  ID``, optionally ``Integration ID`` and ``Root Account``, then ``Section``; then the course's custom columns,
  one column per assignment titled ``Title (id)``, and read-only totals (``Current Score``, ``Final Points``,
  ``Assignments Unposted Final Score``, ``Override Score``, ...);
- a row whose first cell says ``Points Possible`` (indented), with each assignment's points and ``(read only)``
  under the read-only columns; before it, when an assignment posts grades by hand, a row saying
  ``Manual Posting`` under it (``Muted`` in older exports);
- one row per student, the sortable name (``Last, First``) in ``Student``; Canvas's test student (Student View)
  is last, named ``Student, Test``.

On import, Canvas finds each row's student by ``ID``, then ``SIS User ID``, ``SIS Login ID``, then name, and a
column whose title is no assignment's creates a new assignment. Delimiter: comma, or semicolon in the locales
that write decimal commas.
"""

import re

NAME = "Canvas"
WHAT = "Canvas's gradebook export (Grades > Export > Export Entire Gradebook)"
DELIMITERS = (",", ";")
# --identifier: the identity column it names, and the roster field matched against it by default.
IDENTIFIERS = {"canvas_id": ("ID", "lms_user_id"), "sis_user_id": ("SIS User ID", "lms_user_id"),
               "sis_login_id": ("SIS Login ID", "id")}
DEFAULT_IDENTIFIER = "canvas_id"
IDENTITY = ("Student", "LastName", "FirstName", "ID", "SIS User ID", "SIS Login ID", "Integration ID",
            "Root Account", "Section")
TOTALS = re.compile("Current Score|Current Points|Current Grade|Final Score|Final Points|Final Grade|"
                    "Override Score|Override Grade|Override Status")
POINTS_POSSIBLE = "    Points Possible"
HIDDEN_ROW = re.compile(r"^\s*(Muted|Manual Posting.*)?\s*$", re.IGNORECASE)
TEST_STUDENT = "Student, Test"
TITLE_AND_ID = re.compile(r"(.*\S)\s+\((\d+)\)")
NEW_COLUMN = "Canvas creates a new assignment from it on import"


def check(table, argument):
    """Raise ValueError unless ``table`` has the identity columns Canvas's importer requires."""
    named = table.column("Student") is not None or None not in (table.column("LastName"), table.column("FirstName"))
    missing = [name for name, present in (("Student", named), ("ID", table.column("ID") is not None),
                                          ("Section", table.column("Section") is not None)) if not present]
    if missing:
        raise ValueError(f"{argument}: {table.path} has no {' or '.join(repr(m) for m in missing)} column, so it "
                         f"is not {WHAT}; its columns: {table.header[:8]}")


def points_row(table):
    """Index of the 'Points Possible' row, or None."""
    for index, row in enumerate(table.rows):
        if "Points Possible" in row[0]:
            return index
    return None


def student_rows(table):
    """{row index: None for a student, or why the row is left alone} over the rows below the header."""
    rows = {}
    for index, row in enumerate(table.rows):
        if "Points Possible" in row[0] or all(HIDDEN_ROW.match(cell) for cell in row):
            continue
        rows[index] = "Canvas's test student (Student View)" if row_name(table, index) == TEST_STUDENT else None
    return rows


def row_name(table, index):
    """The student's name as the row gives it: 'Last, First' (Student) or 'First Last' (FirstName, LastName)."""
    row = table.rows[index]
    if table.column("Student") is not None:
        return row[table.column("Student")].strip()
    return f"{row[table.column('FirstName')].strip()} {row[table.column('LastName')].strip()}"


def read_only(table, index):
    """True for identity columns, totals and columns the 'Points Possible' row marks '(read only)'."""
    title = table.header[index].strip()
    points = points_row(table)
    marked = points is not None and "read only" in table.rows[points][index]
    return title in IDENTITY or bool(TOTALS.search(title)) or marked


def assignment_columns(table, title):
    """Indices of the writable columns titled ``title``: 'Title (id)' as Canvas exports them, or the bare title."""
    found = []
    for index, header in enumerate(table.header):
        match = TITLE_AND_ID.fullmatch(header.strip())
        if (header.strip() == title or (match and match.group(1) == title)) and not read_only(table, index):
            found.append(index)
    return found


def add_column(table, title, points):
    """A new column ``title`` before the totals (Canvas's older importers drop trailing non-totals), worth
    ``points`` (text) in the 'Points Possible' row, which is added when the file lacks one. Returns its index."""
    index = next((i for i, h in enumerate(table.header) if TOTALS.search(h)), len(table.header))
    table.insert_column(index, title)
    row = points_row(table)
    if row is None:
        table.rows.insert(0, [POINTS_POSSIBLE] + [""] * (len(table.header) - 1))
        table.lines.insert(0, 2)
        row = 0
    table.rows[row][index] = points
    return index


def points_possible(table, index):
    """The 'Points Possible' row's text under column ``index`` ('' without such a row)."""
    row = points_row(table)
    return "" if row is None else table.rows[row][index].strip()

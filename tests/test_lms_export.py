"""attnkit export: the gradebook's totals into the LMS's own gradebook file, Canvas and Moodle (issue 30).

The fixtures in tests/fixtures/lms/ are written in each LMS's documented layout.

Canvas (canvas_gradebook.csv, example_class_canvas.csv): the file Grades > Export writes and Grades > Import
reads. Header Student, ID, SIS User ID, SIS Login ID, Section, one "Title (id)" column per assignment, then
read-only totals; a "Manual Posting" row for an assignment that posts grades by hand; an indented
"Points Possible" row ("(read only)" under the totals); rows by sortable name, the test student last.
  https://github.com/instructure/canvas-lms/blob/master/lib/gradebook_exporter.rb
  https://github.com/instructure/canvas-lms/blob/master/lib/gradebook_importer.rb
  https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-grades-in-the-Gradebook/ta-p/807
  https://teaching.resources.osu.edu/toolsets/carmencanvas/guides/calculating-final-grades/import-csv-file-carmen-grades
  https://nemogb-dev.github.io/nemogb-r/articles/detailed-canvas-export-info.html

Moodle (moodle_grades.csv, example_class_moodle.csv): the gradebook's "Plain text file" export, which the
"CSV file" grade import reads back, mapping users from the Email address, ID number or Username column.
Header: the default user fields (First name, Last name, ID number, Institution, Department, Email address),
"Assignment: NAME (Real)" per grade item, "Course total (Real)", "Last downloaded from this course"; '-' where
there is no grade.
  https://docs.moodle.org/311/en/Grade_import
  https://github.com/moodle/moodle/blob/main/grade/export/txt/grade_export_txt.php
  https://github.com/moodle/moodle/blob/main/grade/import/csv/classes/load_data.php
  https://github.com/moodle/moodle/blob/main/admin/settings/grades.php (grade_export_userprofilefields)

The gradebook is built with nbgrader's Gradebook API, as the grader and the formgrader write it: automatic
scores, manual scores entered in the formgrader (grade.manual_score), and a late hand-in whose penalty is
stored by the grader's own code (attnkit_grader.late, the course's LateSubmissionPlugin set to 'zero').
"""

import csv
import io
import shutil
import warnings

import pytest
from nbgrader.api import Gradebook
from sqlalchemy.exc import SAWarning
from traitlets.config import Config

from conftest import ROOT
from attnkit_grader.cli import main
from attnkit_grader.course import Course, use_venv_tools
from attnkit_grader.late import apply_late_penalty
from attnkit_grader.lms import canvas, moodle
from attnkit_grader.lms.fill import fill
from attnkit_grader.lms.roster import Student
from attnkit_grader.lms.table import read

FIXTURES = ROOT / "tests" / "fixtures" / "lms"
PS1, PS2 = "ps1_learnable_pe", "ps2_relative_pe"
DUE = "2030-01-15 17:00:00 UTC"
ON_TIME, LATE = "2030-01-15 12:00:00 UTC", "2030-01-16 09:00:00 UTC"
CELLS = {PS1: [("test_pe_table", 2, "code"), ("test_pe_forward", 4, "code"), ("written", 5, "markdown")],
         PS2: [("test_causal", 20, "code"), ("written", 3, "markdown")]}        # 11 and 23 points
STUDENTS = {"ada": ("Ada", "Lovelace", "ada@example.org", "1001"),
            "grace": ("Grace", "Hopper", "grace@example.org", "1002"),
            "alan": ("Alan", "Turing", "alan@example.org", "1003"),          # twice in the LMS files
            "barbara": ("Barbara", "Liskov", "barbara@example.org", "1005"),  # her identity is on Leslie Lamport's row
            "edsger": ("Edsger", "Dijkstra", "edsger@example.org", "1007"),   # in neither LMS file
            "don": ("Don", "Knuth", "don@example.org", "1008"),               # one identity, two students
            "donald": ("Donald", "Knuth", "don@example.org", "1008"),
            "katherine": ("Katherine", "Johnson", "katherine@example.org", "1009")}   # handed nothing in
# (student, assignment, handed in, automatic scores, manual scores entered in the formgrader or None)
SUBMISSIONS = [("ada", PS1, ON_TIME, {"test_pe_table": 2, "test_pe_forward": 4}, {"written": 4}),        # 10
               ("grace", PS1, LATE, {"test_pe_table": 2, "test_pe_forward": 3}, {"written": 3}),        # 8 - 5
               ("grace", PS2, ON_TIME, {"test_causal": 20}, None),                                      # 20, pending
               ("alan", PS1, ON_TIME, {"test_pe_table": 2, "test_pe_forward": 4}, {"written": 5}),
               ("barbara", PS1, ON_TIME, {"test_pe_table": 1, "test_pe_forward": 2}, {"written": 5}),   # 8
               ("edsger", PS1, ON_TIME, {"test_pe_table": 2, "test_pe_forward": 4}, {"written": 2}),
               ("don", PS1, ON_TIME, {"test_pe_table": 2, "test_pe_forward": 4}, {"written": 1}),
               ("donald", PS1, ON_TIME, {"test_pe_table": 0, "test_pe_forward": 0}, {"written": 0})]


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course folder whose gradebook holds the submissions above, written as the grader and formgrader do."""
    use_venv_tools()                                   # nbgrader runs alembic when it creates a gradebook
    root = tmp_path_factory.mktemp("course")
    shutil.copy2(ROOT / "nbgrader_config.py", root)
    course = Course(root)
    late_config = Config()
    late_config.LateSubmissionPlugin.penalty_method = "zero"
    with Gradebook(course.db_url, course.course_id) as gradebook, warnings.catch_warnings():
        # nbgrader 0.9.6 + SQLAlchemy 2 warn (harmlessly) when a submission is first created
        warnings.filterwarnings("ignore", "Object of type .* not in session", SAWarning)
        for assignment, cells in CELLS.items():
            gradebook.add_assignment(assignment, duedate=DUE)
            gradebook.add_notebook(assignment, assignment)
            for name, points, kind in cells:
                gradebook.add_grade_cell(name, assignment, assignment, max_score=points, cell_type=kind)
        for student, (first, last, email, lms_user_id) in STUDENTS.items():
            gradebook.add_student(student, first_name=first, last_name=last, email=email, lms_user_id=lms_user_id)
        for student, assignment, handed_in, automatic, manual in SUBMISSIONS:
            submission = gradebook.add_submission(assignment, student, timestamp=handed_in)
            for grade in submission.notebooks[0].grades:               # what the autograder writes
                grade.auto_score = automatic.get(grade.name)
                grade.needs_manual_grade = grade.auto_score is None
            gradebook.db.commit()
            apply_late_penalty(late_config, gradebook, submission, student)
            for grade in submission.notebooks[0].grades:               # what the formgrader writes
                if manual and grade.name in manual:
                    grade.manual_score = manual[grade.name]
                    grade.needs_manual_grade = False
            gradebook.db.commit()
        grace = gradebook.find_submission(PS1, "grace")
        assert (grace.score, grace.late_submission_penalty) == (8.0, 5.0)      # the penalty as the grader stored it
    return root


def export(course, lms, fixture, out, *options):
    """``attnkit --root COURSE export LMS FIXTURE --out OUT OPTIONS``: its exit status."""
    return main(["-q", "--root", str(course), "export", lms, str(fixture), "--out", str(out), *options])


def rows(path, delimiter=","):
    with open(path, newline="", encoding="utf-8-sig") as handle:
        return list(csv.reader(handle, delimiter=delimiter))


def test_canvas_gradebook_is_filled_in_its_own_layout(course, tmp_path, capsys):
    """Each total in the row Canvas knows the student by, a new column before the totals; nothing else changes."""
    source = FIXTURES / "canvas_gradebook.csv"
    before = source.read_bytes()
    out = tmp_path / "canvas_import.csv"
    assert export(course, "canvas", source, out, "--allow-mismatches", "--allow-ungraded") == 0
    assert source.read_bytes() == before
    original, filled = rows(source), rows(out)
    header = filled[0]
    assert header == original[0][:7] + [PS2] + original[0][7:]       # ps2 is new: before 'Assignments Current Points'
    assert filled[2][:8] == ["    Points Possible", "", "", "", "", "5.00", "11.00", "23"]
    by_name = {row[0]: row[6:8] for row in filled[3:]}
    assert by_name["Lovelace, Ada"] == ["10", "0"]            # 6 automatic + 4 by hand; nothing handed in for ps2
    assert by_name["Hopper, Grace"] == ["3", "20"]            # (5 + 3) - 5 late penalty; ps2 awaits a hand grade
    assert by_name["Lamport, Leslie"] == ["8", "0"]           # barbara's identity: filled once allowed
    assert by_name["Johnson, Katherine"] == ["EX", "0"]       # nothing handed in: Canvas's 'excused' kept
    for untouched in ("Turing, Alan", "Hamilton, Margaret", "Knuth, Donald", "Student, Test"):
        assert by_name[untouched] == ["", ""], untouched
    unchanged = [[cell for i, cell in enumerate(row) if i not in (6, 7)] for row in filled]
    assert unchanged == [[cell for i, cell in enumerate(row) if i != 6] for row in original]


def test_every_mismatch_is_reported_by_name_and_stops_the_export(course, tmp_path, capsys):
    """Missing, extra, duplicated and misnamed students, each by name; exit 1 and nothing written."""
    out = tmp_path / "canvas_import.csv"
    assert export(course, "canvas", FIXTURES / "canvas_gradebook.csv", out) == 1
    assert not out.exists()
    text = capsys.readouterr().out
    mismatches = text.split("Mismatches")[1].split("Awaiting")[0]
    for expected in ("edsger (Edsger Dijkstra): no row with ID '1007'",
                     "line 8, Hamilton, Margaret (ID '1004'): not on the roster",
                     "ID '1003' is on lines 6, 7 (Turing, Alan; Turing, Alan)",
                     "lms_user_id '1008' is shared by don, donald",
                     "barbara: the roster says 'Barbara Liskov', line 9 says 'Lamport, Leslie'"):
        assert expected in mismatches, expected
    assert len(mismatches.strip().splitlines()) == 6                   # the title and those five
    assert "grace / ps2_relative_pe: 1 cell(s) await a manual grade" in text
    for note in ("line 12, Student, Test: Canvas's test student",
                 "katherine / ps1_learnable_pe: no submission in the gradebook: kept the LMS file's 'EX'",
                 "grace / ps1_learnable_pe: 8 points minus a late penalty of 5 = 3",
                 "ps2_relative_pe: no column titled after it: added one, worth 23 points; Canvas creates"):
        assert note in text, note
    assert export(course, "canvas", FIXTURES / "canvas_gradebook.csv", out, "--allow-mismatches") == 1
    assert not out.exists()                                            # the ungraded cell still stops it


def test_moodle_grades_are_filled_by_email(course, tmp_path, capsys):
    """Email found whatever its case; '-' (no grade) filled, a grade entered in Moodle kept, no row of maxima."""
    source = FIXTURES / "moodle_grades.csv"
    out = tmp_path / "moodle_import.csv"
    assert export(course, "moodle", source, out, "--allow-mismatches", "--allow-ungraded", "--missing", "blank") == 0
    original, filled = rows(source), rows(out)
    assert filled[0] == original[0][:9] + [PS2] + original[0][9:]     # before 'Last downloaded from this course'
    by_email = {row[5]: [row[7], row[9]] for row in filled[1:]}
    assert by_email["ada@example.org"] == ["10", ""]                   # --missing blank: no grade
    assert by_email["Grace@Example.org"] == ["3", "20"]
    assert by_email["barbara@example.org"] == ["8", ""]
    assert by_email["katherine@example.org"] == ["7.00", ""]           # entered in Moodle: kept
    assert by_email["margaret@example.org"] == by_email["alan@example.org"] == by_email["don@example.org"] == ["-", ""]
    text = capsys.readouterr().out
    assert "ada / ps1_learnable_pe: the LMS file's '-' replaced" not in text             # '-' is no grade
    assert "katherine / ps1_learnable_pe: no submission in the gradebook: kept the LMS file's '7.00'" in text
    assert "barbara: the roster says 'Barbara Liskov', line 7 says 'Leslie Lamport'" in text
    assert "edsger (Edsger Dijkstra): no row with Email address 'edsger@example.org'" in text


def test_canvas_points_possible_must_agree_with_the_gradebook(course, tmp_path, capsys):
    source = tmp_path / "canvas.csv"
    source.write_text((FIXTURES / "canvas_gradebook.csv").read_text().replace(",5.00,11.00,", ",5.00,10.00,"))
    assert export(course, "canvas", source, tmp_path / "out.csv", "--allow-ungraded", "--assignments", PS1) == 1
    assert ("ps1_learnable_pe: column 'ps1_learnable_pe (9101)' is worth '10.00' points in the LMS file, 11 in the "
            "gradebook") in capsys.readouterr().out


def test_semicolons_crlf_and_the_utf8_mark_are_written_back(course, tmp_path, capsys):
    """Canvas writes ';' where decimals take a comma, and a byte-order mark on request: the copy keeps both."""
    table = rows(FIXTURES / "canvas_gradebook.csv")
    table[2][5:7] = ["5,00", "11,00"]                   # decimal commas, as in the locales that separate with ';'
    table[3][6], table[4][6] = "9,50", "3,00"             # Ada's and Grace's ps1 cells already hold a grade
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=";", lineterminator="\r\n").writerows(table)
    source = bad(tmp_path / "canvas.csv", "\ufeff" + buffer.getvalue())
    out = tmp_path / "out.csv"
    assert export(course, "canvas", source, out, "--allow-mismatches", "--allow-ungraded", "--assignments", PS1) == 0
    data = out.read_bytes()
    assert data.startswith("\ufeffStudent;ID;".encode("utf-8")) and data.count(b"\r\n") == data.count(b"\n") == 12
    assert rows(out, ";")[3][:7] == ["Lovelace, Ada", "1001", "S-1001", "ada", "Section 1", "4.00", "10"]
    text = capsys.readouterr().out
    assert "is worth" not in text                                        # '11,00' is 11 points
    assert "ada / ps1_learnable_pe: the LMS file's '9,50' replaced by 10" in text
    assert "grace / ps1_learnable_pe: the LMS file's" not in text       # '3,00' is her 3 points


def bad(path, text, encoding="utf-8"):
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return path


CANVAS = (FIXTURES / "canvas_gradebook.csv").read_text()
MOODLE = (FIXTURES / "moodle_grades.csv").read_text()


@pytest.mark.parametrize("lms, content, options, message", [
    ("canvas", CANVAS.replace("Section,", "Group,", 1), [], "lms_csv: {src} has no 'Section' column"),
    ("moodle", MOODLE.replace("Email address", "Adresse de courriel"), [],
     "lms_csv: {src} has no 'Email address' column to find students by"),
    ("canvas", CANVAS, ["--assignments", "ps9"], "assignments: ['ps9'] not in the gradebook"),
    ("canvas", CANVAS, ["--column", "ps1_learnable_pe=Problem set 1 (77)"],
     "columns: {src} has no column 'Problem set 1 (77)'"),
    ("canvas", CANVAS, ["--column", "ps1_learnable_pe=Current Score"], "columns: 'Current Score' is a read-only"),
    ("canvas", CANVAS.replace("Lovelace", "Lövelace").encode("latin-1"), [], "lms_csv: {src} is not UTF-8"),
    ("canvas", CANVAS.encode("utf-16"), [], "lms_csv: {src} is UTF-16"),
    ("canvas", CANVAS.replace(",", "\t"), [], "lms_csv: {src} has a single column"),
    ("moodle", MOODLE.replace("4.00,-", "4,00,-", 1), [], "lms_csv: {src} line 2 has 11 fields, its header 10"),
    ("canvas", "", [], "lms_csv: {src} is empty"),
])
def test_bad_input_is_refused_naming_the_argument(course, tmp_path, capsys, lms, content, options, message):
    source = bad(tmp_path / "lms.csv", content)
    assert export(course, lms, source, tmp_path / "out.csv", *options) == 2
    assert f"attnkit: error: {message.format(src=source)}" in capsys.readouterr().err
    assert not (tmp_path / "out.csv").exists()


def test_the_lms_file_is_never_overwritten(course, tmp_path, capsys):
    source = bad(tmp_path / "lms.csv", CANVAS)
    link = tmp_path / "link.csv"
    link.symlink_to(source)
    for out in (source, link):
        assert export(course, "canvas", source, out, "--allow-mismatches", "--allow-ungraded") == 2
        assert "attnkit: error: out:" in capsys.readouterr().err
    assert source.read_text() == CANVAS


def test_nbgrader_export_takes_the_plugin(course, tmp_path, monkeypatch):
    """nbgrader export --exporter=...CanvasExportPlugin: the same file as attnkit export."""
    from nbgrader.apps import ExportApp

    monkeypatch.chdir(course)
    out = tmp_path / "nbgrader.csv"
    arguments = ["--exporter=attnkit_grader.lms.plugins.CanvasExportPlugin", f"--to={out}",
                 f"--CanvasExportPlugin.lms_csv={FIXTURES / 'canvas_gradebook.csv'}"]
    app = ExportApp()
    app.initialize(arguments)
    with pytest.raises(ValueError, match="Canvas export stopped by mismatch and ungraded findings"):
        app.start()
    assert not out.exists()
    app = ExportApp()
    app.initialize(arguments + [f"--CanvasExportPlugin.{flag}=True" for flag in ("allow_mismatches", "allow_ungraded")])
    app.start()
    assert export(course, "canvas", FIXTURES / "canvas_gradebook.csv", tmp_path / "attnkit.csv",
                  "--allow-mismatches", "--allow-ungraded") == 0
    assert out.read_bytes() == (tmp_path / "attnkit.csv").read_bytes()


@pytest.mark.parametrize("layout, fixture, identifier", [(canvas, "example_class_canvas.csv", "sis_login_id"),
                                                         (moodle, "example_class_moodle.csv", "email")])
def test_the_example_class_lms_files_hold_its_class_list(layout, fixture, identifier):
    """Every student of the example class in one row, same name: attnkit export fills them without a mismatch."""
    with open(ROOT / "examples" / "example_class" / "students.csv", newline="") as handle:
        roster = [Student(**row) for row in csv.DictReader(handle)]
    table = read(FIXTURES / fixture, "lms_csv", layout.DELIMITERS, layout.WHAT)
    report = fill(layout, table, roster, {}, {}, identifier=identifier)
    assert report.matched == report.named == len(roster) == 15
    assert [finding.kind for finding in report.findings] == (["skipped_row"] if layout is canvas else [])

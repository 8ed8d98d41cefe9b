"""Reading a class roster for the hub's enrolment (hub/enrol.py): the LMS exports the kit fills, a plain CSV, and
the rows a mischievous or careless roster holds, each refused by its line. No root needed: no account is made."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "hub"))
import enrol  # noqa: E402 - hub/enrol.py, run by root with the system's Python

LMS = ROOT / "tests" / "fixtures" / "lms"
SYSTEM = {"root": 0, "daemon": 1, "www-data": 33, "nobody": 65534, "alice": 1005}


def no_accounts(name):
    return None


def machine(name):
    return SYSTEM.get(name)


def roster(tmp_path, text, name="roster.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_canvas_export_gives_logins_names_and_canvas_ids():
    enrolees = enrol.read(LMS / "example_class_canvas.csv", no_accounts)
    blake = enrolees[0]
    assert (blake.id, blake.first_name, blake.last_name, blake.lms_user_id) == ("blank", "Blake", "Blank", "52001")
    assert len(enrolees) == 15 and "Test" not in {e.first_name for e in enrolees}   # Canvas's test student
    assert all(e.id and e.lms_user_id for e in enrolees)


@pytest.mark.parametrize("export, line, earlier, lms_id", [("canvas_gradebook.csv", 7, 6, "1003"),
                                                          ("moodle_grades.csv", 5, 4, "S-1003")])
def test_an_lms_exports_duplicate_rows_are_refused_by_line(export, line, earlier, lms_id):
    with pytest.raises(enrol.RosterError) as refused:
        enrol.read(LMS / export, no_accounts)
    assert f"line {line}: account 'alan' is also line {earlier}'s" in str(refused.value)
    assert f"line {line}: LMS id '{lms_id}' is also line {earlier}'s" in str(refused.value)


def test_canvas_test_student_and_hidden_rows_are_left_out(tmp_path):
    path = roster(tmp_path, "Student,ID,SIS User ID,SIS Login ID,Section,PS1 (1)\n"
                            ",,,,,Manual Posting\n"
                            "    Points Possible,,,,,11.00\n"
                            '"Lovelace, Ada",1001,S1,ada,Sec,\n'
                            '"Student, Test",9999,,,Sec,\n')
    assert [e.id for e in enrol.read(path, no_accounts)] == ["ada"]


def test_moodle_export_gives_accounts_from_emails_and_names():
    enrolees = enrol.read(LMS / "example_class_moodle.csv", no_accounts)
    blake = enrolees[0]
    assert (blake.id, blake.first_name, blake.last_name, blake.email) == ("blank", "Blake", "Blank",
                                                                          "blank@example.org")


def test_plain_roster_with_nbgraders_columns_and_a_semicolon(tmp_path):
    path = roster(tmp_path, "id;first_name;last_name;email;lms_user_id\nada;Ada;Lovelace;ada@example.org;77\n")
    assert enrol.read(path, no_accounts) == [enrol.Enrolee("ada", "Ada", "Lovelace", "ada@example.org", "77", 2)]


@pytest.mark.parametrize("account, why", [
    ("$(touch pwned)", "not a plain Unix name"),
    ("ada;rm -rf ~", "not a plain Unix name"),
    ("../etc", "not a plain Unix name"),
    ("a/b", "not a plain Unix name"),
    ("-rf", "not a plain Unix name"),
    ("Ada", "not a plain Unix name"),
    ("x" * 33, "not a plain Unix name"),
    ("root", "is reserved"),
    ("instructor", "is reserved"),
    ("daemon", "is a system account (uid 1)"),
    ("www-data", "is a system account (uid 33)"),
])
def test_hostile_account_names_are_refused_with_the_row(tmp_path, account, why):
    path = roster(tmp_path, f'id,first_name\nbob,Bob\n"{account}",Mallory\n')
    with pytest.raises(enrol.RosterError) as refused:
        enrol.read(path, machine)
    assert "line 3: account" in str(refused.value) and why in str(refused.value)
    assert "nothing enrolled" in str(refused.value) and "line 2" not in str(refused.value)


def test_an_existing_ordinary_account_is_taken_over_as_the_student(tmp_path):
    """An account of uid 1000 or more (a student enrolled before) is updated, not refused."""
    assert [e.id for e in enrol.read(roster(tmp_path, "id\nalice\n"), machine)] == ["alice"]


@pytest.mark.parametrize("name", ["Ada:0:0", "Ada,Room 1", "Ada=1", "Ada\x1b[2J"])
def test_names_that_would_break_the_accounts_comment_field_are_refused(tmp_path, name):
    path = roster(tmp_path, f'id,first_name\nada,"{name}"\n')
    with pytest.raises(enrol.RosterError, match="line 2: first_name"):
        enrol.read(path, no_accounts)


def test_a_roster_that_is_no_roster_names_its_columns(tmp_path):
    with pytest.raises(enrol.RosterError, match=r"ROSTER: .* no plain roster .*'name', 'mail'"):
        enrol.read(roster(tmp_path, "name,mail\nAda,ada@example.org\n"), no_accounts)
    with pytest.raises(enrol.RosterError, match="ROSTER: cannot read"):
        enrol.read(tmp_path / "missing.csv", no_accounts)
    with pytest.raises(enrol.RosterError, match="lists no student"):
        enrol.read(roster(tmp_path, "id,first_name\n"), no_accounts)


def test_the_class_list_gains_names_and_lms_ids_and_loses_removed_demo_students():
    current = "id\nstudent1\nstudent2\nada\n"
    ada = enrol.Enrolee("ada", "Ada", "Lovelace", "ada@example.org", "1001", 2)
    text = enrol.class_list([ada], current, {"student1"})
    assert text == ("id,first_name,last_name,email,lms_user_id\n"
                    "ada,Ada,Lovelace,ada@example.org,1001\nstudent2,,,,\n")
    assert enrol.class_list([ada], text, set()) == text          # enrolling again changes nothing


class RecordingHub:
    """hub/course.py as enrol.py calls it, recording commands instead of running them (no root, no account)."""

    STUDENTS = ("student1", "student2", "student3")
    INSTRUCTOR = "instructor"
    PREFIX = Path("/nonexistent/attnkit-course")

    def __init__(self, course):
        self.commands, self.written, self.course = [], {}, course

    def kill_user_processes(self, user):
        self.commands.append(("kill", user))

    def run(self, command, user=None, cwd=None, quiet=False, **_):
        self.commands.append(tuple(map(str, command)))

    def write_as(self, user, path, text, append=False):
        self.written[path] = text

    def course_dir(self):
        return self.course


def test_remove_demo_removes_the_demo_accounts_the_roster_does_not_name_with_their_gradebook_entries(
        tmp_path, monkeypatch):
    """--remove-demo: student1 goes (account, home, processes, students.csv row, gradebook entry); student2,
    whom the roster names, stays; student3, with no account on this machine, is not touched."""
    import pwd
    import subprocess

    accounts = {"student1", "student2"}

    def getpwnam(name):
        if name not in accounts:
            raise KeyError(name)
        return name

    ran = []

    def fake_run(command, **options):
        ran.append(command)
        text = b"id\nstudent1\nstudent2\nstudent3\n" if command[-1].endswith("students.csv") else b""
        return subprocess.CompletedProcess(command, 0, stdout=text)

    monkeypatch.setattr(pwd, "getpwnam", getpwnam)
    monkeypatch.setattr(enrol.subprocess, "run", fake_run)
    hub = RecordingHub(tmp_path / "course")
    roster = [enrol.Enrolee("student2", "Sam", "Two", "", "2002", 2), enrol.Enrolee("ada", "Ada", "L", "", "1001", 3)]
    removed = enrol.remove_demo(roster, hub)
    assert removed == ["student1"]
    assert hub.commands == [("kill", "student1"), ("userdel", "--remove", "--", "student1")]
    assert enrol.gradebook(roster, set(removed), hub)
    removal = [c for c in ran if "remove" in c]
    assert len(removal) == 1 and removal[0][-4:] == ["student", "remove", "--force", "student1"]
    assert removal[0][:4] == ["runuser", "-u", "instructor", "--"]             # as the instructor, never root
    written = hub.written[tmp_path / "course" / "students.csv"]
    assert [line.split(",")[0] for line in written.splitlines()] == ["id", "ada", "student2", "student3"]
    assert ("nbgrader", "db", "student", "import", "students.csv") in hub.commands


def test_attnkit_hub_enrol_runs_the_checkouts_enrol_py(tmp_path, monkeypatch):
    """`attnkit hub enrol ROSTER --remove-demo` is hub/enrol.py of this checkout, with the same arguments."""
    from attnkit_grader import cli

    called = []
    monkeypatch.setattr(cli.subprocess, "call", lambda command: called.append(command) or 0)
    assert cli.main(["hub", "enrol", str(tmp_path / "roster.csv"), "--remove-demo"]) == 0
    assert called == [[sys.executable, str(ROOT / "hub" / "enrol.py"), str(tmp_path / "roster.csv"), "--remove-demo"]]

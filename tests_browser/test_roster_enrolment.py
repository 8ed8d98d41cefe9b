"""Enrolling a class from the LMS (hub/enrol.py): five students from a Canvas gradebook export, one of them logged in.

Runs after the course's own tests (the demo students stay); the five accounts, their homes, the first passwords
and their gradebook entries are removed at the end, so the machine holds the demo course only.
"""

import csv
import grp
import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EDITION, ROOT, URL, hub

CANVAS = ROOT / "tests" / "fixtures" / "lms" / "example_class_canvas.csv"
ENROL = [sys.executable, str(ROOT / "hub" / "enrol.py")]


@pytest.fixture(scope="module")
def five(course, tmp_path_factory):
    """A Canvas export of the example class's first five students (its header, Points Possible row and test
    student kept); the course's class list as it was, restored at the end with the accounts removed."""
    lines = CANVAS.read_text(encoding="utf-8").splitlines(keepends=True)
    roster = tmp_path_factory.mktemp("roster") / "canvas.csv"
    roster.write_text("".join(lines[:7] + lines[-1:]), encoding="utf-8")
    rows = list(csv.reader(lines[2:7]))
    accounts = [row[3] for row in rows]
    class_list = hub.course_dir() / "students.csv"
    before = class_list.read_text()
    yield roster, accounts, rows
    for user in accounts:
        try:
            pwd.getpwnam(user)
        except KeyError:
            continue
        hub.kill_user_processes(user)
        subprocess.run(["userdel", "--remove", user], check=False)
        hub.run(["nbgrader", "db", "student", "remove", "--force", user], user=hub.INSTRUCTOR,
                cwd=hub.course_dir(), quiet=True)
    hub.write_as(hub.INSTRUCTOR, class_list, before)
    (hub.PREFIX / "state" / "first-passwords.csv").unlink(missing_ok=True)


def enrol(roster):
    return subprocess.run(ENROL + [str(roster), "--edition", str(EDITION)], capture_output=True, text=True)


def test_five_students_enrolled_from_canvas_and_one_logs_in(five, new_page):
    roster, accounts, rows = five
    first = enrol(roster)
    assert first.returncode == 0, first.stderr
    record = hub.PREFIX / "state" / "first-passwords.csv"
    info = os.stat(record)
    assert (info.st_uid, info.st_mode & 0o777) == (0, 0o600)
    passwords = dict(row for row in csv.reader(record.read_text().splitlines()[1:]))
    assert sorted(passwords) == sorted(accounts)
    assert not any(secret in first.stdout + first.stderr for secret in passwords.values())
    for user, row in zip(accounts, rows):
        entry = pwd.getpwnam(user)
        last, first_name = (part.strip() for part in row[0].split(","))
        assert entry.pw_gecos == f"{first_name} {last}" and user in grp.getgrnam("attnkit-students").gr_mem
        assert os.stat(entry.pw_dir).st_mode & 0o777 == 0o700 and (Path(entry.pw_dir) / "course").is_dir()
    listed = hub.run(["nbgrader", "db", "student", "list"], user=hub.INSTRUCTOR, cwd=hub.course_dir(),
                     quiet=True).decode()
    assert "Blank" in listed and "52001" in listed

    again = enrol(roster)
    assert again.returncode == 0 and "nothing to change" in again.stdout, again.stdout + again.stderr
    assert dict(row for row in csv.reader(record.read_text().splitlines()[1:])) == passwords

    page = new_page()
    page.goto(f"{URL}/hub/login")
    page.fill("#username_input", accounts[0])
    page.fill("#password_input", passwords[accounts[0]])
    page.click("#login_submit")
    page.wait_for_selector("#jp-main-dock-panel", timeout=180_000)
    assert f"/user/{accounts[0]}/" in page.url


def test_a_hostile_roster_enrols_nobody_and_names_the_row(five, tmp_path):
    roster = tmp_path / "hostile.csv"
    roster.write_text("id,first_name\nfresh_one,Fresh\n\"$(touch /tmp/pwned)\",Mallory\nroot,Root\n")
    refused = enrol(roster)
    assert refused.returncode != 0
    assert "line 3: account '$(touch /tmp/pwned)'" in refused.stderr and "line 4: account 'root' is reserved" in refused.stderr
    with pytest.raises(KeyError):
        pwd.getpwnam("fresh_one")

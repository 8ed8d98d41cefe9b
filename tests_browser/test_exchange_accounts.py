"""The exchange and the course folder hold against students: commands run from the students' own accounts.

After the browser test (student1 and student2 have handed in PS1), student3 works from a login shell, as a
student with a terminal in JupyterLab could: reading or changing others' files and hand-ins (even knowing a
hand-in's name), reading the checkout the hub was set up from, submitting as someone else, backdating, and
handing in twice, late, and a broken notebook. ``attnkit collect`` and ``nbgrader collect`` refuse the
forged hand-ins; the grader takes the latest, applies the course's late penalty and names the broken file.
"""

import datetime
import grp
import hashlib
import json
import shlex
import stat
import subprocess
import time
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from conftest import ROOT, hub
from test_course_in_browser import CORRECT, PS1, as_instructor

PS2 = "ps2_relative_pe"


def as_user(user, command, cwd=None):
    """``command`` (shell text) run by ``user`` from a login shell (the course's PATH), in ``cwd`` or home."""
    where = f"cd {shlex.quote(str(cwd))} && " if cwd else ""
    return subprocess.run(["runuser", "-l", user, "-c", where + command], text=True, capture_output=True)


def tree(folder):
    """{relative path: (mode, owner, sha256 of a file's bytes)} of everything in ``folder`` (read as root)."""
    found = {}
    for path in sorted([folder, *folder.rglob("*")]):
        info = path.lstat()
        data = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
        found[str(path.relative_to(folder))] = (stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid, data)
    return found


def refused(result):
    return result.returncode != 0 and "Permission denied" in (result.stderr + result.stdout)


@pytest.fixture(scope="module")
def places(course):
    inbound = course.exchange_dir() / course.COURSE_ID / "inbound"
    others = sorted(p for p in inbound.iterdir() if p.owner() in ("student1", "student2"))
    assert others, "the browser test left no hand-in of student1 or student2"
    return {"inbound": inbound, "other_handin": others[0], "course": course.course_dir()}


def test_a_student_cannot_read_or_change_other_students_files(places):
    assert refused(as_user("student3", "ls /home/student1"))
    assert refused(as_user("student3", f"cat /home/student1/{PS1}/{PS1}.ipynb"))
    assert refused(as_user("student3", f"echo x > /home/student1/{PS1}/{PS1}.ipynb"))


def test_a_student_cannot_reach_the_instructors_course_folder_or_the_grader(places):
    course = places["course"]
    for command in (f"ls {course}", f"cat {course}/gradebook.db", f"cat {course}/source/{PS1}/{PS1}.ipynb",
                    f"ls {hub.PREFIX}/grader", f"cat {hub.PREFIX}/grader.json", f"{hub.PREFIX}/bin/attnkit --help",
                    f"ls {hub.PREFIX}/state"):
        assert refused(as_user("student3", command)), command
    assert as_user("instructor", f"cat {hub.PREFIX}/grader.json").returncode == 0
    imported = as_user("student3", "python -c 'import attnkit_assignments'")
    assert imported.returncode != 0 and "No module named 'attnkit_assignments'" in imported.stderr


def test_a_student_cannot_list_the_inbound_or_change_the_exchange(places):
    inbound = places["inbound"]
    assert refused(as_user("student3", f"ls {inbound}"))
    exchange = inbound.parent
    assert as_user("student3", f"mv '{exchange}' '{exchange}.moved'").returncode != 0 and exchange.is_dir()
    assert refused(as_user("student3", f"touch '{exchange}/outbound/{PS1}/extra.ipynb'"))
    assert refused(as_user("student3", f"ls '{exchange}/feedback'"))


def test_a_handin_is_closed_to_a_classmate_who_knows_its_name(places):
    """student3, given the (random, unlistable) name of another's hand-in, can neither read, list, add to,
    change, rename, re-permission nor delete it; it stays byte for byte, readable by the instructors' group."""
    inbound, handin = places["inbound"], places["other_handin"]
    notebook = handin / f"{PS1}.ipynb"
    before = tree(handin)
    q = shlex.quote             # a hand-in's name holds spaces
    attempts = [f"ls {q(str(handin))}", f"cat {q(str(notebook))}", f"cp -r {q(str(handin))} /tmp/copied-handin",
                f"touch {q(str(handin / 'extra.txt'))}", f"echo '{{}}' >> {q(str(notebook))}",
                f"echo '{{}}' > {q(str(notebook))}", f"rm -f {q(str(notebook))}",
                f"mv {q(str(notebook))} {q(str(handin / 'x'))}", f"chmod 777 {q(str(handin))}",
                f"chmod 666 {q(str(notebook))}", f"mv {q(str(handin))} {q(str(inbound / f'student3+{PS1}+taken'))}",
                f"rm -rf {q(str(handin))}"]
    for attempt in attempts:
        done = as_user("student3", attempt)
        assert done.returncode != 0, f"student3 could: {attempt}"
    assert tree(handin) == before
    instructors = grp.getgrnam("attnkit-instructors").gr_gid
    assert all(gid == instructors and mode & 0o007 == 0 for mode, _, gid, _ in before.values()), before
    assert stat.S_IMODE(handin.stat().st_mode) == 0o750 and stat.S_IMODE(notebook.stat().st_mode) == 0o640


def test_the_checkout_the_hub_was_set_up_from_is_closed_to_students(places):
    """setup (here the browser test's own, as in CI) closed the checkout: its solutions and reference modules
    cannot be read or imported by a student."""
    reference = ROOT / "lib" / "grader" / "attnkit_assignments" / PS1 / "reference.py"
    importing = (f"python -c 'import sys; sys.path.insert(0, \"{ROOT}/lib/grader\"); "
                 f"import attnkit_assignments.{PS1}.reference'")
    for command in (f"ls {ROOT}", f"cat {ROOT}/source/{PS1}/{PS1}.ipynb", f"cat {reference}", importing):
        done = as_user("student3", command)
        assert done.returncode != 0, f"student3 could: {command}"
    assert reference.is_file()


def test_submitting_as_another_student_or_backdated_is_refused_at_collect(places):
    fetched = as_user("student3", f"{{ [ -d {PS1} ] || nbgrader fetch_assignment {PS1}; }} && "
                                  f"nbgrader submit {PS1} --student=student1")
    assert fetched.returncode == 0, fetched.stderr          # nbgrader itself lets it through
    yesterday = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=1))
    stamp = yesterday.strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    forged = places["inbound"] / f"student3+{PS1}+{stamp}+handmade"
    made = as_user("student3", f"mkdir '{forged}' && cp {PS1}/{PS1}.ipynb '{forged}/' && "
                               f"echo '{stamp}' > '{forged}/timestamp.txt' && touch -d yesterday '{forged}'/*")
    assert made.returncode == 0, made.stderr
    collected = as_user("instructor", f"attnkit collect {PS1}", cwd=places["course"])
    assert collected.returncode == 1, collected.stdout + collected.stderr
    assert "owned by student3, not by student1" in collected.stdout, collected.stdout
    assert "handmade" in collected.stdout and "backdated, postdated or changed later" in collected.stdout
    # nbgrader's own command goes through the same checks (the hub's CheckedCollect)
    typed = as_user("instructor", f"nbgrader collect --update {PS1}", cwd=places["course"])
    assert "owned by student3, not by student1" in typed.stderr and "handmade" in typed.stderr, typed.stderr
    submitted = places["course"] / "submitted"
    assert not (submitted / "student3").exists()
    # student1's own hand-in (the correct answer typed in the browser) is what stays in submitted/
    assert "self.P = nn.Parameter" in (submitted / "student1" / PS1 / f"{PS1}.ipynb").read_text()


def test_twice_late_and_broken_handins_are_graded_as_the_course_says(course, places):
    # student3 hands in PS1 as fetched (on time); the due date passes; student3 hands it in again, now
    # with the correct answer (late), and PS2 with a broken notebook
    first = as_user("student3", f"nbgrader submit {PS1}")
    assert first.returncode == 0, first.stderr
    due = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1)
    as_instructor("nbgrader", "db", "assignment", "add", PS1, f"--duedate={due:%Y-%m-%d %H:%M:%S} UTC")
    time.sleep(2)
    notebook = Path(f"/home/student3/{PS1}/{PS1}.ipynb")
    content = json.loads(notebook.read_text())
    for cell in content["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == "pe_answer":
            cell["source"] = CORRECT
    subprocess.run(["runuser", "-u", "student3", "--", "tee", str(notebook)], input=json.dumps(content),
                   text=True, capture_output=True, check=True)
    for step in (f"nbgrader submit {PS1}",
                 f"nbgrader fetch_assignment {PS2} && echo 'not a notebook {{' > {PS2}/{PS2}.ipynb && "
                 f"nbgrader submit {PS2}"):
        done = as_user("student3", step)
        assert done.returncode == 0, done.stderr
    for assignment in (PS1, PS2):
        collected = as_instructor("attnkit", "collect", assignment, check=False)   # refusals above stay
        assert "collected student3" in collected, collected
        as_instructor("attnkit", "grade", assignment)
    with Gradebook(f"sqlite:///{places['course']}/gradebook.db", course.COURSE_ID) as gradebook:
        late = gradebook.find_submission(PS1, "student3")
        assert late.total_seconds_late > 0 and late.late_submission_penalty == late.score == 6.0
        assert gradebook.find_submission(PS1, "student1").total_seconds_late == 0
    report = json.loads((places["course"] / "grades" / "report.json").read_text())
    text = json.dumps(report)
    assert f"{PS2}.ipynb" in text and "rejected" in text, text[:2000]


def test_stopping_the_hub_loses_no_handin(course, places):
    before = sorted(p.name for p in places["inbound"].iterdir())
    course.stop()
    after = sorted(p.name for p in places["inbound"].iterdir())
    course.start()
    assert before == after and len(before) >= 4
    assert (places["course"] / "submitted" / "student1" / PS1 / f"{PS1}.ipynb").is_file()

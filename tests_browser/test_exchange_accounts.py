"""The exchange and the course folder hold against students: commands run from the students' own accounts.

After the browser test (student1 and student2 have handed in PS1), student3 works from a shell, as a
student with a terminal in JupyterLab could: reading or changing others' files, submitting as someone
else, backdating, and handing in twice, late, and a broken notebook. ``attnkit collect`` refuses the
forged hand-ins; the grader takes the latest, applies the course's late penalty and names the broken file.
"""

import datetime
import json
import pwd
import subprocess
import time
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from conftest import hub
from test_course_in_browser import CORRECT, PS1, as_instructor

PS2 = "ps2_relative_pe"
VENV = f"{hub.PREFIX}/venv/bin"


def as_user(user, command, cwd=None):
    """``command`` (shell text) run by ``user`` in their home with the course's environment."""
    home = pwd.getpwnam(user).pw_dir
    env = ["env", "-i", f"HOME={home}", f"USER={user}", "LANG=C.UTF-8", f"PATH={VENV}:/usr/bin:/bin"]
    return subprocess.run(["runuser", "-u", user, "--", *env, "sh", "-c", command], cwd=cwd or home,
                          text=True, capture_output=True)


def refused(result):
    return result.returncode != 0 and "Permission denied" in (result.stderr + result.stdout)


@pytest.fixture(scope="module")
def places(course):
    inbound = course.exchange_dir() / course.COURSE_ID / "inbound"
    others = sorted(p for p in inbound.iterdir() if not p.name.startswith("student3+"))
    assert others, "the browser test left no hand-in of student1 or student2"
    return {"inbound": inbound, "other_handin": others[0], "course": course.course_dir()}


def test_a_student_cannot_read_or_change_other_students_files(places):
    assert refused(as_user("student3", "ls /home/student1"))
    assert refused(as_user("student3", f"cat /home/student1/{PS1}/{PS1}.ipynb"))
    assert refused(as_user("student3", f"echo x > /home/student1/{PS1}/{PS1}.ipynb"))


def test_a_student_cannot_reach_the_instructors_course_folder_or_the_grader(places):
    course = places["course"]
    for command in (f"ls {course}", f"cat {course}/gradebook.db", f"cat {course}/source/{PS1}/{PS1}.ipynb",
                    f"ls {hub.PREFIX}/grader", f"{hub.PREFIX}/bin/attnkit --help", f"ls {hub.PREFIX}/state"):
        assert refused(as_user("student3", command)), command
    imported = as_user("student3", "python -c 'import attnkit_assignments'")
    assert imported.returncode != 0 and "No module named 'attnkit_assignments'" in imported.stderr


def test_a_student_cannot_list_take_or_remove_others_handins(places):
    inbound, other = places["inbound"], places["other_handin"]
    assert refused(as_user("student3", f"ls {inbound}"))
    # even knowing the (random, unlistable) name: the sticky bit keeps others' hand-ins where they are
    assert as_user("student3", f"mv '{other}' '{inbound}/student3+{PS1}+taken'").returncode != 0
    assert as_user("student3", f"rm -rf '{other}'").returncode != 0 and other.is_dir()
    exchange = inbound.parent
    assert as_user("student3", f"mv '{exchange}' '{exchange}.moved'").returncode != 0 and exchange.is_dir()
    assert refused(as_user("student3", f"touch '{exchange}/outbound/{PS1}/extra.ipynb'"))
    assert refused(as_user("student3", f"ls '{exchange}/feedback'"))


def test_submitting_as_another_student_or_backdated_is_refused_at_collect(places):
    fetched = as_user("student3", f"nbgrader fetch_assignment {PS1} && nbgrader submit {PS1} --student=student1")
    assert fetched.returncode == 0, fetched.stderr          # nbgrader itself lets it through
    yesterday = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=1))
    stamp = yesterday.strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    forged = places["inbound"] / f"student3+{PS1}+{stamp}+handmade"
    made = as_user("student3", f"mkdir '{forged}' && cp {PS1}/{PS1}.ipynb '{forged}/' && "
                               f"echo '{stamp}' > '{forged}/timestamp.txt' && touch -d yesterday '{forged}'/*")
    assert made.returncode == 0, made.stderr
    collected = subprocess.run(["runuser", "-u", "instructor", "--", "env", "-i", "HOME=/home/instructor",
                                f"PATH={hub.PREFIX}/bin:{VENV}:/usr/bin:/bin", "attnkit", "collect", PS1],
                               cwd=places["course"], text=True, capture_output=True)
    assert collected.returncode == 1, collected.stdout + collected.stderr
    assert "owned by student3, not by student1" in collected.stdout, collected.stdout
    assert "handmade" in collected.stdout and "backdated, postdated or changed later" in collected.stdout
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
        course.grade(assignment)
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

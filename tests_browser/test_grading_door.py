"""The grading sandbox's door to root, tried from the instructor's account as a hostile instructor would.

Grading runs as the instructor; only the door (PREFIX/sbin/attnkit-sandbox, through sudo, no arguments)
runs as root, and it takes data only. These tests send it crafted requests, plant code where an import
could find it, edit the course's nbgrader_config.py to run code, plant links where the grader writes and
hand in under a crafted student id, then check that root ran none of it, followed none of it and wrote
nothing in the instructor's folders.
"""

import json
import os
import pwd
import secrets
import shlex
import shutil
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from conftest import hub
from test_course_in_browser import PS1, as_instructor, login_shell

DOOR = hub.door_program()
PYTHON = hub.PREFIX / "venv" / "bin" / "python"
HOME = Path("/home/instructor")

# Run by the instructor with the course's Python: send each request of a JSON file to one door session
# (sudo -n DOOR, with extra environment variables and a working folder for sudo only) and print the replies:
# the header of each, plus the cells' printed output for a request that ran. {"raw": text} is sent as is.
CLIENT = textwrap.dedent("""
    import json, os, subprocess, sys
    from attnkit_grader.isolation import door
    requests, program, extra, where = json.loads(open(sys.argv[1]).read()), sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
    process = subprocess.Popen(["sudo", "-n", program], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               env={**os.environ, **extra}, cwd=where)
    replies = []
    for request in requests:
        try:
            if "raw" in request:
                process.stdin.write(request["raw"].encode())
                process.stdin.flush()
            else:
                frames = [(door.REQUEST, json.dumps(request["fields"]).encode())]
                frames += [(name, text.encode()) for name, text in request["files"].items()]
                door.write_message(process.stdin, frames)
            reply = door.read_message(process.stdout)
        except (OSError, door.RequestError) as error:
            reply = None
        if reply is None:
            replies.append({"error": "the door ended"})
            break
        header = json.loads(reply[0][1])
        if not header.get("error"):
            result = door.parse_reply(reply)
            report = json.loads(result.files.get("report.json", b"{}") or b"{}")
            header["printed"] = [c.get("stdout", "") for c in report.get("cells", [])]
        replies.append(header)
    process.stdin.close()
    process.wait()
    print(json.dumps(replies))
""")

# A notebook whose cell says who runs it and tries to become root.
WHOAMI = json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
    {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
     "source": "import os\nprint('uid', os.getuid(), os.geteuid(), 'groups', os.getgroups())\n"
               "print('setuid', os.system('python -c \"import os; os.setuid(0)\" 2>/dev/null'))"}]})


def write_as_instructor(path, text, append=False):
    """``text`` written into ``path`` by the instructor (never by root: the test would leave root's files)."""
    subprocess.run(["runuser", "-u", "instructor", "--", "tee", *(["-a"] if append else []), str(path)],
                   input=text, text=True, capture_output=True, check=True)


def door_session(requests, env=None, cwd=HOME):
    """The replies of one door session the instructor opens with sudo (``env``: extra variables for sudo)."""
    client, batch = HOME / "door_client.py", HOME / "door_requests.json"
    write_as_instructor(client, CLIENT)
    write_as_instructor(batch, json.dumps(requests))
    line = " ".join(shlex.quote(str(part)) for part in (PYTHON, client, batch, DOOR, json.dumps(env or {}), cwd))
    done = subprocess.run(["runuser", "-l", "instructor", "-c", line], text=True, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def request(files=None, **fields):
    return {"fields": {"assignment": PS1, "cell_timeout": 20, **fields},
            "files": {"notebook.ipynb": WHOAMI} if files is None else files}


def test_sudo_lets_the_instructor_run_the_door_and_nothing_else(course):
    for line in (f"sudo -n {DOOR} --serve --state /tmp/door-elsewhere", "sudo -n /bin/sh -c id", "sudo -n true",
                 f"PYTHONPATH=/tmp sudo -n --preserve-env=PYTHONPATH {DOOR}", f"sudo -n -E {DOOR}",
                 f"sudo -n PYTHONPATH=/tmp {DOOR}", f"sudo -n -u nobody {DOOR}"):
        done = subprocess.run(["runuser", "-l", "instructor", "-c", line], text=True, capture_output=True,
                              input="", timeout=60)
        assert done.returncode != 0, f"the instructor could: {line}"
    student = login_shell("student3", f"sudo -n {DOOR} < /dev/null")
    assert student.returncode != 0, "a student could start the door"


def door_processes():
    """How many door programs run now (the Python that the door's script becomes once it holds a slot)."""
    count = 0
    for entry in Path("/proc").iterdir():
        try:
            count += entry.name.isdigit() and b"attnkit_grader.isolation.door" in (entry / "cmdline").read_bytes()
        except OSError:
            pass
    return count


def test_door_sessions_are_limited_per_instructor(course):
    """One per CPU core (2 at least): the next is refused in one line, and a session ended frees its slot."""
    limit, before = max(2, os.cpu_count()), door_processes()
    start = ["runuser", "-u", "instructor", "--", "sudo", "-n", str(DOOR)]
    held = [subprocess.Popen(start, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(limit)]
    try:
        deadline = time.monotonic() + 60
        while door_processes() < before + limit and time.monotonic() < deadline:
            time.sleep(0.2)
        assert door_processes() == before + limit and all(p.poll() is None for p in held)
        extra = subprocess.run(start, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        assert extra.returncode == 75 and extra.stderr.count("\n") == 1
        assert f"refused: {limit} door sessions of yours are open already" in extra.stderr
    finally:
        for process in held:
            process.stdin.close()
            process.wait(timeout=60)
    freed = subprocess.run(start, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert freed.returncode != 75 and "refused" not in freed.stderr


def test_the_door_runs_a_notebook_unprivileged_and_refuses_crafted_requests(course):
    refusals = [(request(assignment="../../etc/passwd"), "assignment"), (request(assignment="os"), "assignment"),
                (request(probes="os"), "unknown fields"), (request(argv=["sh", "-c", "id"]), "unknown fields"),
                (request(limits={"uid": 0}), "uid"), (request(limits={"memory": 2**50}), "limits.memory"),
                (request(cell_timeout=1e9), "cell_timeout"), (request(skip=["1; id"]), "skip")]
    replies = door_session([r for r, _ in refusals] + [request()])
    assert len(replies) == len(refusals) + 1, replies
    for reply, (_, word) in zip(replies, refusals):
        assert reply["error"] and word in reply["error"], (word, reply)
    ran = replies[-1]
    assert ran["error"] is None and ran["result"]["exit_code"] == 0, ran
    printed = "".join(ran["printed"])
    assert 61000 <= int(printed.split()[1]) < 62000 and "groups []" in printed, printed
    assert "setuid 256" in printed, printed                      # os.setuid(0) fails in the sandbox
    assert ran["result"]["seccomp"] and ran["result"]["cgroup"], ran
    # a file the runner does not read, or a malformed frame: the door answers why, then stops
    for frames, word in (([request(files={"notebook.ipynb": "{}", "reference.py": "x"}), request()], "reference.py"),
                         ([{"raw": "attnkit-door/1 1\n../escape.py 1\nx"}, request()], "garbled"),
                         ([{"raw": "GET / HTTP/1.0\n\n"}, request()], "not a door message")):
        replies = door_session(frames)
        assert word in replies[0]["error"] and replies[1] == {"error": "the door ended"}, replies


def test_the_door_loads_nothing_the_instructor_can_write(course):
    """Modules planted on PYTHONPATH, a sitecustomize, PYTHONSTARTUP and the current folder are never run by
    the door (sudo resets the environment; the door's Python runs isolated, from root's folders only)."""
    evil = HOME / "evil"
    marker = f"/tmp/attnkit-evil-{secrets.token_hex(4)}"
    payload = f"import os\nopen('{marker}-' + str(os.geteuid()), 'w').close()\n"
    files = {"attnkit_grader/__init__.py": payload, "attnkit_grader/isolation/__init__.py": payload,
             "sitecustomize.py": payload, "usercustomize.py": payload, "numpy/__init__.py": payload,
             "json/__init__.py": payload}
    for name, text in files.items():
        subprocess.run(["runuser", "-u", "instructor", "--", "mkdir", "-p", str((evil / name).parent)], check=True)
        write_as_instructor(evil / name, text)
    try:
        env = {"PYTHONPATH": str(evil), "PYTHONSTARTUP": str(evil / "sitecustomize.py"), "PYTHONUSERBASE": str(evil),
               "PYTHONINSPECT": "1"}
        (reply,) = door_session([request()], env=env, cwd=evil)
        assert reply["error"] is None and reply["result"]["exit_code"] == 0, reply
        ran = sorted(Path("/tmp").glob(Path(marker).name + "-*"))
        assert not [p for p in ran if p.name.endswith("-0")], f"root ran the planted code: {ran}"
    finally:
        shutil.rmtree(evil, ignore_errors=True)
        for path in Path("/tmp").glob(Path(marker).name + "-*"):
            path.unlink()


def test_grading_runs_as_the_instructor_and_root_follows_no_planted_link(course):
    """An edited nbgrader_config.py, links planted where the grader writes, a hand-in under a crafted
    student id and an assignments package planted in the course folder: a link in grades/ or autograded/
    stops grading at once in one line naming it (issue 44); with those gone, grading runs with the link left
    in feedback/. The config runs as the instructor only, the links' root-owned targets stay untouched, no
    shell ever sees the student id, the planted package is no assignment (its manifest never runs), and
    every file of the course folder stays the instructor's."""
    folder = course.course_dir()
    instructor = pwd.getpwnam("instructor")
    canaries = []
    for number in range(3):
        canary = Path(f"/root/attnkit-canary-{number}")
        canary.write_text(secrets.token_hex(16))
        canary.chmod(0o600)
        canaries.append((canary, canary.read_text()))
    config = folder / "nbgrader_config.py"
    original = config.read_text()
    ran = Path("/tmp/attnkit-config-ran-as")
    for path in ran.parent.glob(ran.name + "-*"):
        path.unlink()
    crafted = "$(touch${IFS}pwned);--help"
    planted = folder / "attnkit_assignments"
    submitted = folder / "submitted" / crafted / PS1
    links = {folder / "grades" / "table.txt": canaries[0][0], folder / "grades" / "report.json": canaries[1][0],
             folder / "autograded" / "student1" / PS1 / f"{PS1}.ipynb": canaries[2][0],
             folder / "feedback" / "student1": Path("/root")}
    try:
        write_as_instructor(config, f"\nimport os; open('{ran}-' + str(os.geteuid()), 'w').close()\n", append=True)
        setup = [["mkdir", "-p", str(submitted)], ["cp", str(folder / "submitted" / "student1" / PS1 / f"{PS1}.ipynb"),
                                                       str(submitted)]]
        for link, target in links.items():
            setup += [["mkdir", "-p", str(link.parent)], ["rm", "-rf", str(link)], ["ln", "-s", str(target), str(link)]]
        setup += [["mkdir", "-p", str(planted / "evil"), str(planted / PS1)], ["touch", str(planted / "__init__.py")]]
        for command in setup:
            subprocess.run(["runuser", "-u", "instructor", "--", *command], check=True)
        for manifest in (planted / "evil" / "assignment.py", planted / PS1 / "assignment.py"):
            write_as_instructor(manifest, f"open('{ran}-manifest', 'w').close()\n")
        stopped = login_shell("instructor", f"cd {folder} && attnkit -q grade {PS1}")
        assert stopped.returncode == 2 and "Traceback" not in stopped.stderr, stopped.stderr
        assert "is a symbolic link" in stopped.stderr and any(str(link) in stopped.stderr for link in links), \
            stopped.stderr
        for link in list(links)[:3]:                  # grades/ and autograded/: the feedback/ link stays
            subprocess.run(["runuser", "-u", "instructor", "--", "rm", str(link)], check=True)
        as_instructor("attnkit", "grade", PS1, check=False)
        assert sorted(p.name for p in ran.parent.glob(ran.name + "-*")) == [f"{ran.name}-{instructor.pw_uid}"], \
            "the course's nbgrader_config.py ran as someone other than the instructor, or a planted manifest ran"
        for canary, text in canaries:
            info = canary.stat()
            assert canary.read_text() == text and info.st_uid == 0 and info.st_mode & 0o777 == 0o600, canary
        assert not list(Path("/").glob("*/pwned")) and not (HOME / "pwned").exists() and \
            not list(folder.rglob("pwned")), "a shell saw the crafted student id"
        owners = {p.owner() for p in folder.rglob("*") if not p.is_symlink()}
        assert owners == {"instructor"}, owners
        refused = login_shell("instructor", f"cd {folder} && attnkit grade {PS1} --grader nbgrader")
        assert refused.returncode == 2 and "only in the sandbox" in refused.stderr, refused.stderr
        crafted_name = login_shell("instructor", f"cd {folder} && attnkit grade ../../../etc")
        assert crafted_name.returncode == 2 and "not in" in crafted_name.stderr, crafted_name.stderr
    finally:
        for canary, _ in canaries:
            canary.unlink()
        write_as_instructor(config, original)
        for path in [folder / "submitted" / crafted, planted, *links]:
            subprocess.run(["runuser", "-u", "instructor", "--", "rm", "-rf", str(path)], check=False)
        for path in ran.parent.glob(ran.name + "-*"):
            path.unlink()
        as_instructor("nbgrader", "db", "student", "remove", crafted, "--force", check=False)
        as_instructor("attnkit", "grade", PS1, check=False)      # the graded copies and reports as before


@pytest.fixture(autouse=True)
def _no_leftover_root_files(course):
    yield
    stray = [p for p in course.course_dir().rglob("*") if not p.is_symlink() and p.lstat().st_uid == 0]
    assert not stray, f"root-owned files in the course folder: {stray[:5]}"
    assert os.path.isdir(course.course_dir())

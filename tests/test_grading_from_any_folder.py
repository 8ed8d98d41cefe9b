"""The sandboxed grader gives the same grades whatever folder its environment lives in.

A checkout under /tmp once graded wrongly without a word: the warm sandbox's fresh /tmp hid the virtual
environment that bubblewrap had bound there, so every module torch imports late (``torch._dynamo``, at the
first optimizer step) was gone and the reference solution lost a check. Here the kit's own environment is
reached through a path under /tmp, with a space in it and behind a symbolic link (a bind mount in a private
mount namespace of the test's own: root only, as CI runs), and the example class is graded from there, warm
and cold, with the door's umask (077), every grade as examples/example_class/expected_scores.json says.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import copy_course

from attnkit_grader.isolation import bwrap, warm

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "example_class"
# Left out: its 30 s cell timeout says nothing about where the environment lives (test_sandbox covers it).
SLOW = {"infinite_loop"}

DRIVER = """
import json, os, sys
from attnkit_grader import grade
os.umask(0o077)                  # as the hub's door runs: what the sandbox makes must not depend on the umask
course, submissions, students, mode = sys.argv[1:]
run = grade(course, [], submissions, students, f"{course}/grades-{mode}", warm=(mode == "warm"), workers=2)
print(json.dumps({"prefix": sys.prefix, "points": run.table.as_dict(),
                  "warm": sorted({str(r.run.get("warm")) for r in run.submissions.values() if r.run})}))
"""


@pytest.fixture(scope="module")
def environment_under_tmp(tmp_path_factory):
    """The command prefix that runs this environment's Python as '/tmp/…/attnkit env/.venv/bin/python'."""
    reason = bwrap.unavailable_reason() or (None if warm.available() else "warm starts need root")
    if reason or not shutil.which("unshare"):
        (pytest.fail if os.environ.get("CI") else pytest.skip)(reason or "no unshare")
    folder = Path("/tmp") / f"attnkit env {os.getpid()}"          # a space, and under /tmp whatever TMPDIR says
    link = Path("/tmp") / f"attnkit link {os.getpid()}"
    folder.mkdir()
    link.symlink_to(folder)
    script = ('set -e; mkdir -p "$1/.venv"; mount --bind "$2" "$1/.venv"; shift 2; exec "$@"')
    yield ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", str(folder), sys.prefix,
           str(link / ".venv" / "bin" / "python")]
    link.unlink()
    shutil.rmtree(folder)


@pytest.mark.parametrize("mode", ["warm", "cold"])
def test_the_example_class_gets_its_grades_through_an_environment_under_tmp(environment_under_tmp, mode, tmp_path):
    course = copy_course(tmp_path / "course")
    submissions = tmp_path / "submissions"
    for student in EXAMPLE.iterdir():
        if student.is_dir() and student.name not in SLOW:
            shutil.copytree(student, submissions / student.name)
    done = subprocess.run([*environment_under_tmp, "-c", DRIVER, str(course), str(submissions),
                           str(EXAMPLE / "students.csv"), mode], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["prefix"] == f"/tmp/attnkit link {os.getpid()}/.venv"      # through the link, a space in it
    assert result["warm"] == [str(mode == "warm")]
    expected = json.loads((EXAMPLE / "expected_scores.json").read_text())
    for student, assignments in expected.items():
        if student in SLOW:
            continue
        for assignment, cells in assignments.items():
            points = {cell: value for cell, value in cells.items() if cell != "reason"}
            got = {cell: result["points"][student][assignment][cell] for cell in points}
            assert got == points, (student, assignment)

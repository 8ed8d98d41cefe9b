"""The course's environment on the hub is its lock, and a student's kernel runs what the grader runs.

hub/course.py builds PREFIX/venv from requirements/hub.txt (hashes checked) and the edition's student package;
every student's kernel and the instructor's grader (and through it the sandboxes' door) run that one
interpreter. A student's numpy or torch differing from the grader's would let a visible check pass in the
notebook and a hidden one fail at grading.
"""

import json
import subprocess

from attnkit_grader import locks

VERSIONS = ("import json, sys, numpy, torch; print(json.dumps({'python': sys.executable, "
            "'numpy': [numpy.__version__, numpy.__file__], 'torch': [torch.__version__, torch.__file__]}))")
KERNEL = f"""
from jupyter_client.manager import start_new_kernel
manager, client = start_new_kernel(kernel_name="python3")
try:
    client.execute_interactive({VERSIONS!r}, timeout=120)
finally:
    client.stop_channels()
    manager.shutdown_kernel(now=True)
"""


def test_the_course_environment_holds_its_lock_and_nothing_else(course):
    venv = course.PREFIX / "venv"
    check = subprocess.run([str(venv / "bin" / "python"), "-m", "attnkit_grader.locks", "check", str(course.HUB_LOCK)],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    assert (venv / course.RECORD).read_text() == course.HUB_LOCK.read_text()


def test_a_students_kernel_and_the_grader_import_the_same_numpy_and_torch(course):
    venv = course.PREFIX / "venv"
    kernel = course.run([str(venv / "bin" / "python"), "-c", KERNEL], user=course.STUDENTS[0], quiet=True)
    student = json.loads(kernel.decode().strip().splitlines()[-1])
    # the grader's command (PREFIX/bin/attnkit) and the door run this interpreter in isolated mode
    grader = json.loads(course.run([str(venv / "bin" / "python"), "-I", "-c", VERSIONS], user=course.INSTRUCTOR,
                                   quiet=True).decode().strip().splitlines()[-1])
    assert student == grader
    locked = locks.read(course.HUB_LOCK)
    assert (grader["numpy"][0], grader["torch"][0]) == (locked["numpy"], locked["torch"])

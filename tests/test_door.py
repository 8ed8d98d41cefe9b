"""The grading sandbox's door to root (attnkit_grader.isolation.door): requests parsed as hostile data, the code
it runs checked, and a batch graded through it with the same grades as a sandbox started in-process.

The hub's own tests (tests_browser/test_grading_door.py) send it crafted requests through sudo from the
instructor's account; these run in make test, with the door started directly as a program.
"""

import io
import json
import os
import stat
import sys

import pytest

from attnkit_grader import grade
from attnkit_grader.isolation import bwrap, door
from attnkit_grader.isolation.limits import Limits
from attnkit_grader.isolation.notebook_run import RunnerJob

from conftest import ROOT, copy_course

PS1, PS3 = "ps1_learnable_pe", "ps3_rope"
ASSIGNMENTS = [PS1, "ps2_relative_pe"]
NOTEBOOK = b'{"cells": []}'


def frames(fields=None, **files):
    fields = {"assignment": PS1, **(fields or {})}
    return [(door.REQUEST, json.dumps(fields).encode())] + [(n.replace("__", "."), d) for n, d in
                                                             ({"notebook__ipynb": NOTEBOOK} | files).items()]


def test_a_valid_request_becomes_a_runner_job_with_the_doors_ceiling_on_every_limit():
    job, files, limits = door.parse_request(
        frames({"cell_timeout": 20, "grace": 0, "skip": [3, 4], "limits": {"memory": 2**30, "wall_seconds": 60}},
               expected__json=b"{}"), ASSIGNMENTS)
    assert job == RunnerJob(PS1, 20.0, 0.0, (3, 4)) and job.probes is None
    assert files == {"notebook.ipynb": NOTEBOOK, "expected.json": b"{}"}
    assert limits.memory == 2**30 and limits.wall_seconds == 60 and limits.processes == Limits().processes
    french, _, _ = door.parse_request(frames({"language": "fr"}), ASSIGNMENTS)
    assert french.language == "fr" and french.argv()[-2:] == ["--language", "fr"]



def test_the_hand_ins_language_crosses_the_door(tmp_path):
    """The grader's side writes the job's language into the request; the door's side reads it back."""
    (tmp_path / "notebook.ipynb").write_bytes(NOTEBOOK)
    for language in ("zh", None):
        sent = door.request_frames(RunnerJob(PS1, language=language), tmp_path, Limits())
        assert door.parse_request(sent, ASSIGNMENTS)[0].language == language

@pytest.mark.parametrize("fields, word", [
    ({"assignment": "../../etc/passwd"}, "assignment"), ({"assignment": "os"}, "assignment"),
    ({"assignment": ["ps1_learnable_pe"]}, "assignment"), ({"probes": "os"}, "unknown fields"),
    ({"argv": ["sh"]}, "unknown fields"), ({"limits": {"uid": 0}}, "the door chooses the uid"),
    ({"limits": {"memory": 2**50}}, "limits.memory"), ({"limits": {"processes": True}}, "limits.processes"),
    ({"limits": {"wall_seconds": float("nan")}}, "limits.wall_seconds"), ({"limits": {"threads": 0}}, "limits.threads"),
    ({"limits": []}, "limits"), ({"cell_timeout": 1e9}, "cell_timeout"), ({"cell_timeout": "30"}, "cell_timeout"),
    ({"grace": -1}, "grace"), ({"skip": ["1; id"]}, "skip"), ({"skip": list(range(1, 2000))}, "skip"),
    ({"skip": [0]}, "skip"), ({"language": "de"}, "language"), ({"language": ["fr"]}, "language"),
    ({"language": "fr; id"}, "language"),
], ids=lambda value: str(value)[:40])
def test_a_crafted_request_is_refused_naming_what_is_wrong(fields, word):
    with pytest.raises(door.RequestError, match=word):
        door.parse_request(frames(fields), ASSIGNMENTS)


def test_a_request_needs_its_notebook_and_each_file_once():
    with pytest.raises(door.RequestError, match="expected request.json and notebook.ipynb"):
        door.parse_request([(door.REQUEST, b'{"assignment": "ps1_learnable_pe"}')], ASSIGNMENTS)
    with pytest.raises(door.RequestError, match="sent twice"):
        door.parse_request(frames() + [("notebook.ipynb", NOTEBOOK)], ASSIGNMENTS)
    with pytest.raises(door.RequestError, match="not JSON"):
        door.parse_request([(door.REQUEST, b"\xff")] + frames()[1:], ASSIGNMENTS)


def message(*frames_):
    stream = io.BytesIO()
    door.write_message(stream, list(frames_))
    return stream.getvalue()


@pytest.mark.parametrize("data, word", [
    (b"GET / HTTP/1.0\r\n\r\n", "not a door message"), (b"attnkit-door/1 99\n", "not a door message"),
    (b"attnkit-door/1 1\n../escape.py 1\nx", "garbled"), (b"attnkit-door/1 1\nreference.py 1\nx", "not one the runner reads"),
    (b"attnkit-door/1 1\nnotebook.ipynb 999999999999\n", "over its limit"),
    (b"attnkit-door/1 1\nnotebook.ipynb 10\nshort", "cut short"), (b"attnkit-door/1 1", "cut short"),
    (b"attnkit-door/1 1\n" + b"x" * 500, "cut short"),
], ids=["http", "frames", "path", "unknown-file", "oversized", "short-data", "short-header", "long-line"])
def test_a_malformed_message_is_refused_before_its_data_is_read(data, word):
    with pytest.raises(door.RequestError, match=word):
        door.read_message(io.BytesIO(data), door.FILE_LIMITS, sum(door.FILE_LIMITS.values()))


def test_messages_round_trip_and_the_end_of_the_stream_is_not_an_error():
    stream = io.BytesIO(message(("request.json", b"{}"), ("notebook.ipynb", b"\x00\n" * 3)))
    assert door.read_message(stream, door.FILE_LIMITS) == [("request.json", b"{}"), ("notebook.ipynb", b"\x00\n" * 3)]
    assert door.read_message(stream) is None


def test_a_reply_is_read_as_the_sandbox_result_it_lists_and_nothing_else():
    result = bwrap.SandboxResult(True, exit_code=0, seconds=1.5, stdout=b"out", files={"report.json": b"{}"})
    assert door.parse_reply(door.result_frames(result)) == result
    with pytest.raises(door.DoorError, match="refused the request: assignment"):
        door.parse_reply(door.error_frames("assignment: no"))
    forged = door.result_frames(result)[:-1] + [("other.json", b"{}")]
    with pytest.raises(door.DoorError, match="does not hold the files it lists"):
        door.parse_reply(forged)


def test_the_door_refuses_code_that_another_user_could_change(tmp_path):
    """check_trusted_code: a folder others may write (without the sticky bit), or a file another user owns,
    anywhere on the way to an imported module or a sys.path entry, stops the door; a sticky folder such as
    /tmp holding root's own folder does not."""
    safe = tmp_path / "safe"
    (safe / "pkg").mkdir(parents=True)
    (safe / "pkg" / "mod.py").write_text("")
    for folder in (tmp_path.parent, tmp_path, safe, safe / "pkg"):
        folder.chmod(0o755)
    door.check_trusted_code(paths=[safe], modules=[str(safe / "pkg" / "mod.py")])
    (safe / "pkg").chmod(0o775)
    with pytest.raises(PermissionError, match="pkg may be changed by other users"):
        door.check_trusted_code(paths=[], modules=[str(safe / "pkg" / "mod.py")])
    (safe / "pkg").chmod(0o1777)        # sticky, but a module's own folder: a .so beside mod.py would win
    with pytest.raises(PermissionError, match="pkg may be changed by other users"):
        door.check_trusted_code(paths=[], modules=[str(safe / "pkg" / "mod.py")])
    (safe / "pkg").chmod(0o755)
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    (sticky / "root").mkdir()
    door.check_trusted_code(paths=[sticky / "root"], modules=[])
    with pytest.raises(PermissionError, match="sticky may be changed by other users"):
        door.check_trusted_code(paths=[sticky], modules=[])           # on sys.path itself: anyone adds modules
    with pytest.raises(PermissionError, match="sticky may be changed"):
        door.check_trusted_code(paths=[sticky / "not-yet"], modules=[])
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    (open_folder / "inside").mkdir()
    with pytest.raises(PermissionError, match="open may be changed by other users"):
        door.check_trusted_code(paths=[open_folder / "inside"], modules=[])
    (tmp_path / "link").symlink_to(open_folder / "inside")              # a link to it is no way round
    with pytest.raises(PermissionError, match="open may be changed by other users"):
        door.check_trusted_code(paths=[tmp_path / "link"], modules=[])
    if os.geteuid() == 0:
        os.chown(safe / "pkg" / "mod.py", 65534, 65534)
        with pytest.raises(PermissionError, match="belongs to uid 65534"):
            door.check_trusted_code(paths=[], modules=[str(safe / "pkg" / "mod.py")])


def test_the_door_program_refuses_a_state_folder_others_can_enter(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    # main() clears the environment and sets umask 077: this test process gets both back (otherwise every
    # file and __pycache__ the later tests of this worker write is private to root)
    environment, umask = dict(os.environ), os.umask(0o022)
    try:
        with pytest.raises(SystemExit, match="--state"):
            door.main(["--state", str(state)])
    finally:
        os.umask(umask)
        os.environ.clear()
        os.environ.update(environment)


@pytest.mark.slow
def test_a_batch_graded_through_the_door_gets_the_grades_of_an_in_process_sandbox(sandboxes, tmp_path, monkeypatch):
    """The hostile class's controls (PS1's and PS3's) graded through a door program (as the hub's sudo would
    start it, here directly: the tests run as root) give the points of expected.json, and this process starts
    no sandbox."""
    if os.geteuid() != 0:
        pytest.skip("the door runs as root")
    expected = json.loads((ROOT / "tests" / "fixtures" / "hostile_class" / "expected.json").read_text())
    root = copy_course(tmp_path / "course")
    controls = ROOT / "tests" / "fixtures" / "hostile_class" / "controls"
    program = tmp_path / "attnkit-sandbox"
    program.write_text(f"#!/bin/sh\nexec {sys.executable} -I -B -m attnkit_grader.isolation.door --serve "
                       f"--state {tmp_path / 'door-state'}\n")
    program.chmod(0o755)
    monkeypatch.setenv(door.DOOR_VARIABLE, str(program))

    def no_local_sandbox(*args, **kwargs):
        raise AssertionError("the grading process started a sandbox itself")

    monkeypatch.setattr(bwrap.Sandbox, "run", no_local_sandbox)
    run = grade(root, [PS1, PS3], controls, reports_dir=root / "grades", canary=False)   # through the door: test_canary
    points = {student: sum(run.table.points[student, PS1].values()) for student in expected["controls"][PS1]}
    assert points == {"blank": 0.0, "partial": 4.5, "shape_only": 0.0}, points
    points = {student: sum(run.table.points[student, PS3].values()) for student in expected["controls"][PS3]}
    assert points == {"blank": 0.0, "partial": 8.0}, points                  # RoPE and its attention, no raise
    graded = {key for key, record in run.submissions.items() if record.status == "graded"}
    assert graded == {(s, a) for a in (PS1, PS3) for s in expected["controls"][a]}
    assert all(record.status in ("graded", "missing") for record in run.submissions.values())
    assert not (root / "grades" / "work" / "public").exists()          # the door staged its own packages
    assert not list((tmp_path / "door-state").glob("run-*"))           # and removed its scratch folders
    mode = stat.S_IMODE((tmp_path / "door-state").stat().st_mode)
    assert mode == 0o700

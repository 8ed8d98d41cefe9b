"""Grading on a Dask cluster (attnkit_grader.cluster, autograders.cluster): authenticated, unprivileged, resumable.

The fast tests cover the certificates, the refusals that need no cluster, the task keys, the reading of a
worker's answer as hostile, the worker's parsing of a crafted request and the bounded progress log. The slow
ones start a real cluster on loopback (attnkit_grader.cluster.local: ``attnkit cluster scheduler`` and two
``attnkit cluster worker`` processes, TLS with the kit's own authority, every process as an unprivileged
uid) and show:

1. a batch graded there gets the grades of the controls, an attack's and a broken notebook's control's
   points and reason, two byte-identical notebooks both run with their own seeds, while one worker is
   killed mid-batch: every submission graded and journalled once;
2. a memory kill comes back as a verdict (the task does not fail; a timeout or a crash takes the same path);
3. a student's code in the sandbox reaches no scheduler or worker port and finds no other submission's inputs;
4. a client or a worker without the cluster's certificate is refused, and so is plain tcp;
5. an authenticated client's ``os.system`` runs as the unprivileged uid, not as root;
6. the grading process killed with SIGKILL, or the scheduler killed, mid-batch: the batch resumes from the
   journal (on the cluster, or on one machine), nothing graded twice.
What no test here can show: machines apart (every process shares this machine's loopback and kernel).
"""

import collections
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell

from attnkit_grader import grade
from attnkit_grader.autograders.base import Activity, BatchInterrupted
from attnkit_grader.autograders.cluster import check_address
from attnkit_grader.cli import main
from attnkit_grader.cluster import certs, commands, local, worker as cluster_worker
from attnkit_grader.cluster.launcher import ClusterError, ClusterLauncher
from attnkit_grader.isolation import door
from attnkit_grader.isolation.notebook_run import RunnerJob
from attnkit_grader.journal import Journal
from attnkit_grader.pipeline import make_autograder
from attnkit_grader.progress import Progress
from conftest import ROOT, Clock, copy_course

HOSTILE = ROOT / "tests" / "fixtures" / "hostile_class"
EXPECTED = json.loads((HOSTILE / "expected.json").read_text())
PS1, PS3 = "ps1_learnable_pe", "ps3_rope"
CONTROL_POINTS = {"blank": 0.0, "partial": 4.5, "shape_only": 0.0}      # partial: no length check
PS3_CONTROL_POINTS = {"partial": 8.0}                                     # RoPE and its attention, no raise
ATTACKS = ["input_reader"]
PS3_ATTACKS = ["sdpa_patcher"]
BROKEN = ["memory_hog"]


# --- fast: no cluster ------------------------------------------------------------------------------------------

def test_certificates_keys_are_private_and_not_replaced_unasked(tmp_path):
    written = certs.make(tmp_path / "c", hosts=["grader.example.org", "10.1.2.3"])
    assert sorted(p.name for p in written) == sorted(["ca.pem", "ca-key.pem"] + [f"{r}{s}.pem" for r in certs.ROLES
                                                                                  for s in ("", "-key")])
    for path in written:
        private = path.name.endswith("-key.pem")
        assert (path.stat().st_mode & 0o077 == 0) if private else path.stat().st_mode & 0o044, path
    with pytest.raises(FileExistsError, match="--force"):
        certs.make(tmp_path / "c")
    with pytest.raises(ValueError, match="days"):
        certs.make(tmp_path / "d", days=0)
    with pytest.raises(ValueError, match="hosts"):
        certs.make(tmp_path / "d", hosts=["two words"])
    (tmp_path / "c" / "client-key.pem").unlink()
    with pytest.raises(FileNotFoundError, match="certs: .* client-key.pem"):
        certs.security(tmp_path / "c", "client")


def test_plain_tcp_and_a_cluster_without_certificates_are_refused_before_anything_runs(tmp_path):
    with pytest.raises(ValueError, match="scheduler: expected tls://"):
        check_address("tcp://127.0.0.1:8786")
    with pytest.raises(ValueError, match="certs"):
        make_autograder("sandbox", None, tmp_path, scheduler="tls://127.0.0.1:8786")
    with pytest.raises(ValueError, match="scheduler: only the sandbox grader"):
        make_autograder("nbgrader", None, tmp_path, scheduler="tls://127.0.0.1:8786", certs=tmp_path)
    certs.make(tmp_path / "c")
    with pytest.raises(ValueError, match="address: expected tls://"):
        commands.worker_command(tmp_path / "c", "tcp://127.0.0.1:8786")
    command = commands.scheduler_command(tmp_path / "c", "127.0.0.1", 0)
    assert "--no-dashboard" in command and command[command.index("--protocol") + 1] == "tls"
    assert commands.ENVIRONMENT["DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES"] == "[]"

    with pytest.raises(ValueError, match=r"warm: each worker's machine decides .* got warm=False \(--cold-start\)"):
        make_autograder("sandbox", None, tmp_path, scheduler="tls://127.0.0.1:8786", certs=tmp_path, warm=False)


@pytest.mark.parametrize("root", [False, True], ids=["no-warm-start", "warm-start"])
def test_a_workers_threads_each_get_the_graders_launcher_warm_where_available(root, tmp_path, monkeypatch):
    """Without a door, each worker thread gets a launcher of its own from the grader's warm.launcher: a warm one
    (a zygote each) where warm starts are available (root, or a user namespace for an ``attnkit cluster
    worker``), else a cold sandbox; all closed after."""
    from attnkit_grader.isolation import bwrap, staging, warm

    made = []

    class Launcher:
        def __init__(self, public, limits):
            self.kind, self.closed = "warm" if warm.available() else "cold", False
            made.append(self)

        def close(self):
            self.closed = True

    monkeypatch.delenv(door.DOOR_VARIABLE, raising=False)
    monkeypatch.setattr(warm, "available", lambda: root)
    monkeypatch.setattr(warm, "WarmSandbox", Launcher)
    monkeypatch.setattr(warm, "Sandbox", Launcher)
    monkeypatch.setattr(bwrap, "check_available", lambda: None)
    monkeypatch.setattr(staging, "stage_packages", lambda public: public)
    plugin = cluster_worker.SandboxPlugin()
    plugin.setup(type("Worker", (), {"name": "w", "state": type("State", (), {"nthreads": 3})()})())
    try:
        slots_given = [plugin.launchers.get_nowait() for _ in range(3)]
        assert plugin.launchers.empty() and len({id(launcher) for _, launcher in slots_given}) == 3
        assert {launcher.kind for _, launcher in slots_given} == {"warm" if root else "cold"}
        assert len({slot for slot, _ in slots_given}) == 3 and None not in {slot for slot, _ in slots_given}
        for given in slots_given:
            plugin.launchers.put(given)
    finally:
        plugin.teardown(None)
    assert len(made) == 3 and all(launcher.closed for launcher in made)


@pytest.mark.parametrize("role", ["worker", "scheduler"])
def test_a_worker_or_scheduler_refuses_to_run_as_root(role, tmp_path, monkeypatch, capsys):
    certs.make(tmp_path / "c")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(commands, "start", lambda command: pytest.fail("started as root"))
    arguments = ["worker", "tls://127.0.0.1:1"] if role == "worker" else ["scheduler"]
    assert main(["cluster", *arguments, "--certs", str(tmp_path / "c")]) == 2
    assert f"{role}: refusing to run as root" in capsys.readouterr().err


def test_a_batch_stopped_by_a_lost_scheduler_exits_3_saying_to_run_it_again(tmp_path, monkeypatch, capsys):
    import attnkit_grader.cli as cli

    def interrupted(*args, **kwargs):
        raise BatchInterrupted("the cluster's scheduler was lost mid-batch; run the same command again")

    monkeypatch.setattr(cli, "grade", interrupted)
    # Hand-ins to grade (the example class's), or the command would end at once with nothing to do.
    assert main(["--root", str(ROOT), "grade", PS1, "--submissions", str(ROOT / "examples" / "example_class"),
                 "--scheduler", "tls://127.0.0.1:1", "--certs", str(tmp_path)]) == 3
    assert "attnkit: stopped: the cluster's scheduler was lost" in capsys.readouterr().err


class FakeFuture:
    def __init__(self, answer):
        self.answer = answer

    def result(self):
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer

    def release(self):
        pass


class FakeClient:
    """Records what is submitted and answers with ``answer``."""

    def __init__(self, answer):
        self.answer, self.submitted = answer, []

    def submit(self, function, request, key, pure):
        self.submitted.append((function, request, key, pure))
        return FakeFuture(self.answer)

    def processing(self):
        return {}


def reply(**result):
    return door.encode(door.result_frames(door.SandboxResult(True, exit_code=0, **result)))


def test_identical_requests_get_keys_of_their_own_and_carry_data_only(tmp_path):
    (tmp_path / "notebook.ipynb").write_bytes(b'{"cells": []}')
    (tmp_path / "planted.py").write_text("import os")                  # not a runner file: never sent
    client = FakeClient(("worker-0", reply(files={"report.json": b"{}"})))
    launcher = ClusterLauncher(client, door.CEILING)
    results = [launcher.launch(RunnerJob(PS1), tmp_path) for _ in range(2)]
    (f1, r1, k1, p1), (f2, r2, k2, p2) = client.submitted
    assert r1 == r2 and k1 != k2 and p1 is p2 is False and f1 is cluster_worker.launch
    assert [name for name, _ in door.decode(r1)] == [door.REQUEST, "notebook.ipynb"]
    assert all(r.files == {"report.json": b"{}"} for r in results)
    assert launcher.activity() == Activity(0, {"worker-0": 2})


@pytest.mark.parametrize("answer, word", [
    (b"bytes alone", "not its name and a door reply"), (("w", "text"), "not its name and a door reply"),
    (("w", b"attnkit-door/1 1\nresult.json 2\n{}trailing"), "malformed reply"),
    (("w", b"GET / HTTP/1.0\r\n"), "malformed reply"),
    (("w", door.encode([(door.RESULT, b'{"error": null, "result": {}, "files": ["x"]}'), ("stdout", b""),
                        ("stderr", b"")])), "does not hold the files it lists"),
], ids=["not-a-tuple", "text-reply", "trailing", "http", "unlisted"])
def test_a_workers_forged_answer_is_refused_naming_what_is_wrong(answer, word, tmp_path):
    (tmp_path / "notebook.ipynb").write_bytes(b"{}")
    launcher = ClusterLauncher(FakeClient(answer), door.CEILING)
    with pytest.raises((ClusterError, door.DoorError), match=word):
        launcher.launch(RunnerJob(PS1), tmp_path)
    assert launcher.activity().workers == {}


def test_a_cancelled_task_stops_the_batch_instead_of_failing_the_submission(tmp_path):
    from concurrent.futures import CancelledError

    (tmp_path / "notebook.ipynb").write_bytes(b"{}")
    with pytest.raises(BatchInterrupted, match="run the same command again"):
        ClusterLauncher(FakeClient(CancelledError()), door.CEILING).launch(RunnerJob(PS1), tmp_path)


class Recorder:
    def __init__(self):
        self.launched = []

    def launch(self, job, scratch, limits):
        self.launched.append(job)
        return door.SandboxResult(True, exit_code=0)


@pytest.mark.parametrize("fields, word", [
    ({"assignment": "../../etc"}, "assignment"), ({"probes": "os"}, "unknown fields"),
    ({"limits": {"uid": 0}}, "the door chooses the uid"), ({"limits": {"memory": 2**50}}, "limits.memory"),
], ids=["path", "module", "uid", "memory"])
def test_a_worker_refuses_a_crafted_request_before_any_sandbox_starts(fields, word, tmp_path):
    plugin = cluster_worker.SandboxPlugin()
    plugin.assignments, plugin.work = [PS1], tmp_path
    recorder = Recorder()
    plugin.launchers.put((None, recorder))
    request = door.encode([(door.REQUEST, json.dumps({"assignment": PS1, **fields}).encode()),
                           ("notebook.ipynb", b"{}")])
    with pytest.raises(door.RequestError, match=word):
        plugin.answer(request)
    with pytest.raises(door.RequestError, match="exactly one door message"):
        plugin.answer(door.encode([(door.REQUEST, json.dumps({"assignment": PS1}).encode())]) + b"more")
    assert recorder.launched == []
    good = door.encode([(door.REQUEST, json.dumps({"assignment": PS1}).encode()), ("notebook.ipynb", b"{}")])
    assert door.parse_reply(door.decode(plugin.answer(good))).exit_code == 0 and len(recorder.launched) == 1
    assert list(tmp_path.iterdir()) == []                       # the request's scratch folder is gone


def test_off_a_terminal_a_batch_of_a_thousand_prints_a_line_every_few_seconds():
    stream, clock = io.StringIO(), Clock()
    bar = Progress(1000, stream=stream, tty=False, clock=clock)
    for number in range(1000):
        clock.now = number * 0.1                                # ten submissions a second: 100 s in all
        bar.update(f"s{number} / ps1", "6 points", activity=Activity(4, {"w-0": number // 2, "w-1": number - number // 2}))
    bar.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) <= 100 / 5 + 2
    assert "1000/1000 100%" in lines[-1] and "done" in lines[-1]
    assert "running 0, queued 0" in lines[-1] and "2 workers ran w-1 500, w-0 499" in lines[-1]
    assert "running 4, queued 995" in lines[0]
    halfway = [line for line in lines if " 501/1000 " in line]
    assert halfway and "50 s elapsed, ETA 50 s | running 4, queued 495" in halfway[0], lines    # the rate so far
    many = Progress(10, stream=io.StringIO(), tty=False).line(activity=Activity(1, {f"w-{n}": n for n in range(9)}))
    assert "9 workers ran w-8 8, w-7 7, w-6 6, w-5 5, (5 more)" in many


# --- slow: a cluster on loopback ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cluster(sandboxes):
    with local.LocalCluster(workers=2) as running:
        yield running


def prober(addresses):
    """A student notebook (the partial control) with a cell that tries the cluster's ports (``addresses``:
    tls://HOST:PORT of the scheduler and the workers) and looks for other submissions' inputs, printing what
    it found."""
    targets = [tuple(a.removeprefix("tls://").rsplit(":", 1)) for a in addresses]
    targets = [(host, int(port)) for host, port in targets]
    source = (f"import glob, socket\nfor host, port in {targets!r}:\n"
              f"    s = socket.socket(); s.settimeout(3)\n"
              f"    try:\n        s.connect((host, port)); print('REACHED', port)\n"
              f"    except OSError as error:\n        print('REFUSED', port, type(error).__name__)\n"
              f"found = [p for top in ('/scratch', '/tmp', '/opt', '/dev/shm', '/run', '/var', '/home', '/root')\n"
              f"         for p in glob.glob(top + '/**/inputs*', recursive=True)]\n"
              f"print('INPUTS', sorted(found))")
    notebook = nbformat.read(HOSTILE / "controls" / "partial" / PS1 / f"{PS1}.ipynb", as_version=4)
    notebook.cells.insert(2, new_code_cell(source))
    return notebook


def hand_in(folder, students, assignment=PS1):
    """Copy the named controls, attacks and broken notebooks of ``assignment`` into ``folder``."""
    for student in students:
        source = HOSTILE / ("controls" if student in CONTROL_POINTS else "submissions") / student / assignment
        shutil.copytree(source, folder / student / assignment)
    return folder


def journal_keys(path):
    lines = [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    return collections.Counter((line["student"], line["assignment"]) for line in lines)


@pytest.fixture(scope="module")
def graded(cluster, tmp_path_factory):
    """Two controls, a twin, an attack, a broken notebook and the prober graded on the cluster, with PS3's
    partial control and an attack on it in the same batch; worker-0 is killed (SIGKILL) while it runs one of
    them, and replaced after the batch."""
    root = copy_course(tmp_path_factory.mktemp("cluster") / "course")
    handed = hand_in(root / "handed_in", ["blank", "partial", *ATTACKS, *BROKEN])
    shutil.copytree(handed / "partial", handed / "partial_twin")
    hand_in(handed, ["partial", *PS3_ATTACKS], PS3)
    (handed / "prober" / PS1).mkdir(parents=True)
    with cluster.client() as client:
        workers = list(client.scheduler_info(n_workers=-1)["workers"])
    nbformat.write(prober([cluster.address, *workers]), handed / "prober" / PS1 / f"{PS1}.ipynb")
    reports = root / "grades"
    killed, done = threading.Event(), threading.Event()

    def kill_worker_0_while_it_runs():
        with cluster.client() as client:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline and not killed.is_set() and not done.is_set():
                workers = client.scheduler_info(n_workers=-1)["workers"]
                busy = {info["name"] for address, info in workers.items() if client.processing().get(address)}
                if "worker-0" in busy and (reports / "journal.jsonl").is_file():
                    cluster.kill_worker(0)
                    killed.set()
                time.sleep(0.2)

    killer = threading.Thread(target=kill_worker_0_while_it_runs, daemon=True)
    killer.start()
    stderr, saved = io.StringIO(), sys.stderr
    sys.stderr = stderr
    try:
        run = grade(root, [PS1, PS3], handed, reports_dir=reports, scheduler=cluster.address, certs=cluster.certs,
                    progress=True)
    finally:
        sys.stderr = saved
        done.set()
    killer.join(timeout=10)
    cluster.add_worker("worker-2")                   # joins while the next tests run
    return {"root": root, "run": run, "reports": reports, "killed": killed.is_set(), "progress": stderr.getvalue(),
            "handed": {(p.parent.name, p.name) for p in handed.glob("*/*")}}


def points(run, student, assignment=PS1):
    return sum(p for p in run.table.points[student, assignment].values() if p is not None)


@pytest.mark.slow
def test_a_worker_killed_mid_batch_loses_nothing_and_grades_nothing_twice(graded):
    run = graded["run"]
    assert graded["killed"], "worker-0 was not killed while running a submission"
    handed = graded["handed"]                     # (student, assignment); the other assignment's are 'missing'
    assert {k: r.status for k, r in run.submissions.items()} == {
        (s, a): "graded" if (s, a) in handed else "missing" for s, _ in handed for a in (PS1, PS3)}, \
        {k: r.issue_texts() for k, r in run.submissions.items() if k in handed and r.status != "graded"}
    keys = journal_keys(graded["reports"] / "journal.jsonl")
    assert set(keys) == handed and set(keys.values()) == {1}
    assert "worker-1" in graded["progress"] and "queued" in graded["progress"]


@pytest.mark.slow
def test_the_cluster_gives_each_submission_its_controls_points_and_twins_run_apart(graded):
    run = graded["run"]
    for student in ("blank", "partial"):
        assert points(run, student) == CONTROL_POINTS[student], student
    for student in ATTACKS:
        assert points(run, student) == CONTROL_POINTS[EXPECTED["attacks"][student]["control"]], student
    twin, original = run.submissions["partial_twin", PS1], run.submissions["partial", PS1]
    assert points(run, "partial_twin") == points(run, "partial") == 4.5
    assert points(run, "partial", PS3) == PS3_CONTROL_POINTS["partial"]
    for student in PS3_ATTACKS:
        assert points(run, student, PS3) == PS3_CONTROL_POINTS[EXPECTED["attacks"][student]["control"]], student
    assert {key for key in graded["handed"] if key[1] == PS3} == {("partial", PS3), *((s, PS3) for s in PS3_ATTACKS)}
    assert twin.seed != original.seed and twin.sha256 == original.sha256      # same bytes, two runs


@pytest.mark.slow
def test_a_worker_without_a_door_starts_its_runs_warm_in_a_user_namespace(graded):
    """The workers run as an unprivileged uid with no door: each thread's zygote lives in a user namespace."""
    probe = "from attnkit_grader.isolation import userns; print(userns.refusal() or '')"
    refused = subprocess.run(local.as_cluster_user([sys.executable, "-c", probe]), capture_output=True, text=True,
                             cwd="/", timeout=120).stdout.strip()
    if refused:
        pytest.skip(f"this system refuses the workers a user namespace ({refused}): they start cold")
    ran = {key: record.run.get("warm") for key, record in graded["run"].submissions.items() if record.run}
    assert ran and set(ran.values()) == {True}, ran


@pytest.mark.slow
def test_a_crash_or_a_memory_kill_is_a_verdict_not_a_failed_task(graded):
    run = graded["run"]
    for student in BROKEN:
        record = run.submissions[student, PS1]
        assert record.status == "graded" and points(run, student) == CONTROL_POINTS["partial"], student
        assert EXPECTED["robust"][student]["reason"] in " ".join(record.issue_texts()), record.issue_texts()


@pytest.mark.slow
def test_student_code_reaches_no_cluster_port_and_no_other_submissions_inputs(graded):
    record = graded["run"].submissions["prober", PS1]
    text = "".join(chunk for cell in record.run["outputs"].values() for _, chunk in cell)
    assert "REFUSED" in text and "REACHED" not in text, text
    found = json.loads(text.split("INPUTS ", 1)[1].splitlines()[0].replace("'", '"'))
    assert all(path.startswith("/scratch/") for path in found), found


def handshake_refused(address, ca, certificate=None):
    """True when the scheduler at ``address`` drops a TLS client that trusts ``ca`` and shows ``certificate``
    ((cert, key) files, or none), at the handshake or at its first read (where TLS 1.3 says so); False when
    the connection is still open, waiting for Dask's first message, after 3 s."""
    import socket
    import ssl

    host, port = address.removeprefix("tls://").rsplit(":", 1)
    context = ssl.create_default_context(cafile=str(ca))
    context.check_hostname = False
    if certificate:
        context.load_cert_chain(*map(str, certificate))
    with socket.create_connection((host, int(port)), timeout=3) as raw:
        try:
            with context.wrap_socket(raw) as connection:
                connection.sendall(b"\x00" * 8)
                return connection.recv(1) == b""
        except (ssl.SSLError, ConnectionError):
            return True
        except TimeoutError:
            return False


@pytest.mark.slow
def test_a_client_or_worker_without_the_clusters_certificate_is_refused(cluster, tmp_path):
    from distributed import Client, Security

    other = tmp_path / "other"
    certs.make(other)
    assert handshake_refused(cluster.address, cluster.certs / "ca.pem")               # TLS, but no certificate
    assert not handshake_refused(cluster.address, cluster.certs / "ca.pem", certs.cert_path(cluster.certs, "client"))
    attempts = {"another authority": (cluster.address, certs.security(other, "client")),
                "plain tcp": (cluster.address.replace("tls://", "tcp://"), Security())}
    for what, (address, security) in attempts.items():
        with pytest.raises((OSError, TimeoutError)):
            Client(address, security=security, timeout=5, set_as_default=False)
            pytest.fail(f"a client with {what} was let in")
    if os.geteuid() == 0:
        shutil.copytree(other, cluster.home / "other")
        for path in [cluster.home / "other", *(cluster.home / "other").iterdir()]:
            os.chown(path, local.CLUSTER_UID, local.CLUSTER_UID)
        other = cluster.home / "other"
    intruder = cluster.add_worker("intruder", certs_folder=other, death_timeout=5)
    assert intruder.wait(timeout=120) != 0
    with cluster.client() as client:
        names = {info["name"] for info in client.scheduler_info(n_workers=-1)["workers"].values()}
    assert names and "intruder" not in names


@pytest.mark.slow
def test_an_authenticated_clients_os_system_runs_unprivileged(cluster):
    if os.geteuid() != 0:
        pytest.skip("shows the cluster's processes drop root; this test runs as another user already")
    marker = cluster.home / "whoami"
    with cluster.client() as client:
        status = client.submit(os.system, f"id -u > {marker}; touch /etc/attnkit-cluster-test", pure=False).result()
        assert set(client.run(os.geteuid).values()) == {local.CLUSTER_UID}
        assert client.run_on_scheduler(os.geteuid) == local.CLUSTER_UID
    assert marker.read_text().strip() == str(local.CLUSTER_UID)
    assert status != 0 and not Path("/etc/attnkit-cluster-test").exists()


GRADE_COMMAND = [sys.executable, "-m", "attnkit_grader", "-q", "--root"]


@pytest.mark.slow
def test_a_grading_process_killed_mid_batch_resumes_from_the_journal(cluster, tmp_path):
    root = copy_course(tmp_path / "course")
    handed = hand_in(root / "handed_in", ["blank", "partial", "shape_only"])
    reports = root / "grades"
    journal = reports / "journal.jsonl"
    process = subprocess.Popen([*GRADE_COMMAND, str(root), "grade", PS1, "--submissions", str(handed), "--reports",
                                str(reports), "--scheduler", cluster.address, "--certs", str(cluster.certs)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None and not (journal.is_file() and journal.read_bytes()):
        time.sleep(0.05)
    assert process.poll() is None, "the batch ended before it could be killed"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    finished = len(Journal(journal))
    assert 1 <= finished < 3
    run = grade(root, [PS1], handed, reports_dir=reports, scheduler=cluster.address, certs=cluster.certs)
    assert sum(r.resumed for r in run.submissions.values()) >= finished
    assert all(r.status == "graded" for r in run.submissions.values())
    assert {s: points(run, s) for s in CONTROL_POINTS} == CONTROL_POINTS
    assert set(journal_keys(journal).values()) == {1}


@pytest.mark.slow
def test_a_scheduler_killed_mid_batch_stops_it_and_a_rerun_resumes(sandboxes, tmp_path):
    root = copy_course(tmp_path / "course")
    # Five hand-ins on one worker thread: once the first is journalled, the other four (each a second or more,
    # warm) are still to run when the scheduler dies. With two, a warm worker could finish the second while the
    # grading process was still journalling the first, and the batch ended before the kill.
    students = [*CONTROL_POINTS, *ATTACKS, *BROKEN]
    handed = hand_in(root / "handed_in", students)
    reports = root / "grades"
    journal = reports / "journal.jsonl"
    with local.LocalCluster(workers=1) as doomed:
        def kill_after_the_first():
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline and not (journal.is_file() and journal.read_bytes()):
                time.sleep(0.05)
            doomed.kill_scheduler()

        killer = threading.Thread(target=kill_after_the_first, daemon=True)
        killer.start()
        with pytest.raises(BatchInterrupted, match="scheduler was lost"):
            grade(root, [PS1], handed, reports_dir=reports, scheduler=doomed.address, certs=doomed.certs)
        killer.join(timeout=10)
    kept = len(Journal(journal))
    assert 1 <= kept < len(students)                      # the first was journalled, the rest were lost
    run = grade(root, [PS1], handed, reports_dir=reports, workers=2)       # on one machine: same journal
    assert sum(r.resumed for r in run.submissions.values()) == kept
    assert {s: points(run, s) for s in CONTROL_POINTS} == CONTROL_POINTS
    assert set(journal_keys(journal).values()) == {1} and len(journal_keys(journal)) == len(students)


@pytest.mark.slow
def test_a_worker_with_a_door_starts_every_sandbox_through_it_and_none_itself(sandboxes, tmp_path, monkeypatch):
    """A worker machine's door (ATTNKIT_SANDBOX_DOOR, as the hub's): the worker's plugin sends each request to
    it, and never starts bubblewrap itself (here the door is started directly: the tests run as root)."""
    if os.geteuid() != 0:
        pytest.skip("the door runs as root")
    from attnkit_grader import Course
    from attnkit_grader.isolation import bwrap, notebook_run
    from attnkit_grader import registry
    from attnkit_grader.release_cells import Release

    program = tmp_path / "attnkit-sandbox"
    program.write_text(f"#!/bin/sh\nexec {sys.executable} -I -B -m attnkit_grader.isolation.door --serve "
                       f"--state {tmp_path / 'door-state'}\n")
    program.chmod(0o755)
    monkeypatch.setenv(door.DOOR_VARIABLE, str(program))
    monkeypatch.setattr(bwrap.Sandbox, "run", lambda *a, **k: pytest.fail("the worker started a sandbox itself"))
    release = Release.read(Course(ROOT), PS1)
    data = (HOSTILE / "controls" / "partial" / PS1 / f"{PS1}.ipynb").read_bytes()
    (tmp_path / "given.ipynb").write_bytes(release.restored(data))
    scratch = notebook_run.prepare(tmp_path / "scratch", tmp_path / "given.ipynb", registry.make_inputs(PS1, 7),
                                   release.expected)
    request = door.encode(door.request_frames(RunnerJob(PS1), scratch, door.CEILING))
    plugin = cluster_worker.SandboxPlugin()
    plugin.setup(type("Worker", (), {"name": "w", "state": type("State", (), {"nthreads": 1})()})())
    try:
        result = door.parse_reply(door.decode(plugin.answer(request)))
    finally:
        plugin.teardown(None)
    assert result.started and result.exit_code == 0, result.reason
    assert "report.json" in result.files and not (plugin.work and plugin.work.exists())

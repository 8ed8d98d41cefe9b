"""The warm start (attnkit_grader.isolation.warm, attnkit_sandbox.zygote): what a shared parent could add.

Every sandboxed test of tests/test_sandbox.py already runs on the warm path too (its ``box`` fixture).
These add what only a zygote shared by a worker's runs could let through: one job leaving files,
processes, IPC objects, sockets, threads, environment, module state, monkeypatches or corrupted memory
for the next; a job reaching the zygote (signals, ptrace, its memory, its descriptors); and the CPU share
each job's cgroup gives it. Then the same grades warm and cold. All need bubblewrap, and root or a user
namespace (warm starts do).

The hostile tests run twice (the ``privilege`` fixture): as root, and as an unprivileged grader whose zygote
lives in a user namespace (:mod:`attnkit_grader.isolation.userns`). Run as root, the unprivileged half runs
once for the whole file, as :data:`GRADER_UID` in a pytest of its own, and each test reports the outcome it
had there; run as another user, only that half runs, here. Without cgroups, a fork bomb, a memory hog and
a spinning job are stopped by the limits alone: tested as mechanisms.
"""

import dataclasses
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import nbformat
import pytest
from conftest import copy_course, processes_of

from attnkit_grader import grade
from attnkit_grader.cluster.local import as_cluster_user
from attnkit_grader.isolation import bwrap, notebook_run, seccomp, staging, userns, warm
from attnkit_grader.isolation.cgroups import Cgroup
from attnkit_grader.isolation.limits import Limits, worker_uid

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
PS1 = "ps1_learnable_pe"
CONTROL_POINTS = {"blank": 0.0, "partial": 4.5, "shape_only": 0.0}    # PS1's controls, as tests/test_cluster.py
GRADER_UID = 60950                 # an instructor grading as themself: not root, not a sandbox's (61000 and up)
INNER_SECONDS = 600


@dataclasses.dataclass(frozen=True)
class Privilege:
    """Who grades: "root" or "unprivileged"; ``delegated``: this test ran as GRADER_UID, its body is not run here
    (tests/conftest.py's pytest_pyfunc_call)."""

    name: str
    delegated: bool = False


@pytest.fixture(params=["root", "unprivileged"])
def privilege(request):
    if request.param == "root":
        if os.geteuid() != 0:
            pytest.skip("the grader is not root here: its unprivileged half runs")
        return Privilege("root")
    if os.geteuid() != 0:
        return Privilege("unprivileged")
    outcomes, output = request.getfixturevalue("unprivileged_run")
    assert outcomes.get(request.node.nodeid) == "PASSED", output[-6000:]
    return Privilege("unprivileged", delegated=True)


@pytest.fixture(scope="session")
def unprivileged_run(request):
    """({test id: outcome}, output) of this file's unprivileged tests, run once as GRADER_UID (as root only)."""
    if not shutil.which("setpriv") or bwrap.unavailable_reason():
        pytest.skip("no bubblewrap or setpriv to run an unprivileged grader")
    here = Path(__file__).resolve().relative_to(ROOT).as_posix()
    ids = [item.nodeid for item in request.session.items if item.nodeid.startswith(f"{here}::")
           and getattr(item, "callspec", None) and item.callspec.params.get("privilege") == "unprivileged"]
    home = Path(tempfile.mkdtemp(prefix="attnkit-unprivileged-"))
    home.chmod(0o777)
    environment = {**{k: v for k, v in os.environ.items() if k in ("PATH", "CI", "LANG")},
                   "HOME": str(home), "MPLCONFIGDIR": str(home / "matplotlib"), "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-q", "-rA",
                   "--durations=0", f"--basetemp={home / 'tmp'}", *ids]
        done = subprocess.run(as_cluster_user(command, uid=GRADER_UID, paths=[ROOT]), cwd=ROOT, env=environment,
                              capture_output=True, text=True, timeout=INNER_SECONDS)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    output = done.stdout + done.stderr
    outcomes = dict((m[2], m[1]) for m in re.finditer(r"^(PASSED|FAILED|ERROR|SKIPPED) (\S+)", output, re.M))
    return outcomes, output


@pytest.fixture(scope="module")
def public_dir(tmp_path_factory):
    reason = bwrap.unavailable_reason() or (
        None if warm.available() else f"warm starts need root or a user namespace ({userns.refusal()})")
    if reason:
        (pytest.fail if os.environ.get("CI") and warm.available() else pytest.skip)(reason)
    return staging.stage_packages(tmp_path_factory.mktemp("public"))


def uid_for(offset):
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").lstrip("gw") or 0)
    return worker_uid(920 + 10 * worker + offset)


@pytest.fixture
def zygote_box(request, privilege):
    """A warm sandbox of the ``privilege`` at hand (None where the test ran as GRADER_UID)."""
    if privilege.delegated:
        yield None
        return
    box = warm.WarmSandbox(request.getfixturevalue("public_dir"), Limits(wall_seconds=60, uid=uid_for(0)))
    assert box.as_root == (privilege.name == "root")
    yield box
    box.close()


def leftovers(box):
    """Processes a job left: below the zygote (C, G and every process of a job's namespace), and as root, of the
    job's uid (in a user namespace that uid is the grader's own)."""
    return descendants(zygote_pid(box)) + (processes_of(box.limits.uid) if box.as_root else [])


def run(box, tmp_path, *sources, name="job", **options):
    """Run a notebook of the code cells ``sources``; {cell number: its stdout or error}."""
    path = tmp_path / f"{name}.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources]), path)
    done = notebook_run.run_notebook(box, path, tmp_path / f"scratch-{name}", **options)
    assert done.result.warm and done.result.started, done.result.stderr
    return {cell["index"]: cell.get("stdout") or cell.get("error") or "" for cell in done.report["cells"]}, done


def descendants(pid):
    """Host pids of every process below ``pid``."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            found += children
            todo += children
    return found


def zygote_pid(box):
    for pid in descendants(box.process.pid):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[1:3] == [b"-m", b"attnkit_sandbox.zygote"]:
                return pid
        except OSError:
            continue
    raise AssertionError("no zygote below the warm sandbox's bwrap")



def cpu_seconds(pid):
    """User + system CPU seconds process ``pid`` has used (from /proc, in clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.slow
def test_the_zygote_waits_without_spinning_while_its_job_runs(zygote_box, tmp_path):
    """While a job runs, its zygote sleeps in select() until the job's pid, its end or the grader's word: it
    once kept polling the pipe of the job's pid after that pipe's end, a core's worth of CPU taken from the
    graded notebooks (the pool ran at half speed, and warm starts gained nothing)."""
    run(zygote_box, tmp_path, "1 + 1", name="first")                    # the zygote started and warmed up
    zygote = zygote_pid(zygote_box)
    before = cpu_seconds(zygote)
    cells, done = run(zygote_box, tmp_path, "import time\ntime.sleep(2.0)\nprint('slept')", name="sleeper")
    assert cells[1] == "slept\n" and done.result.seconds >= 2.0
    assert cpu_seconds(zygote) - before < 0.3, "the zygote used CPU while its job slept"

LEAVE = r'''
import ctypes, os, random, signal, socket, subprocess, sys, threading, time
import numpy, torch, attnkit
libc = ctypes.CDLL(None, use_errno=True)
open('/tmp/left.txt', 'w').write('left')
open('/scratch/left.txt', 'w').write('left')
for path in ('/dev/shm/left', '/dev/left', '/left'):
    try:
        open(path, 'w').write('left')
        print('wrote', path)
    except OSError as error:
        print('refused', path, error.errno)
print('shm', libc.shmget(0x5eed, 4096, 0o1666) >= 0, 'msg', libc.msgget(0x5eed, 0o1666) >= 0)
server = socket.socket(socket.AF_UNIX)
server.bind('\0attnkit-left')
server.listen()
tcp = socket.create_server(('127.0.0.1', 47123))
if os.fork() == 0:                          # a daemon holding both sockets, in a session of its own
    os.setsid()
    if os.fork() == 0:
        time.sleep(600)
    os._exit(0)
threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
os.environ['ATTNKIT_LEFT'] = 'left'
libc.putenv(b'ATTNKIT_PUTENV=left')
numpy.allclose = lambda *args, **kwargs: True
torch.Tensor.__eq__ = lambda self, other: True
attnkit.LEFT = 'left'
sys.modules['attnkit_left'] = attnkit
signal.signal(signal.SIGTERM, signal.SIG_IGN)
ctypes.c_double.from_address(id(numpy.pi) + 16).value = 3.0      # the float object itself, in place
random.seed(12345)
print('pi', numpy.pi, 'random', random.random())
'''

FIND = r'''
import ctypes, errno, os, random, signal, socket, sys, threading
import numpy, torch, attnkit
libc = ctypes.CDLL(None, use_errno=True)
print('files', [p for p in ('/tmp/left.txt', '/scratch/left.txt', '/dev/shm/left', '/dev/left', '/left')
                if os.path.exists(p)])
print('shm', libc.shmget(0x5eed, 4096, 0), errno.errorcode[ctypes.get_errno()],
      'msg', libc.msgget(0x5eed, 0), errno.errorcode[ctypes.get_errno()])
for family, address in ((socket.AF_UNIX, '\0attnkit-left'), (socket.AF_INET, ('127.0.0.1', 47123))):
    try:
        socket.socket(family).connect(address)
        print('connected', address)
    except OSError as error:
        print('refused', type(error).__name__)
print('processes', sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))
print('threads', sorted(t.name for t in threading.enumerate()))
print('environment', os.environ.get('ATTNKIT_LEFT'), os.environ.get('ATTNKIT_PUTENV'))
print('patched', numpy.allclose(0, 1), bool((torch.zeros(1) == torch.ones(1)).all()), hasattr(attnkit, 'LEFT'),
      'attnkit_left' in sys.modules, signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)
print('pi', numpy.pi, 'random', random.random())
'''


def test_a_job_leaves_nothing_for_the_next(zygote_box, tmp_path):
    """Files, processes, System V IPC, sockets, threads, environment, module state and monkeypatches, a float
    changed in place in copy-on-write memory, the random seed: none of it reaches the next job."""
    left, _ = run(zygote_box, tmp_path, LEAVE, name="leave")
    lines = left[1].splitlines()
    assert lines[:3] == ["refused /dev/shm/left 30", "refused /dev/left 30", "refused /left 30"]   # EROFS
    assert lines[3] == "shm True msg True" and lines[4].startswith("pi 3.0 random 0.416")
    assert leftovers(zygote_box) == []                        # the daemon died with the job's namespace
    found, _ = run(zygote_box, tmp_path, FIND, name="find")
    lines = found[1].splitlines()
    assert lines[:4] == ["files []", "shm -1 ENOENT msg -1 ENOENT", "refused ConnectionRefusedError",
                         "refused ConnectionRefusedError"]
    assert lines[4] == "processes [1, 2]"
    assert lines[5] == "threads ['MainThread', 'attnkit-watchdog']"
    assert lines[6:8] == ["environment None None", "patched False False False False True"]
    assert lines[8].startswith("pi 3.141592653589793 random ") and not lines[8].endswith("0.41661987254534116")


REACH = r'''
import ctypes, errno, os, signal
libc = ctypes.CDLL(None, use_errno=True)
print('parent', os.getppid(), 'visible', sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))
for pid in {pids}:
    try:
        os.kill(pid, signal.SIGKILL)
        print('signalled', pid)
    except OSError as error:
        print('kill', errno.errorcode[error.errno])
print('ptrace', libc.ptrace(16, 1, 0, 0), errno.errorcode[ctypes.get_errno()])
try:
    open('/proc/1/mem', 'rb').read(1)
except OSError as error:
    print('mem', errno.errorcode[error.errno])
for number in (signal.SIGKILL, signal.SIGINT):     # the job's own init: root's (unprivileged: dropped, a PID 1)
    try:
        os.kill(1, number)
    except OSError as error:
        print('kill init', errno.errorcode[error.errno])
print('init alive', os.path.exists('/proc/1'))
print('fds', sorted(int(fd) for fd in os.listdir('/proc/self/fd')))
status = dict(line.split(':', 1) for line in open('/proc/self/status').read().splitlines())
print(' '.join(f"{{key}}={{status[key].strip()}}" for key in
               ('CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb', 'NoNewPrivs', 'Seccomp')))
print('ids', os.getresuid(), os.getresgid(), os.getgroups())
'''


def test_a_job_cannot_reach_the_zygote(zygote_box, tmp_path):
    """No pid of the zygote or its sandbox to signal, ptrace refused, no descriptor but the job's own pipes,
    no privilege; after it, the zygote serves the next job as before."""
    run(zygote_box, tmp_path, "x = 1", name="first")
    zygote, before = zygote_pid(zygote_box), None
    before = sorted(os.listdir(f"/proc/{zygote}/fd"))
    pids = [zygote_box.process.pid, zygote, *descendants(zygote_box.process.pid)]
    found, done = run(zygote_box, tmp_path, REACH.format(pids=sorted(set(pids))), name="reach")
    assert done.reason is None, done.reason                  # its init outlived the signals: the run ended well
    lines = found[1].splitlines()
    assert lines[0] == "parent 1 visible [1, 2]"
    assert lines[1:1 + len(set(pids))] == ["kill ESRCH"] * len(set(pids))
    rest = lines[1 + len(set(pids)):]
    if not zygote_box.as_root:                               # init has the job's uid: the kernel drops the signals
        rest[2:2] = ["kill init EPERM"] * 2
    assert rest[:5] == ["ptrace -1 EPERM", "mem EACCES", "kill init EPERM", "kill init EPERM", "init alive True"]
    rest = rest[1:]
    assert rest[4] == "fds [0, 1, 2, 3, 4]"                  # stdin, stdout, stderr, the channel, and listdir's own
    uid = zygote_box.job_uid(zygote_box.limits)
    assert rest[5] == ("CapInh=0000000000000000 CapPrm=0000000000000000 CapEff=0000000000000000 "
                       "CapBnd=0000000000000000 CapAmb=0000000000000000 NoNewPrivs=1 Seccomp=2")
    assert rest[6].startswith(f"ids {(uid, uid, uid)} {(uid, uid, uid)} ")
    if zygote_box.as_root or not os.getgroups():             # a user namespace keeps the grader's groups
        assert rest[6].endswith(" []")
    assert zygote_pid(zygote_box) == zygote and sorted(os.listdir(f"/proc/{zygote}/fd")) == before
    again, _ = run(zygote_box, tmp_path, "print('next')", name="next")
    assert again[1] == "next\n"


def test_a_job_cannot_exhaust_the_zygotes_descriptors(zygote_box, tmp_path):
    greedy = ("import os, socket\nkept = []\ntry:\n    while True:\n        kept += socket.socketpair()\n"
              "except OSError as error:\n    print('stopped at', len(kept), type(error).__name__)")
    run(zygote_box, tmp_path, "x = 1", name="first")
    zygote = zygote_pid(zygote_box)
    before = len(os.listdir(f"/proc/{zygote}/fd"))
    for round_ in range(3):
        found, _ = run(zygote_box, tmp_path, greedy, name=f"greedy{round_}")
        assert found[1].startswith("stopped at 25") and found[1].endswith("OSError\n")     # RLIMIT_NOFILE 256
    assert len(os.listdir(f"/proc/{zygote}/fd")) == before and zygote_pid(zygote_box) == zygote


def test_the_zygote_imported_everything_on_one_thread(zygote_box, tmp_path):
    run(zygote_box, tmp_path, "x = 1")
    assert zygote_box.ready["threads"] == 1
    assert zygote_box.ready["assignments"] == ["ps1_learnable_pe", "ps2_relative_pe", "ps3_rope"]
    loaded = [line for line in Path(f"/proc/{zygote_pid(zygote_box)}/maps").read_text().splitlines()
              if "libtorch" in line]
    assert loaded, "torch is imported before any job"


# --- without cgroups: the limits alone -------------------------------------------------------------------------

def test_the_user_namespace_arguments_name_a_bad_uid_and_make_dev_without_devpts():
    for bad in (0, -1, "1000", True):
        with pytest.raises(ValueError, match="uid: expected the unprivileged uid of the grading process"):
            userns.namespace_args(bad)
    args = userns.namespace_args(1000)
    assert args[args.index("--uid") + 1] == args[args.index("--gid") + 1] == "1000"
    assert "--disable-userns" not in args and args.count("--cap-add") == len(userns.CAPABILITIES)
    made = userns.without_devpts(["--ro-bind", "/usr", "/j/usr", "--dev", "/j/dev", "--proc", "/j/proc"])
    assert "--dev" not in made and made[:3] == ["--ro-bind", "/usr", "/j/usr"] and made[-2:] == ["--proc", "/j/proc"]
    binds = [made[i + 1:i + 3] for i, arg in enumerate(made) if arg == "--dev-bind"]
    assert binds == [[f"/dev/{name}", f"/j/dev/{name}"] for name in userns.DEVICES]
    assert "/dev/pts" not in " ".join(made)


def test_a_fork_bomb_stops_at_the_process_limit_and_the_next_job_runs(zygote_box, tmp_path):
    """RLIMIT_NPROC stops the bomb (in a user namespace it counts the zygote's namespace: the zygote, the job's
    setup processes and the job's own); the job's end kills what it forked, and the zygote serves the next."""
    cells, done = run(zygote_box, tmp_path, "import os\nwhile True:\n    os.fork()", "print('after')", name="bomb")
    assert cells[1].startswith("BlockingIOError") and cells[2] == "after\n"
    assert str(done.reason).startswith(f"cell 1 hit the limit of {zygote_box.limits.processes} processes")
    assert leftovers(zygote_box) == []
    again, _ = run(zygote_box, tmp_path, "import os\nprint(os.fork() and 'forked')", name="next")
    assert again[1] == "forked\n"


def test_a_memory_hog_ends_as_the_memory_limit(zygote_box, tmp_path):
    """RLIMIT_AS refuses the allocation (per process: no cgroup adds them up in a user namespace)."""
    cells, done = run(zygote_box, tmp_path, "block = bytearray(4 * 2**30)", "print('after')", name="hog")
    cell = done.report["cells"][0]
    assert cell["memory"] and cell["error"] == "MemoryError" and cells[2] == "after\n"
    assert str(done.reason).startswith("cell 1 ran out of memory (limit 3 GiB): MemoryError")


def test_a_spinning_job_is_stopped_at_its_cpu_limit(request, privilege, tmp_path):
    """RLIMIT_CPU stops a job that spins past its CPU seconds (the cell's own timeout is far off)."""
    box = warm.WarmSandbox(request.getfixturevalue("public_dir"), Limits(wall_seconds=120, cpu_seconds=2,
                                                                         uid=uid_for(3)))
    try:
        path = tmp_path / "spin.ipynb"
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("while True:\n    pass")]), path)
        done = notebook_run.run_notebook(box, path, tmp_path / "scratch-spin", cell_timeout=100)
        assert done.result.warm and not done.result.timed_out
        assert done.result.signal in (signal.SIGXCPU, signal.SIGKILL), done.result
        assert str(done.reason).startswith(("stopped at the CPU-time limit of 2 s", "killed (SIGKILL): the CPU"))
        assert leftovers(box) == []
    finally:
        box.close()


NEW_USER = r'''
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER, SIGCHLD = 0x10000000, 17
print('unshare', libc.unshare(CLONE_NEWUSER), errno.errorcode.get(ctypes.get_errno()))
pid = libc.syscall({clone}, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)
if pid == 0:
    libc._exit(0)
print('clone', pid, errno.errorcode.get(ctypes.get_errno()))
for name, call in (('setuid', lambda: os.setuid(0)), ('setgid', lambda: os.setgid(0))):
    try:
        call()
        print(name, 'done')
    except OSError as error:
        print(name, errno.errorcode[error.errno])
status = dict(line.split(':', 1) for line in open('/proc/self/status').read().splitlines())
print(status['CapEff'].strip(), status['CapBnd'].strip(), status['NoNewPrivs'].strip())
'''
CLONE_NUMBERS = {"x86_64": 56, "aarch64": 220}


@pytest.mark.parametrize("with_filter", [True, False], ids=["filter", "no-filter"])
def test_a_job_can_make_no_user_namespace_nor_regain_a_capability(zygote_box, tmp_path, monkeypatch, with_filter):
    """The filter refuses unshare and clone with CLONE_NEWUSER; without it the chroot still does (the kernel); a
    job cannot become root, nor hold a capability, as root or in the grader's user namespace."""
    if os.uname().machine not in CLONE_NUMBERS:
        pytest.skip(f"no clone number known on {os.uname().machine}")
    if not with_filter:
        monkeypatch.setattr(seccomp, "program", lambda: None)
    found, done = run(zygote_box, tmp_path, NEW_USER.format(clone=CLONE_NUMBERS[os.uname().machine]))
    assert done.result.seccomp == with_filter
    lines = found[1].splitlines()
    # unshare(CLONE_NEWUSER) is EINVAL in a process of several threads (the runner's watchdog) before any other
    # check: the chroot's refusal shows in clone, which has no such rule
    assert lines[0] == "unshare -1 EPERM" if with_filter else lines[0] in ("unshare -1 EPERM", "unshare -1 EINVAL")
    refused = "EPERM" if zygote_box.as_root else "EINVAL"          # in a user namespace uid 0 is not even mapped
    assert lines[1:] == ["clone -1 EPERM", f"setuid {refused}", f"setgid {refused}",
                         "0000000000000000 0000000000000000 1"]


def test_a_refused_user_namespace_falls_back_to_cold_runs_with_the_same_grades(privilege, tmp_path, monkeypatch,
                                                                              capsys):
    """Where the system refuses the zygote's user namespace (simulated: the probe refuses), an unprivileged grader
    says so once on stderr and grades cold, with the points warm batches give PS1's controls (the warm and cold
    grades test below, tests/test_cluster.py's warm workers); root never needs one."""
    refusal = "setting up uid map: Permission denied (simulated)"
    monkeypatch.setattr(userns, "refusal", lambda bwrap="bwrap": refusal)
    userns.tell_cold.cache_clear()
    try:
        if privilege.name == "root":
            assert warm.available() and capsys.readouterr().err == ""
            return
        assert not warm.available() and not warm.available()
        assert capsys.readouterr().err.count(refusal) == 1
        with pytest.raises(bwrap.SandboxUnavailable, match="Permission denied"):
            warm.WarmSandbox(staging.stage_packages(tmp_path / "public"))
        root = copy_course(tmp_path / "course")
        cold = grade(root, [PS1], ROOT / "tests" / "fixtures" / "hostile_class" / "controls",
                     reports_dir=root / "grades", workers=2)
    finally:
        userns.tell_cold.cache_clear()
    assert {record.run.get("warm") for record in cold.submissions.values() if record.run} == {False}
    got = {student: sum(p for p in cold.table.points[student, PS1].values() if p is not None)
           for student in CONTROL_POINTS}
    assert got == CONTROL_POINTS                     # what warm runs give them, as root and unprivileged


# --- the CPU share -------------------------------------------------------------------------------------------

BUSY = ("import os, time\nend = time.time() + {seconds}\n{spawn}while time.time() < end:\n    pass\n"
        "print('done')")
SPAWN = "for _ in range({count}):\n    if os.fork() == 0:\n        break\n"


@pytest.fixture
def no_autogroup():
    """The scheduler's autogroup off (it shares the CPU between sessions by itself), restored after."""
    path = Path("/proc/sys/kernel/sched_autogroup_enabled")
    try:
        saved = path.read_text()
        path.write_text("0")
    except OSError as error:
        pytest.skip(f"the autogroup setting cannot be changed here ({error})")
    try:
        yield
    finally:
        path.write_text(saved)


def test_a_job_spinning_many_processes_gets_no_more_cpu_than_a_classmate(public_dir, tmp_path, no_autogroup):
    """Two workers at once: one job spins 16 processes, the other one loop, for the same 6 s. Each job's cgroup
    accounts its CPU; with a share per job the honest one gets as much as the spinner (without, it would get
    about 2 of 17 parts)."""
    if not Cgroup.available():
        pytest.skip("no cgroup can be made here: jobs fall back to autogroup and RLIMIT_CPU")
    boxes = [warm.WarmSandbox(public_dir, Limits(wall_seconds=60, uid=uid_for(offset))) for offset in (1, 2)]
    try:
        for box, name in zip(boxes, ("warm-a", "warm-b")):
            run(box, tmp_path, "x = 1", name=name)                    # zygotes started before the race
        if not boxes[0].parents or not Path(boxes[0].parents[-1], "cpuacct.usage").exists() and \
                not Path(boxes[0].parents[-1], "cpu.stat").exists():
            pytest.skip("no cpu controller here: no CPU share per job")
        done = {}

        def job(box, name, spawn):
            done[name] = run(box, tmp_path, BUSY.format(seconds=6, spawn=spawn), name=name, cell_timeout=60)[1]

        threads = [threading.Thread(target=job, args=(boxes[0], "spinner", SPAWN.format(count=16))),
                   threading.Thread(target=job, args=(boxes[1], "honest", ""))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        for box in boxes:
            box.close()
    spinner, honest = done["spinner"].result.cpu_seconds, done["honest"].result.cpu_seconds
    assert spinner is not None and honest is not None
    assert honest >= 0.6 * spinner, (honest, spinner)


def test_honest_classmates_keep_full_marks_beside_a_spinning_submission(tmp_path, no_autogroup):
    root = copy_course(tmp_path / "course")
    reference = ROOT / "examples" / "example_class" / "ref_solution" / PS1 / f"{PS1}.ipynb"
    handed_in = tmp_path / "handed_in"
    for student in ("honest_a", "honest_b", "honest_c"):
        (handed_in / student / PS1).mkdir(parents=True)
        (handed_in / student / PS1 / f"{PS1}.ipynb").write_bytes(reference.read_bytes())
    spinner = nbformat.read(reference, as_version=4)
    spinner.cells.insert(1, nbformat.v4.new_code_cell(BUSY.format(seconds=8, spawn=SPAWN.format(count=24))))
    (handed_in / "spinner" / PS1).mkdir(parents=True)
    nbformat.write(spinner, handed_in / "spinner" / PS1 / f"{PS1}.ipynb")
    run_ = grade(root, [PS1], handed_in, reports_dir=root / "grades", workers=2)
    tests = {grade_id: points for grade_id, points in run_.table.cells[PS1] if grade_id.startswith("test_")}
    for student in ("honest_a", "honest_b", "honest_c"):
        assert {g: run_.table.points[student, PS1][g] for g in tests} == tests, student     # full marks
        assert run_.submissions[student, PS1].run["cpu_seconds"] > 0
    assert run_.submissions["spinner", PS1].run["cpu_seconds"] > 0


# --- the same grades ---------------------------------------------------------------------------------------

def test_warm_and_cold_starts_give_the_same_grades(tmp_path):
    controls = ROOT / "tests" / "fixtures" / "hostile_class" / "controls"
    runs = {}
    for mode in (True, False):
        root = copy_course(tmp_path / f"course-{mode}")
        runs[mode] = grade(root, [PS1, "ps3_rope"], controls, reports_dir=root / "grades", warm=mode, workers=2,
                           canary=False)                     # the canary's own tests: test_canary.py
    assert runs[True].table.as_dict() == runs[False].table.as_dict()
    graded = {mode: {key for key, record in run.submissions.items() if record.status == "graded"}
              for mode, run in runs.items()}
    assert graded[True] == graded[False] == {(s, PS1) for s in ("blank", "partial", "shape_only")} | {
        (s, "ps3_rope") for s in ("blank", "partial")}                            # PS3's controls too
    for key, record in runs[True].submissions.items():
        assert (record.status, record.checked) == (runs[False].submissions[key].status,
                                                   runs[False].submissions[key].checked), key
    cold = {key: runs[False].submissions[key].run.get("warm") for key in graded[False]}
    warm_ = {key: runs[True].submissions[key].run.get("warm") for key in graded[True]}
    assert set(cold.values()) == {False} and set(warm_.values()) == {True}

"""Run untrusted code (a student's notebook) in a bubblewrap sandbox with resource limits.

What the sandboxed process sees: read-only /usr (and the /bin, /lib symlinks), a few files of /etc,
the Python installation and virtual environment this process runs on (at their own paths), a staged
copy of the packages it may import at /opt/attnkit (the student package, attnkit_sandbox and each
assignment's probes; see :mod:`.staging`), the files of its scratch folder read-only under
/scratch, and two size-capped tmpfs folders it may write: /scratch (its working folder and HOME) and
/tmp. Not the repository, not the course folder, not the gradebook, not another submission, no
network (own network namespace: loopback only), no other process (own PID namespace), no host file it
could write: whatever it wants the grader to read it sends over a pipe (see
:mod:`attnkit_sandbox.channel`), and the parent writes those files into SCRATCH/out itself.

Limits (see :class:`Limits`): address space (RLIMIT_AS) per process, CPU seconds (RLIMIT_CPU) per
process, processes and threads (RLIMIT_NPROC), file size (RLIMIT_FSIZE), open files, no core dumps;
the tmpfs sizes; bytes of stdout+stderr and of the pipe, counted by the parent, which kills the sandbox
past them; and a wall clock, also the parent's. Where this process may create cgroups (root on cgroup
v1, or a writable cgroup v2 hierarchy), a throwaway cgroup also caps the memory (no swap) and the
process count of the whole sandbox: RLIMIT_AS alone lets each of many forked children take its full
allowance (:class:`Cgroup`; ``SandboxResult.cgroup`` says whether one was used).

RLIMIT_NPROC is not enforced for real root, so when this process is root the command runs as an
unprivileged uid: bwrap (as root, no user namespace, all capabilities dropped but the four the next
steps need) execs ``prlimit``, then ``chroot`` into :data:`JAIL` (where bwrap built the sandbox's file
tree; its own root holds only what prlimit and chroot need), then ``setpriv``, which drops to
``Limits.uid`` with no capabilities, no supplementary groups and no_new_privs. The chroot is what keeps
the sandbox from making user namespaces of its own (the kernel refuses CLONE_NEWUSER to a chrooted
process, EPERM): in one it would hold every capability, mount file systems and build namespaces the
limits above do not follow. Run as another user, bwrap makes a user namespace instead (unprivileged
user namespaces must be enabled), with ``--disable-userns`` for the same reason, and prlimit runs
inside it, where the count starts.

System calls (x86_64 and aarch64): bwrap installs a seccomp filter (:mod:`.seccomp`, built with
libseccomp) just before it runs the command, so every process of the sandbox lives under it. It refuses
with EPERM the calls a grading sandbox never needs and that widen what a hostile notebook can reach in
the kernel: ptrace and process_vm_readv/writev, namespaces (unshare, setns, clone with a namespace flag),
mounts, keyrings, bpf, perf_event_open, userfaultfd, io_uring, kernel modules, kexec, reboot, swap, acct,
open_by_handle_at, and every call of another ABI; clone3 answers ENOSYS so that the C library falls back
to clone, whose flags a classic filter can read. On another architecture no filter is installed and a
notice is logged once.

Setup on Debian/Ubuntu: ``apt-get install -y bubblewrap libseccomp2`` (setpriv and prlimit come with util-linux).
"""

import functools
import json
import logging
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from attnkit_sandbox import channel

from .cgroups import Cgroup
from .limits import Limits
from .staging import FONT_CACHE, check_staged
from . import reasons
from . import seccomp as syscall_filter
from ..results import Message

log = logging.getLogger(__name__)

SCRATCH = "/scratch"                 # the scratch folder inside the sandbox
MPLCONFIGDIR = "/tmp/matplotlib"      # matplotlib's cache folder inside the sandbox
JAIL = "/sandbox"                    # run as root: where bwrap builds the tree the command is chrooted into
PUBLIC = "/opt/attnkit"              # the staged public package inside the sandbox (on PYTHONPATH)
CHANNEL = "{channel}"                # in an argv, replaced by the number of the pipe to the parent
SETUP = "apt-get install -y bubblewrap libseccomp2"
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "alternatives", "fonts")
SYSTEM_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")


@dataclass
class SandboxResult:
    """How a sandboxed command ended. ``reason`` is one line when it did not end normally, else None."""

    started: bool
    exit_code: int = None            # the command's exit status (128 + N when signal N ended it)
    signal: int = None               # that signal N, if any
    timed_out: bool = False          # the parent's wall clock ran out and it killed the sandbox
    output_exceeded: bool = False    # stdout + stderr went past Limits.output; the sandbox was killed
    channel_exceeded: bool = False
    oom_killed: bool = False         # the cgroup's memory limit was hit and the kernel killed a process
    cgroup: str = None               # "v1" or "v2" when a cgroup capped the whole sandbox, else None
    seccomp: bool = False            # whether the system-call filter was installed (x86_64 and aarch64)
    cpu_seconds: float = None        # CPU time of all its processes together, from its cgroup (where one was made)
    warm: bool = False               # forked from a warm zygote (:mod:`.warm`) rather than started afresh
    stdout: bytes = b""              # the first Limits.output bytes
    stderr: bytes = b""
    files: dict = field(default_factory=dict)    # {name: bytes} the command sent on the pipe
    seconds: float = 0.0
    reason: Message = None           # why the run did not end well (reasons.exit_reason), None when it did

    @property
    def ok(self):
        return self.reason is None


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot create a sandbox on this machine."""


# --- is it there? ------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def unavailable_reason():
    """None when sandboxes work here, else one line saying why not and what to do."""
    if not sys.platform.startswith("linux"):
        return f"the grading sandbox needs Linux (bubblewrap); this is {sys.platform}"
    missing = [tool for tool in ("bwrap", "prlimit") + (("setpriv", "chroot") if os.geteuid() == 0 else ())
               if tool_path(tool) is None]
    if missing:
        return (f"the grading sandbox needs {', '.join(missing)}: on Debian/Ubuntu run `{SETUP}` "
                f"(bwrap is bubblewrap; prlimit and setpriv come with util-linux)")
    as_root = os.geteuid() == 0
    probe = [shutil.which("bwrap"), *(system_mounts(devices=False) if as_root else []),
             *system_mounts(JAIL if as_root else ""),
             *namespace_args(as_root), "--", *([tool_path("chroot"), JAIL] if as_root else []), "true"]
    program = syscall_filter.program()
    seccomp = syscall_filter.pipe(program) if program else None
    if seccomp is not None:
        probe[1:1] = ["--seccomp", str(seccomp)]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=30, stdin=subprocess.DEVNULL,
                              pass_fds=() if seccomp is None else (seccomp,))
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bubblewrap could not be run: {error}"
    finally:
        if seccomp is not None:
            os.close(seccomp)
    if done.returncode != 0:
        detail = channel.clip_message(done.stderr.decode("utf-8", "replace")) or f"exit status {done.returncode}"
        return (f"bubblewrap cannot create a sandbox here ({detail}); it needs user namespaces when not run "
                f"as root (sysctl kernel.unprivileged_userns_clone=1, or AppArmor's "
                f"kernel.apparmor_restrict_unprivileged_userns=0)")
    return None


def tool_path(name):
    """Where the program ``name`` is (PATH, then the sbin folders: chroot lives in /usr/sbin), or None."""
    return shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"]))


def available():
    """True when bubblewrap works on this machine (see :func:`unavailable_reason` for why not)."""
    return unavailable_reason() is None


def check_available():
    """Raise SandboxUnavailable with the reason and the fix when sandboxes cannot run here."""
    reason = unavailable_reason()
    if reason:
        raise SandboxUnavailable(reason)


# --- the bwrap command ----------------------------------------------------------------------------------------

def system_mounts(root="", devices=True, own_mount=False):
    """Read-only /usr, the /bin and /lib links (or folders) and the few /etc files programs need, and
    (``devices``) a /dev and a /proc, under ``root`` (a folder of the sandbox, e.g. JAIL; with ``own_mount``
    a tmpfs of its own, so that a process chrooted there can change the propagation of its mounts)."""
    args = (["--perms", "0755", "--tmpfs" if own_mount else "--dir", root] if root else []) + \
        ["--ro-bind", "/usr", f"{root}/usr"]
    for name in SYSTEM_LINKS:
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), f"{root}{path}"]
        elif path.is_dir():
            args += ["--ro-bind", str(path), f"{root}{path}"]
    args += ["--perms", "0755", "--dir", f"{root}/etc"]
    for name in ETC_FILES:
        if os.path.lexists(f"/etc/{name}"):
            args += ["--ro-bind", f"/etc/{name}", f"{root}/etc/{name}"]
    return args + (["--dev", f"{root}/dev", "--proc", f"{root}/proc"] if devices else [])


def namespace_args(as_root):
    """Every namespace but the user one for root (so the uid drop below is real), all of them otherwise;
    either way no user namespace the sandbox could make itself (see the module's docstring)."""
    common = ["--die-with-parent", "--new-session", "--hostname", "sandbox"]
    if as_root:
        caps = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_SYS_CHROOT")     # for chroot and setpriv
        return ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                *[arg for cap in caps for arg in ("--cap-add", cap)], *common]
    return ["--unshare-all", "--unshare-user", "--disable-userns", *common]


class Sandbox:
    """Runs commands in bubblewrap sandboxes that see ``public_dir`` (from :func:`.staging.stage_packages`) as /opt/attnkit."""

    def __init__(self, public_dir, limits=None, python=None, cgroups=None):
        """``cgroups``: cap the sandbox's memory and process count as a whole with a cgroup (None: where
        this process may create cgroups, i.e. root on cgroup v1 or a writable cgroup v2 hierarchy)."""
        check_available()
        self.public_dir = Path(public_dir).resolve()
        if not (self.public_dir / "attnkit" / "__init__.py").is_file():
            raise FileNotFoundError(f"public_dir: {self.public_dir} holds no attnkit package; "
                                    f"make it with staging.stage_packages()")
        check_staged(self.public_dir)
        self.limits = limits or Limits()
        self.python = str(python or sys.executable)
        self.as_root = os.geteuid() == 0
        self.bwrap = shutil.which("bwrap")
        self.use_cgroups = cgroups is None and Cgroup.available() or bool(cgroups)
        self.font_cache = next(iter(sorted((self.public_dir / FONT_CACHE).glob("fontlist-v*.json"))), None)

    def python_mounts(self, jail=""):
        """The interpreter's installation and virtual environment, read-only at their own paths (under ``jail``)."""
        roots = {Path(sys.base_prefix).resolve(), Path(sys.prefix).absolute(),
                 Path(os.path.realpath(self.python)).parent}
        roots = sorted(r for r in roots if not any(p != r and p in r.parents for p in roots))
        args, made = [], set()
        for root in roots:
            if root == Path("/usr") or Path("/usr") in root.parents:
                continue
            for parent in reversed(root.parents[:-1]):
                if parent not in made:
                    made.add(parent)
                    args += ["--perms", "0755", "--dir", f"{jail}{parent}"]
            args += ["--ro-bind", str(root), f"{jail}{root}"]
        return args

    def tree(self, limits, jail, own_mount=False):
        """bwrap's arguments for the sandbox's file tree under ``jail``: system folders, /tmp, the font list,
        the interpreter, the staged packages at PUBLIC, an empty /scratch (see :func:`system_mounts`)."""
        # /tmp's tmpfs comes first: an interpreter or virtual environment living under /tmp (a CI clone)
        # is then bound on top of it instead of being hidden by it.
        return [*(system_mounts(devices=False) if jail else []), *system_mounts(jail, own_mount=own_mount),
                "--perms", "01777", "--size", str(limits.tmp_size), "--tmpfs", f"{jail}/tmp",
                *self.font_cache_mount(jail),
                *self.python_mounts(jail),
                "--perms", "0755", "--dir", f"{jail}/opt", "--ro-bind", str(self.public_dir), f"{jail}{PUBLIC}",
                "--perms", "01777", "--size", str(limits.scratch_size), "--tmpfs", f"{jail}{SCRATCH}"]

    def command(self, argv, scratch_dir, limits, channel_fd, status_fd, seccomp_fd=None):
        """The full bwrap command line for ``argv`` (python -> this interpreter); ``seccomp_fd``: a pipe
        holding the system-call filter (see :mod:`.seccomp`), or None for none."""
        argv = [self.python if i == 0 and a == "python" else a.replace(CHANNEL, str(channel_fd))
                for i, a in enumerate(argv)]
        # As root, the sandbox's tree is built in JAIL and the command chrooted there; the root itself
        # holds the system folders only, for prlimit and chroot.
        jail = JAIL if self.as_root else ""
        args = [self.bwrap, *self.tree(limits, jail)]
        for entry in sorted(Path(scratch_dir).absolute().iterdir()):
            if entry.name != channel.OUT_DIR:
                args += ["--ro-bind", str(entry), f"{jail}{SCRATCH}/{entry.name}"]
        args += [*namespace_args(self.as_root), "--chdir", f"{jail}{SCRATCH}", "--json-status-fd", str(status_fd),
                 *(["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []), "--clearenv"]
        for name, value in self.environment(limits, channel_fd).items():
            args += ["--setenv", name, value]
        if not self.as_root:
            args += ["--uid", str(limits.uid), "--gid", str(limits.uid)]
        args += ["--", *self.limit_prefix(limits)]
        if self.as_root:
            args += [tool_path("chroot"), JAIL, "env", f"--chdir={SCRATCH}",
                     "setpriv", f"--reuid={limits.uid}", f"--regid={limits.uid}", "--clear-groups",
                     "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", "--"]
        return args + argv

    def font_cache_mount(self, jail):
        """A writable MPLCONFIGDIR holding the staged font list, read-only (see write_font_cache)."""
        if self.font_cache is None:
            return []
        folder = f"{jail}{MPLCONFIGDIR}"
        return ["--perms", "01777", "--dir", folder, "--ro-bind", str(self.font_cache),
                f"{folder}/{self.font_cache.name}"]

    def environment(self, limits, channel_fd):
        threads = str(limits.threads)
        return {"PATH": f"{Path(self.python).parent}:/usr/local/bin:/usr/bin:/bin", "HOME": SCRATCH,
                "USER": "student", "LOGNAME": "student", "LANG": "C.UTF-8", "TMPDIR": "/tmp",
                "PYTHONPATH": PUBLIC, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0",
                "PYTHONNOUSERSITE": "1", "MPLBACKEND": "Agg", "MPLCONFIGDIR": MPLCONFIGDIR,
                "XDG_CACHE_HOME": "/tmp/cache", "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads,
                "OPENBLAS_NUM_THREADS": threads, "MALLOC_ARENA_MAX": "2", "ATTNKIT_SANDBOX": "1",
                "ATTNKIT_CHANNEL_FD": str(channel_fd)}

    @staticmethod
    def limit_prefix(limits):
        """prlimit, run inside the sandbox: after bwrap made the user namespace (the counts start there)."""
        return ["prlimit", f"--as={limits.memory}", f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 5}",
                f"--nproc={limits.processes}", f"--fsize={limits.file_size}", f"--nofile={limits.open_files}",
                "--core=0", "--"]

    def launch(self, job, scratch_dir, limits=None):
        """The notebook runner's ``job`` (a :class:`~.notebook_run.RunnerJob`) over ``scratch_dir``: a SandboxResult."""
        return self.run(job.argv(), scratch_dir, limits)

    def run(self, argv, scratch_dir, limits=None):
        """Run ``argv`` in a sandbox over ``scratch_dir``; returns a SandboxResult, never raises for the command.

        ``argv[0] == "python"`` means this interpreter; the string "{channel}" in an argument becomes the
        number of the pipe whose framed messages (channel.send_file) end up in ``result.files``.
        """
        limits = limits or self.limits
        scratch_dir = Path(scratch_dir)
        for entry in scratch_dir.iterdir():            # the sandbox uid must be able to read them
            if entry.is_symlink():                     # bwrap would bind whatever it points to
                raise ValueError(f"scratch_dir: {entry} is a symbolic link")
            entry.chmod(entry.stat().st_mode | (0o555 if entry.is_dir() else 0o444))
        channel_r, channel_w = os.pipe()
        status_r, status_w = os.pipe()
        program = syscall_filter.program()
        seccomp = syscall_filter.pipe(program) if program else None
        child_fds = (channel_w, status_w) + ((seccomp,) if seccomp is not None else ())
        group = Cgroup.create(limits) if self.use_cgroups else None
        command = self.command(argv, scratch_dir, limits, channel_w, status_w, seccomp)
        start = time.monotonic()
        try:
            process = subprocess.Popen(
                (group.enter_command() if group else []) + command, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=child_fds,
                start_new_session=True, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        except OSError as error:
            for fd in (channel_r, status_r) + child_fds:
                os.close(fd)
            if group:
                group.remove()
            return SandboxResult(False, reason=reasons.not_started(str(error)))
        for fd in child_fds:
            os.close(fd)
        result = None
        try:
            result = self.watch(process, channel_r, status_r, limits, start)
        finally:
            finish(result, group, limits)
        result.seccomp = seccomp is not None
        return result

    def watch(self, process, channel_r, status_r, limits, start):
        """Collect output, pipe and status until the sandbox ends; kill it at a limit."""
        streams = {process.stdout.fileno(): "stdout", process.stderr.fileno(): "stderr",
                   channel_r: "channel", status_r: "status"}
        waited = {}

        def ended():
            pid, status = os.waitpid(process.pid, os.WNOHANG)
            if pid:
                waited["status"] = status
            return bool(pid)

        result, data = collect(streams, ended, lambda data: kill_group(process, data["status"]), limits, start)
        for fd in (channel_r, status_r):
            os.close(fd)
        process.stdout.close()
        process.stderr.close()
        process.returncode = os.waitstatus_to_exitcode(waited["status"])
        wait_for_namespace_end(status_events(data["status"]).get("child-pid"))
        result.seconds = round(time.monotonic() - start, 3)
        record_exit(result, process.returncode, data["status"], limits)
        return result

    def close(self):
        """Nothing to end: each run is a process of its own (the warm launcher's close ends its zygote)."""


def collect(streams, ended, kill, limits, start):
    """Read a sandbox's pipes ``streams`` ({fd: name}) until ``ended()`` says it has ended and they are closed
    (or 2 s after it ended: a straggler may hold one open); ``kill(data)`` it at the wall clock or past the
    output or channel limit (``data``: what was read so far, by stream). Returns (SandboxResult with its flags,
    stdout, stderr and files, {name: data})."""
    data = {name: bytearray() for name in streams.values()}
    result = SandboxResult(True)
    selector = selectors.DefaultSelector()
    for fd in streams:
        os.set_blocking(fd, False)
        selector.register(fd, selectors.EVENT_READ)
    deadline, exited_at = start + limits.wall_seconds, None
    while exited_at is None or selector.get_map():
        now = time.monotonic()
        if now > deadline and exited_at is None and not result.timed_out:
            result.timed_out = True
            kill(data)
        if exited_at is None:
            exited_at = now if ended() else None
        elif now > exited_at + 2:
            break                                  # a straggler holds a pipe open: stop listening
        if not selector.get_map():
            time.sleep(0.02)
        for key, _ in selector.select(timeout=0.05) if selector.get_map() else ():
            try:
                chunk = os.read(key.fd, 1 << 16)
            except BlockingIOError:
                continue
            if not chunk:
                selector.unregister(key.fd)
                continue
            name = streams[key.fd]
            data[name] += chunk
            if name in ("stdout", "stderr") and len(data["stdout"]) + len(data["stderr"]) > limits.output:
                result.output_exceeded = True
                selector.unregister(key.fd)
                kill(data)
            elif name == "channel" and len(data["channel"]) > limits.channel:
                result.channel_exceeded = True
                selector.unregister(key.fd)
                kill(data)
    selector.close()
    result.stdout, result.stderr = bytes(data["stdout"][:limits.output]), bytes(data["stderr"][:limits.output])
    result.files, _ = channel.parse_channel(bytes(data["channel"][:limits.channel]))
    return result, data


def finish(result, group, limits):
    """After a run: the cgroup's verdict on memory and its CPU accounting into ``result``, then the group removed."""
    oom_killed = group.oom_killed() if group else False
    cpu = group.cpu_seconds() if group else None
    if group:
        group.remove()
    if result is None:
        return
    result.oom_killed, result.cgroup, result.cpu_seconds = oom_killed, group.version if group else None, cpu
    if result.oom_killed and not result.timed_out:
        result.reason = reasons.out_of_memory(result, limits)


def kill_group(process, status):
    """SIGKILL bwrap's process group and the sandbox's init: every process of its PID namespace dies with it."""
    for kill, target in ((os.killpg, process.pid), (os.kill, status_events(status).get("child-pid"))):
        try:
            if isinstance(target, int) and target > 1:
                kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def wait_for_namespace_end(init_pid, timeout=5.0):
    """Wait (briefly) until the sandbox's init is gone or a zombie: by then its PID namespace is empty.

    The kernel kills a PID namespace's processes when its init ends, but asynchronously: without this
    wait a killed sandbox's processes can outlive :meth:`Sandbox.run` by some milliseconds.
    """
    if not isinstance(init_pid, int) or init_pid <= 1:
        return
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            state = Path(f"/proc/{init_pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.01)


def status_events(status):
    """bwrap's --json-status-fd messages merged into one dict ('child-pid', 'exit-code', ...)."""
    events = {}
    for line in bytes(status).decode("utf-8", "replace").replace("}{", "}\n{").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.update(event)
    return events


def record_exit(result, returncode, status, limits):
    """Fill exit_code, signal, started and reason from bwrap's JSON status and exit status."""
    events = status_events(status)
    result.started = "child-pid" in events
    code = events.get("exit-code")
    if code is None and result.started and returncode is not None and returncode >= 0:
        code = returncode
    result.exit_code = code
    if code is not None and 128 < code < 128 + signal.NSIG:      # 255 is os._exit(255), not a signal 127
        result.signal = code - 128
    result.reason = reasons.exit_reason(result, limits)

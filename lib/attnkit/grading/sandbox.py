"""Run untrusted code (a student's notebook) in a bubblewrap sandbox with resource limits.

What the sandboxed process sees: read-only /usr (and the /bin, /lib symlinks), a few files of /etc,
the Python installation and virtual environment this process runs on (at their own paths), a staged
PUBLIC copy of attnkit at /opt/attnkit (no attnkit.solutions, none of the nbgrader side of
attnkit.grading; see :func:`stage_public_package`), the files of its scratch folder read-only under
/scratch, and two size-capped tmpfs folders it may write: /scratch (its working folder and HOME) and
/tmp. Not the repository, not the course folder, not the gradebook, not another submission, no
network (own network namespace: loopback only), no other process (own PID namespace), no host file it
could write: whatever it wants the grader to read it sends over a pipe (see
:mod:`attnkit.grading.exchange`), and the parent writes those files into SCRATCH/out itself.

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
``limits.uid`` with no capabilities, no supplementary groups and no_new_privs. The chroot is what keeps
the sandbox from making user namespaces of its own (the kernel refuses CLONE_NEWUSER to a chrooted
process, EPERM): in one it would hold every capability, mount file systems and build namespaces the
limits above do not follow. Run as another user, bwrap makes a user namespace instead (unprivileged
user namespaces must be enabled), with ``--disable-userns`` for the same reason, and prlimit runs
inside it, where the count starts.

System calls (x86_64 only): bwrap installs a seccomp filter (:func:`seccomp_program`) just before it
runs the command, so every process of the sandbox lives under it. It refuses with EPERM the calls a
grading sandbox never needs and that widen what a hostile notebook can reach in the kernel: ptrace and
process_vm_readv/writev, namespaces (unshare, setns, clone with a namespace flag), mounts, keyrings,
bpf, perf_event_open, userfaultfd, io_uring, kernel modules, kexec, reboot, swap, acct,
open_by_handle_at; clone3 answers ENOSYS so that the C library falls back to clone, whose flags a
classic filter can read. On another architecture no filter is installed and a notice is logged once.

Setup on Debian/Ubuntu: ``apt-get install -y bubblewrap`` (setpriv and prlimit come with util-linux).
"""

import ast
import compileall
import errno
import functools
import json
import logging
import os
import selectors
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import exchange, runner

log = logging.getLogger(__name__)

GiB, MiB = 2**30, 2**20
SCRATCH = "/scratch"                 # the scratch folder inside the sandbox
MPLCONFIGDIR = "/tmp/matplotlib"      # matplotlib's cache folder inside the sandbox
JAIL = "/sandbox"                    # run as root: where bwrap builds the tree the command is chrooted into
PUBLIC = "/opt/attnkit"              # the staged public package inside the sandbox (on PYTHONPATH)
CHANNEL = "{channel}"                # in an argv, replaced by the number of the pipe to the parent
SETUP = "apt-get install -y bubblewrap"
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "alternatives", "fonts")
SYSTEM_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
# Modules of attnkit.grading the sandbox needs; the rest drive nbgrader and the gradebook.
SANDBOX_MODULES = ("exchange.py", "runner.py", "probes.py")
FONT_CACHE = "_matplotlib"           # in the staged folder: matplotlib's font list, bound into MPLCONFIGDIR
FORBIDDEN_IMPORTS = ("attnkit.solutions", "nbgrader", "nbformat", "nbclient", "nbconvert", "sqlalchemy")


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed run (bytes, seconds, counts)."""

    memory: int = 3 * GiB            # RLIMIT_AS of each process: the reference notebooks peak at 0.8-0.9 GiB,
                                     # the PS2 memory probe needs < 4 GiB (judges.MEMORY_LENGTH)
    total_memory: int = 4 * GiB      # all its processes and tmpfs files together (a cgroup, where writable)
    cpu_seconds: int = 300           # RLIMIT_CPU of each process: SIGXCPU, then SIGKILL 5 s later
    wall_seconds: float = 300.0      # the whole run, enforced by the parent (kills the process tree)
    processes: int = 64              # RLIMIT_NPROC of the sandbox uid, and the cgroup's pids.max: processes
                                     # plus threads (a notebook with torch on one thread uses 2)
    file_size: int = 64 * MiB        # RLIMIT_FSIZE: the largest file it may write
    open_files: int = 256            # RLIMIT_NOFILE
    output: int = 1 * MiB            # stdout + stderr of the whole run; past it the run is stopped
    channel: int = 160 * MiB         # bytes sent to the parent on the pipe; past it the run is stopped
    scratch_size: int = 256 * MiB    # tmpfs of /scratch
    tmp_size: int = 256 * MiB        # tmpfs of /tmp
    threads: int = 1                 # OMP/MKL/OpenBLAS threads: the pool runs one sandbox per core
    uid: int = 65534                 # give each concurrent sandbox its own uid (see worker_uid)


def worker_uid(slot):
    """A uid of its own for pool worker ``slot``: RLIMIT_NPROC counts every process of a uid together."""
    return 61000 + int(slot)


@dataclass
class SandboxResult:
    """How a sandboxed command ended. ``reason`` is one line when it did not end normally, else None."""

    started: bool
    exit_code: int = None            # the command's exit status (128 + N when signal N ended it)
    signal: int = None               # that signal N, if any
    timed_out: bool = False          # the parent's wall clock ran out and it killed the sandbox
    output_exceeded: bool = False    # stdout + stderr went past limits.output; the sandbox was killed
    channel_exceeded: bool = False
    oom_killed: bool = False         # the cgroup's memory limit was hit and the kernel killed a process
    cgroup: str = None               # "v1" or "v2" when a cgroup capped the whole sandbox, else None
    seccomp: bool = False            # whether the system-call filter was installed (x86_64 only)
    stdout: bytes = b""              # the first limits.output bytes
    stderr: bytes = b""
    files: dict = field(default_factory=dict)    # {name: bytes} the command sent on the pipe
    channel_problem: str = None
    seconds: float = 0.0
    reason: str = None

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
    program = seccomp_program()
    seccomp = program_pipe(program) if program else None
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
        detail = exchange.clip_message(done.stderr.decode("utf-8", "replace")) or f"exit status {done.returncode}"
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


# --- the public package --------------------------------------------------------------------------------------

def stage_public_package(dest, source=None):
    """Copy the public part of attnkit (``source``, default this installation) to ``dest``/attnkit.

    Leaves out attnkit.solutions, every subpackage but grading, top-level modules importing nbgrader,
    and of attnkit.grading all but :data:`SANDBOX_MODULES`, under a new ``__init__`` that imports
    nothing. Raises RuntimeError when a staged module imports one of :data:`FORBIDDEN_IMPORTS` (e.g. a
    probes module importing the reference solutions). Returns ``dest``, the folder to put on PYTHONPATH;
    do it once per batch.

    Two things only save time: the modules are compiled (the sandbox, whose /opt is read-only and which
    writes no bytecode, would compile them again in every run), and matplotlib's font list is written to
    ``dest``/FONT_CACHE (see :func:`write_font_cache`).
    """
    source = Path(source) if source else Path(__file__).resolve().parents[1]
    dest = Path(dest)
    target = dest / "attnkit"
    if target.exists():
        shutil.rmtree(target)
    (target / "grading").mkdir(parents=True)
    for path in sorted(source.glob("*.py")):
        if not forbidden_imports(path):
            shutil.copyfile(path, target / path.name)
    (target / "grading" / "__init__.py").write_text(
        '"""The part of the grading package that runs inside the sandbox (staged copy)."""\n', encoding="utf-8")
    for name in SANDBOX_MODULES:
        if (source / "grading" / name).is_file():
            shutil.copyfile(source / "grading" / name, target / "grading" / name)
    for path in sorted(target.rglob("*.py")):
        bad = forbidden_imports(path)
        if bad:
            raise RuntimeError(f"source: staged module {path.relative_to(dest)} imports {', '.join(bad)}, "
                               f"which must never reach the sandbox")
        path.chmod(0o644)
    compileall.compile_dir(str(target), quiet=1, force=True)     # this interpreter's bytecode, as the sandbox's
    for path in target.rglob("*.pyc"):
        path.chmod(0o644)
    for folder in (dest, *[p for p in target.rglob("*") if p.is_dir()], target):
        folder.chmod(0o755)
    write_font_cache(dest / FONT_CACHE)
    return dest


def write_font_cache(folder):
    """matplotlib's font list (fontlist-vNNN.json, as matplotlib caches it) in ``folder``, or nothing.

    Each sandbox starts with an empty MPLCONFIGDIR, where matplotlib would scan the fonts and write this
    file again (about 0.1 s of CPU per submission); the sandbox gets this copy read-only there instead.
    The list is this process's (fonts under /usr and matplotlib's own, at the same paths in the sandbox).
    """
    try:
        from matplotlib import font_manager
        folder.mkdir(exist_ok=True)
        folder.chmod(0o755)
        path = folder / f"fontlist-v{font_manager.FontManager.__version__}.json"
        font_manager.json_dump(font_manager.fontManager, path)
        path.chmod(0o644)
        return path
    except Exception as error:  # noqa: BLE001 - only time is at stake: each sandbox builds its own list
        log.info("no matplotlib font list for the sandbox: %s", error)
        return None


def forbidden_imports(path):
    """Names from FORBIDDEN_IMPORTS that the module at ``path`` (inside an attnkit folder) imports."""
    parts = Path(path).resolve().parts
    top = len(parts) - 1 - parts[::-1].index("attnkit") if "attnkit" in parts else len(parts) - 1
    package = list(parts[top:-1])                 # ['attnkit'] or ['attnkit', 'grading']
    names = set()
    for node in ast.walk(ast.parse(Path(path).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1] + [node.module or ""]) if node.level \
                else node.module or ""
            names.add(base.strip("."))
            names.update(f"{base.strip('.')}.{alias.name}" for alias in node.names)
    return sorted({bad for bad in FORBIDDEN_IMPORTS for name in names if name == bad or name.startswith(bad + ".")})


# --- the system-call filter ------------------------------------------------------------------------------------

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000          # x32 ABI calls: same arch, other numbers; refused as a whole
# x86_64 numbers (arch/x86/entry/syscalls/syscall_64.tbl) of the calls refused with EPERM
DENIED_X86_64 = {
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
    "unshare": 272, "setns": 308,
    "mount": 165, "umount2": 166, "pivot_root": 155, "open_tree": 428, "move_mount": 429, "fsopen": 430,
    "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    "add_key": 248, "request_key": 249, "keyctl": 250,
    "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "init_module": 175, "finit_module": 313, "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320,
    "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163, "open_by_handle_at": 304,
}
CLONE_X86_64, CLONE3_X86_64 = 56, 435
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET (CLONE_NEWTIME is clone3/unshare only)
CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
# classic BPF: opcodes and the offsets of struct seccomp_data {int nr; u32 arch; u64 ip; u64 args[6]}
LD_ABS, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06      # BPF_LD|W|ABS, BPF_JMP|JEQ|JGE|JSET|K, BPF_RET|K
NR, ARCH, ARG0_LOW = 0, 4, 16                                   # little-endian: the low half of args[0] first
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000


def bpf(code, k, jt=0, jf=0):
    """One struct sock_filter {u16 code; u8 jt; u8 jf; u32 k}, in this machine's byte order."""
    return struct.pack("=HBBI", code, jt, jf, k)


def this_machine():
    """The architecture the filter is built for: the kernel's (os.uname), if this interpreter is 64-bit."""
    return os.uname().machine if struct.calcsize("P") == 8 else f"{os.uname().machine} (32-bit interpreter)"


@functools.lru_cache(maxsize=None)
def seccomp_program():
    """The filter as bwrap's --seccomp reads it (the sock_filter array, 8 bytes each), or None.

    None, with a notice logged once, unless this is a 64-bit interpreter on x86_64: the numbers above
    are x86_64's, and a filter built for one architecture would refuse, or let through, the wrong calls
    on another.
    """
    machine = this_machine()
    if machine != "x86_64":
        log.warning("grading sandbox: no system-call filter on %s (it is written for x86_64); "
                    "the other limits still apply", machine)
        return None
    deny, enosys = RET_ERRNO | errno.EPERM, RET_ERRNO | errno.ENOSYS
    program = [bpf(LD_ABS, ARCH), bpf(JEQ, AUDIT_ARCH_X86_64, jt=1), bpf(RET, deny),   # i386 / other ABIs
               bpf(LD_ABS, NR), bpf(JGE, X32_SYSCALL_BIT, jf=1), bpf(RET, deny)]      # x32 ABI
    for number in sorted(DENIED_X86_64.values()):
        program += [bpf(JEQ, number, jf=1), bpf(RET, deny)]
    program += [bpf(JEQ, CLONE3_X86_64, jf=1), bpf(RET, enosys),
                bpf(JEQ, CLONE_X86_64, jf=4), bpf(LD_ABS, ARG0_LOW), bpf(JSET, CLONE_NAMESPACES, jf=1),
                bpf(RET, deny), bpf(RET, RET_ALLOW),
                bpf(RET, RET_ALLOW)]
    return b"".join(program)


def program_pipe(program):
    """The read end of a pipe holding ``program`` (whole, and closed for writing), to pass to bwrap."""
    read, write = os.pipe()
    try:
        os.write(write, program)              # a few hundred bytes: far below a pipe's buffer
    finally:
        os.close(write)
    return read


# --- the bwrap command ----------------------------------------------------------------------------------------

def system_mounts(root="", devices=True):
    """Read-only /usr, the /bin and /lib links (or folders) and the few /etc files programs need, and
    (``devices``) a /dev and a /proc, under ``root`` (a folder of the sandbox, e.g. JAIL)."""
    args = (["--perms", "0755", "--dir", root] if root else []) + ["--ro-bind", "/usr", f"{root}/usr"]
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
    """Runs commands in bubblewrap sandboxes that see ``public_dir`` (from stage_public_package) as /opt/attnkit."""

    def __init__(self, public_dir, limits=None, python=None, cgroups=None):
        """``cgroups``: cap the sandbox's memory and process count as a whole with a cgroup (None: where
        this process may create cgroups, i.e. root on cgroup v1 or a writable cgroup v2 hierarchy)."""
        check_available()
        self.public_dir = Path(public_dir).resolve()
        if not (self.public_dir / "attnkit" / "__init__.py").is_file():
            raise FileNotFoundError(f"public_dir: {self.public_dir} holds no attnkit package; "
                                    f"make it with stage_public_package()")
        if (self.public_dir / "attnkit" / "solutions").exists():
            raise ValueError(f"public_dir: {self.public_dir} holds attnkit/solutions; stage it again")
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

    def command(self, argv, scratch_dir, limits, channel_fd, status_fd, seccomp_fd=None):
        """The full bwrap command line for ``argv`` (python -> this interpreter); ``seccomp_fd``: a pipe
        holding the system-call filter (see :func:`seccomp_program`), or None for none."""
        argv = [self.python if i == 0 and a == "python" else a.replace(CHANNEL, str(channel_fd))
                for i, a in enumerate(argv)]
        # As root, the sandbox's tree is built in JAIL and the command chrooted there; the root itself
        # holds the system folders only, for prlimit and chroot.
        jail = JAIL if self.as_root else ""
        # /tmp's tmpfs comes first: an interpreter or virtual environment living under /tmp (a CI clone)
        # is then bound on top of it instead of being hidden by it.
        args = [self.bwrap, *(system_mounts(devices=False) if jail else []), *system_mounts(jail),
                "--perms", "01777", "--size", str(limits.tmp_size), "--tmpfs", f"{jail}/tmp",
                *self.font_cache_mount(jail),
                *self.python_mounts(jail),
                "--perms", "0755", "--dir", f"{jail}/opt", "--ro-bind", str(self.public_dir), f"{jail}{PUBLIC}",
                "--perms", "01777", "--size", str(limits.scratch_size), "--tmpfs", f"{jail}{SCRATCH}"]
        for entry in sorted(Path(scratch_dir).absolute().iterdir()):
            if entry.name != exchange.OUT_DIR:
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

    def run(self, argv, scratch_dir, limits=None):
        """Run ``argv`` in a sandbox over ``scratch_dir``; returns a SandboxResult, never raises for the command.

        ``argv[0] == "python"`` means this interpreter; the string "{channel}" in an argument becomes the
        number of the pipe whose framed messages (exchange.send_file) end up in ``result.files``.
        """
        limits = limits or self.limits
        scratch_dir = Path(scratch_dir)
        for entry in scratch_dir.iterdir():            # the sandbox uid must be able to read them
            if entry.is_symlink():                     # bwrap would bind whatever it points to
                raise ValueError(f"scratch_dir: {entry} is a symbolic link")
            entry.chmod(entry.stat().st_mode | (0o555 if entry.is_dir() else 0o444))
        channel_r, channel_w = os.pipe()
        status_r, status_w = os.pipe()
        program = seccomp_program()
        seccomp = program_pipe(program) if program else None
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
            return SandboxResult(False, reason=f"the sandbox could not start: {error}")
        for fd in child_fds:
            os.close(fd)
        try:
            result = self.watch(process, channel_r, status_r, limits, start)
        finally:
            oom_killed = group.oom_killed() if group else False
            if group:
                group.remove()
        result.oom_killed, result.cgroup = oom_killed, group.version if group else None
        result.seccomp = seccomp is not None
        if result.oom_killed and not result.timed_out:
            who = "killed" if result.exit_code else "one of its processes was killed"
            result.reason = f"{who}: its processes together went over the memory limit of {human(limits.total_memory)}"
        return result

    def watch(self, process, channel_r, status_r, limits, start):
        """Collect output, pipe and status until the sandbox ends; kill it at a limit."""
        streams = {process.stdout.fileno(): "stdout", process.stderr.fileno(): "stderr",
                   channel_r: "channel", status_r: "status"}
        data = {name: bytearray() for name in streams.values()}
        result = SandboxResult(True)
        selector = selectors.DefaultSelector()
        for fd in streams:
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        deadline, exited_at, status = start + limits.wall_seconds, None, None
        while exited_at is None or selector.get_map():
            now = time.monotonic()
            if now > deadline and exited_at is None and not result.timed_out:
                result.timed_out = True
                kill_group(process, data["status"])
            if exited_at is None:
                pid, status = os.waitpid(process.pid, os.WNOHANG)
                exited_at = now if pid else None
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
                    kill_group(process, data["status"])
                elif name == "channel" and len(data["channel"]) > limits.channel:
                    result.channel_exceeded = True
                    selector.unregister(key.fd)
                    kill_group(process, data["status"])
        selector.close()
        for fd in (channel_r, status_r):
            os.close(fd)
        process.stdout.close()
        process.stderr.close()
        process.returncode = os.waitstatus_to_exitcode(status)
        wait_for_namespace_end(status_events(data["status"]).get("child-pid"))
        result.seconds = round(time.monotonic() - start, 3)
        result.stdout, result.stderr = bytes(data["stdout"][:limits.output]), bytes(data["stderr"][:limits.output])
        result.files, result.channel_problem = exchange.parse_channel(bytes(data["channel"][:limits.channel]))
        settle(result, process.returncode, data["status"], limits)
        return result


class Cgroup:
    """A throwaway cgroup holding one sandbox: memory (no swap) and process count of all its processes.

    RLIMIT_AS caps each process; only a cgroup caps their sum (a fork bomb whose children each allocate).
    cgroup v2 when /sys/fs/cgroup is a v2 hierarchy (groups under /sys/fs/cgroup/attnkit), else the v1
    memory and pids hierarchies, under this process's own groups. The bwrap command is started through
    ``sh -c 'echo $$ > cgroup.procs; exec bwrap ...'``, so every sandbox process is born inside.
    """

    ROOT = Path("/sys/fs/cgroup")
    counter = 0

    def __init__(self, version, folders):
        self.version, self.folders = version, folders

    @classmethod
    @functools.lru_cache(maxsize=None)
    def available(cls):
        group = cls.create(Limits())
        if group is None:
            return False
        group.remove()
        return True

    @classmethod
    def create(cls, limits):
        """A new cgroup with the limits applied, or None where cgroups cannot be made here."""
        cls.counter += 1
        name = f"sandbox-{os.getpid()}-{cls.counter}-{time.monotonic_ns()}"
        try:
            if (cls.ROOT / "cgroup.controllers").is_file():
                return cls.create_v2(name, limits)
            return cls.create_v1(name, limits)
        except OSError:
            return None

    @classmethod
    def create_v2(cls, name, limits):
        parent = cls.ROOT / "attnkit"
        if not parent.is_dir():
            parent.mkdir(exist_ok=True)
        if not {"memory", "pids"} <= set((parent / "cgroup.subtree_control").read_text().split()):
            (parent / "cgroup.subtree_control").write_text("+memory +pids")
        folder = parent / name
        folder.mkdir()
        group = cls("v2", [folder])
        try:
            (folder / "memory.max").write_text(str(limits.total_memory))
            (folder / "memory.swap.max").write_text("0")
            (folder / "pids.max").write_text(str(limits.processes + 2))     # + bwrap's two processes
        except OSError:
            group.remove()
            raise
        return group

    @classmethod
    def create_v1(cls, name, limits):
        own = {}
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(","):
                own[controller] = path.lstrip("/")
        if not {"memory", "pids"} <= own.keys():
            return None
        group = cls("v1", [])
        try:
            for controller in ("memory", "pids"):
                folder = cls.ROOT / controller / own[controller] / f"attnkit-{name}"
                folder.mkdir()
                group.folders.append(folder)
            memory, pids = group.folders
            (memory / "memory.limit_in_bytes").write_text(str(limits.total_memory))
            if (memory / "memory.memsw.limit_in_bytes").exists():
                (memory / "memory.memsw.limit_in_bytes").write_text(str(limits.total_memory))
            (memory / "memory.swappiness").write_text("0")
            (pids / "pids.max").write_text(str(limits.processes + 2))
        except OSError:
            group.remove()
            raise
        return group

    def enter_command(self):
        """Prefix to a command line: move the shell into every folder of this group, then exec the command."""
        script = 'while [ "$1" != -- ]; do echo $$ > "$1/cgroup.procs" || exit 125; shift; done; shift; exec "$@"'
        return ["/bin/sh", "-c", script, "sh", *map(str, self.folders), "--"]

    def oom_killed(self):
        """True when the kernel killed a process of this group for going over its memory limit."""
        name = "memory.events" if self.version == "v2" else "memory.oom_control"
        try:
            lines = (self.folders[0] / name).read_text().splitlines()
        except OSError:
            return False
        counts = dict(line.split()[:2] for line in lines if len(line.split()) >= 2)
        return int(counts.get("oom_kill", 0)) > 0

    def remove(self):
        """Delete the group's folders (they must be empty of processes; retried briefly)."""
        for folder in self.folders:
            for _ in range(100):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


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


def settle(result, returncode, status, limits):
    """Fill exit_code, signal, started and reason from bwrap's JSON status and exit status."""
    events = status_events(status)
    result.started = "child-pid" in events
    code = events.get("exit-code")
    if code is None and result.started and returncode is not None and returncode >= 0:
        code = returncode
    result.exit_code = code
    if code is not None and 128 < code < 128 + signal.NSIG:      # 255 is os._exit(255), not a signal 127
        result.signal = code - 128
    result.reason = exit_reason(result, limits)


SIGNAL_REASONS = {
    signal.SIGSEGV: "crashed: segmentation fault (SIGSEGV)",
    signal.SIGBUS: "crashed: bus error (SIGBUS)",
    signal.SIGILL: "crashed: illegal instruction (SIGILL)",
    signal.SIGFPE: "crashed: arithmetic error (SIGFPE)",
    signal.SIGABRT: "aborted (SIGABRT), often an allocation refused under the memory limit",
    signal.SIGXFSZ: "stopped: wrote a file over the size limit (SIGXFSZ)",
}


def exit_reason(result, limits):
    """One line for a run that did not end with exit status 0, else None."""
    if not result.started:
        detail = exchange.clip_message(result.stderr.decode("utf-8", "replace")) or "no detail"
        return f"the sandbox could not start: {detail}"
    if result.timed_out:
        return f"stopped at the wall-clock limit of {limits.wall_seconds:g} s (an endless loop, or a blocked process?)"
    if result.output_exceeded:
        return f"stopped: wrote more than {human(limits.output)} to stdout/stderr outside the captured cells"
    if result.channel_exceeded:
        return f"stopped: sent more than {human(limits.channel)} of results"
    if result.exit_code == 0:
        return None
    if result.signal == signal.SIGXCPU:
        return f"stopped at the CPU-time limit of {limits.cpu_seconds} s (SIGXCPU)"
    if result.signal == signal.SIGKILL:
        return (f"killed (SIGKILL): the CPU-time limit of {limits.cpu_seconds} s (hard limit +5 s), "
                f"or the machine ran out of memory")
    if result.signal in SIGNAL_REASONS:
        return SIGNAL_REASONS[result.signal]
    if result.signal:
        try:
            return f"ended by signal {signal.Signals(result.signal).name}"
        except ValueError:                     # a real-time signal has no name of its own
            return f"ended by signal {result.signal}"
    if result.exit_code is None:
        return "ended without an exit status"
    return f"the process ended with exit status {result.exit_code} (os._exit?)"


def human(nbytes):
    return f"{nbytes / GiB:g} GiB" if nbytes >= GiB else f"{nbytes / MiB:g} MiB" if nbytes >= MiB else f"{nbytes} bytes"


# --- one notebook, end to end --------------------------------------------------------------------------------

@dataclass
class NotebookRun:
    """A notebook run in the sandbox: the runner's report (or one rebuilt from its progress), the reason."""

    report: dict
    reason: str
    result: SandboxResult
    out_dir: Path


def run_notebook(sandbox, notebook, scratch_dir, assignment=None, inputs=None, limits=None, probes=None,
                 expected=None, cell_timeout=runner.CELL_TIMEOUT, skip=(), grace=runner.STUCK_GRACE):
    """Run ``notebook`` (a path) with the runner in ``sandbox``; files land in ``scratch_dir``/out.

    ``inputs``: the probe inputs (exchange.write_inputs); ``expected``: the release's {grade_id: cell_type}
    (runner.expected_cells) for remarks on deleted and retyped cells; ``probes``: a module other than
    attnkit.grading.probes (it must be importable in the sandbox); ``skip``: cell numbers not to run;
    ``grace``: seconds a cell may ignore its timeout before the runner ends itself.
    """
    if Path(notebook).is_symlink():
        raise ValueError(f"notebook: {notebook} is a symbolic link; copy the submission's own file")
    scratch_dir = Path(scratch_dir)
    scratch_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(notebook, scratch_dir / runner.NOTEBOOK)
    if inputs is not None:
        exchange.write_inputs(scratch_dir, inputs)
    if expected is not None:
        (scratch_dir / runner.EXPECTED).write_text(json.dumps({"cells": expected}), encoding="utf-8")
    argv = ["python", "-m", "attnkit.grading.runner", SCRATCH, "--channel", CHANNEL,
            "--cell-timeout", str(cell_timeout), "--grace", str(grace), "--reap"]
    if assignment:
        argv += ["--assignment", assignment]
    if probes:
        argv += ["--probes", probes]
    if skip:
        argv += ["--skip", ",".join(str(n) for n in skip)]
    limits = limits or sandbox.limits
    result = sandbox.run(argv, scratch_dir, limits)
    out_dir = scratch_dir / exchange.OUT_DIR
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir()
    for name, data in result.files.items():
        (out_dir / name).write_bytes(data)
    report = exchange.read_report(out_dir) if exchange.REPORT_JSON in result.files else {}
    progress = exchange.decode_jsonl(result.files.get(exchange.PROGRESS_JSONL, b""))
    if not report:
        report = partial_report(progress, assignment, exchange.REPORT_JSON in result.files)
    reason = combined_reason(result, report, progress, cell_timeout)
    return NotebookRun(report, reason, result, out_dir)


def partial_report(progress, assignment, unreadable=False):
    """What the progress messages say, for a run that ended before the runner wrote a readable report."""
    cells = [event["cell"] for event in progress
             if event.get("event") == "done" and isinstance(event.get("cell"), dict)]
    return {"version": 1, "status": "unreadable-report" if unreadable else "crashed", "reason": None,
            "remarks": [], "cells": cells, "probes": {}, "assignment": assignment}


def current_step(progress):
    """'cell 4 ('grade_id')' or 'probe NAME': what was running when the messages stopped, or None."""
    step = None
    for event in progress:
        kind = event.get("event")
        if kind == "stuck":
            return exchange.clip_message(event.get("step"), 120)
        if kind == "start":
            if "probe" in event:
                step = f"probe {event['probe']}"
            else:
                step = f"cell {event.get('cell')}" + (f" ('{event['grade_id']}')" if event.get("grade_id") else "")
            step = exchange.clip_message(step, 120)         # the notebook chose the grade_id
        elif kind == "done":
            step = None
    return step


def combined_reason(result, report, progress, cell_timeout):
    """One line: the sandbox's reason with the step it happened in, else the runner's own reason."""
    step = current_step(progress)
    stuck = any(event.get("event") == "stuck" for event in progress)
    if stuck and result.exit_code == runner.EXIT_STUCK and not result.timed_out:
        return f"{step} ran over the {cell_timeout:g} s limit and ignored the interrupt; the run was stopped"
    if result.reason:
        where = f" during {step}" if step else ""
        if result.exit_code not in (None, 0) or result.timed_out or result.output_exceeded:
            return f"{result.reason}{where}"
        return result.reason
    if report.get("status") == "crashed":
        where = f" during {step}" if step else ""
        return f"the run ended before the grader's report was written{where}"
    if report.get("status") == "unreadable-report":
        return f"the grader's report was unreadable (not JSON, or over {human(exchange.MAX_REPORT_BYTES)})"
    reason = report.get("reason")
    return exchange.clip_message(reason) if isinstance(reason, str) else None


@functools.lru_cache(maxsize=None)
def default_public_dir():
    """A staged public package in a temporary folder, made once per process (for run_sandboxed)."""
    folder = tempfile.mkdtemp(prefix="attnkit-public-")
    os.chmod(folder, 0o755)
    return stage_public_package(folder)


def run_sandboxed(argv, scratch_dir, limits=None, public_dir=None):
    """Run ``argv`` in a sandbox over ``scratch_dir`` with ``limits`` (see :meth:`Sandbox.run`)."""
    return Sandbox(public_dir or default_public_dir(), limits).run(argv, scratch_dir, limits)


__all__ = ["Limits", "NotebookRun", "Sandbox", "SandboxResult", "SandboxUnavailable", "available",
           "check_available", "run_notebook", "run_sandboxed", "stage_public_package", "unavailable_reason",
           "worker_uid"]

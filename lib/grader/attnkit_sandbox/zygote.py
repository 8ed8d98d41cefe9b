"""The warm start of the grading sandbox: a process that imported what every run needs, forking one isolated
child per submission.

    python -m attnkit_sandbox.zygote --control FD --seccomp FD [--cgroups FD,FD,...]

Started by the grader (:mod:`attnkit_grader.isolation.warm`) in a bubblewrap sandbox of its own, as root in its
namespaces (PID, network, IPC, UTS, mount; a grader that is not root: as its uid in a user namespace, which the
jobs keep, :mod:`attnkit_grader.isolation.userns`), chrooted into the jail (the tree every run sees: read-only
system, interpreter and staged packages), with the capabilities the per-job steps below need and no filter. It
imports torch, numpy, matplotlib, the student package, the runner and every staged assignment's probes, and
computes nothing (a fork after torch's threads start deadlocks), never runs student code nor reads a job's output.

For each job (a message on the control socket: the runner's arguments, a uid, the limits, the job's cgroups,
the scratch files as bytes, and the job's stdout, stderr and channel pipes as file descriptors) it forks:

C  (root, in the zygote's namespaces) unshares a mount, PID, IPC, UTS and network namespace of the job's
   own (its loopback up); makes every mount private; mounts fresh size-capped tmpfs on /scratch and /tmp
   (with matplotlib's font list, read-only, and binding back, read-only, whatever the jail had mounted below
   /tmp: an interpreter or virtual environment that lives there) and remounts the rest (/dev, the jail's own folders)
   read-only; writes the scratch files (root's, read-only); joins the job's cgroups; forks G, reports G's
   pid, and exits with G's status.
G  (PID 1 of the job's PID namespace) mounts that namespace's /proc, forks R, gives up its capabilities,
   reaps orphans and exits with R's status. When it exits the kernel kills every process left in the
   namespace, so nothing a job started outlives it.
R  the runner: a session of its own, only its three pipes open, the resource limits, no supplementary
   group, the job's uid and gid, an empty capability bounding set and no inheritable or ambient capability,
   no_new_privs, the system-call filter (last), the sandbox's environment; then
   :func:`attnkit_sandbox.runner.main`, as ``python -m attnkit_sandbox.runner`` runs it.

So each job gets afresh everything a job can change: its files (new tmpfs), its processes and their
namespace, System V IPC objects and message queues (new IPC namespace), sockets and the loopback (new
network namespace), environment, signal handlers and every module's state (a copy-on-write image of the
zygote, which no job has touched). What jobs share is the zygote's memory image as it was before any job
ran, and the read-only file tree. A job cannot reach the zygote: it lives outside the job's PID namespace
(no pid to signal, trace or read through /proc), the filter refuses ptrace and process_vm_* anyway, the
zygote's control socket and cgroup folders are closed before R starts, and a job's pipes lead to the
grader, not to the zygote. See the instructors' guide for the argument in full.

Protocol (both ways: one type byte, an 8-byte big-endian length, that many bytes of JSON or data; the job
message carries its three pipes as SCM_RIGHTS on its type byte): the zygote says R (ready) once, then per job
S (started: G's pid) and X (exit status), or E (error: the job did not start). The grader sends J (a job)
and, during a job, K (kill it now). The socket's end stops the zygote, killing the job it runs.
"""

import argparse
import ctypes
import fcntl
import importlib
import json
import os
import random
import re
import resource
import select
import signal
import socket
import stat
import struct
import sys
import threading

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = (0x00020000, 0x04000000, 0x08000000,
                                                                      0x20000000, 0x40000000)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = (
    1, 2, 4, 8, 32, 4096, 8192, 16384, 1 << 18)
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_SECCOMP, PR_SET_NO_NEW_PRIVS = 1, 4, 24, 22, 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
SECCOMP_MODE_FILTER, MNT_DETACH = 2, 2
SIOCSIFFLAGS, IFF_UP, IFF_LOOPBACK, IFF_RUNNING = 0x8914, 0x1, 0x8, 0x40
CAPABILITY_VERSION_3 = 0x20080522
SYS_CAPSET = {"x86_64": 126, "aarch64": 91}

SCRATCH, TMP, PROC, DEV = "/scratch", "/tmp", "/proc", "/dev"
MPLCONFIGDIR = "/tmp/matplotlib"
CHANNEL_FD = 3                     # where R finds its channel to the grader
JOB_FDS = 3                        # stdout, stderr, channel
SETUP_FAILED = 125                 # C or G could not isolate the job: it never ran
MAX_MESSAGE = 512 * 2**20
LENGTH = struct.Struct(">Q")

libc = ctypes.CDLL(None, use_errno=True)


class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint32)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def check(result, what):
    """Raise OSError naming ``what`` when a libc call returned -1."""
    if result == -1:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")
    return result


def mount(source, target, fstype, flags, data=None):
    encode = (lambda text: os.fsencode(text) if text is not None else None)
    check(libc.mount(encode(source), encode(target), encode(fstype), ctypes.c_ulong(flags), encode(data)),
          f"mount {target}")


def unmount(target):
    check(libc.umount2(target.encode(), MNT_DETACH), f"umount {target}")


def prctl(option, arg=0, what="prctl"):
    check(libc.prctl(option, ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)), what)


# --- the messages -------------------------------------------------------------------------------------------

def send(sock, kind, payload=b"", fds=()):
    """One message: ``kind`` (one byte), the length, ``payload``; ``fds`` ride on the type byte."""
    if fds:
        socket.send_fds(sock, [kind], list(fds))
    else:
        sock.sendall(kind)
    sock.sendall(LENGTH.pack(len(payload)) + payload)


def receive_exactly(sock, size):
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise EOFError("the control socket closed in the middle of a message")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def receive(sock, max_fds=0, limit=MAX_MESSAGE):
    """(kind, payload, fds) of the next message, or None at the socket's end. Never reads past the message,
    so the file descriptors of the next one are not lost."""
    if max_fds:
        data, fds, _, _ = socket.recv_fds(sock, 1, max_fds)
    else:
        data, fds = sock.recv(1), []
    if not data:
        return None
    size = LENGTH.unpack(receive_exactly(sock, LENGTH.size))[0]
    if size > limit:
        for fd in fds:
            os.close(fd)
        raise ValueError(f"a control message of {size} bytes, over {limit}")
    return data, receive_exactly(sock, size), fds


# --- warming up ---------------------------------------------------------------------------------------------

def warm_up():
    """Import what a run needs before the notebook's first cell, and nothing that starts a thread."""
    import numpy  # noqa: F401
    import torch  # noqa: F401
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401
    import attnkit  # noqa: F401
    from . import installed, probe_sets, runner  # noqa: F401
    names = []
    try:
        import attnkit_assignments
        names = installed.assignments(next(iter(attnkit_assignments.__path__)))
    except (ImportError, StopIteration):
        pass
    for name in names:
        probe_sets.probes_of(name)
    return names


def threads():
    """The number of threads of this process (the kernel's count: OpenMP's are invisible to ``threading``)."""
    return len(os.listdir("/proc/self/task"))


# --- one job ------------------------------------------------------------------------------------------------

def run_job(job, files, job_fds, report_fd, cgroup_dirs, program):
    """C: isolate the job (see the module's docstring), fork G, report its pid, exit with its status."""
    code = SETUP_FAILED
    try:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, "die with the zygote")
        check(libc.unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET), "unshare")
        mount(None, "/", None, MS_REC | MS_PRIVATE)
        loopback_up()
        limits = job["limits"]
        mount("tmpfs", SCRATCH, "tmpfs", MS_NOSUID | MS_NODEV, f"size={int(limits['scratch_size'])},mode=1777")
        font_cache = [name for name in os.listdir(MPLCONFIGDIR) if name.startswith("fontlist-")] \
            if os.path.isdir(MPLCONFIGDIR) else []
        keep = {}
        for name in font_cache:                       # read before a fresh /tmp hides it
            with open(os.path.join(MPLCONFIGDIR, name), "rb") as handle:
                keep[name] = handle.read()
        held = hold_mounts_below(TMP, skip=MPLCONFIGDIR)
        mount("tmpfs", TMP, "tmpfs", MS_NOSUID | MS_NODEV, f"size={int(limits['tmp_size'])},mode=1777")
        restore_mounts(held)
        os.mkdir(MPLCONFIGDIR)
        os.chmod(MPLCONFIGDIR, 0o1777)
        for name, data in keep.items():
            write_readonly(os.path.join(MPLCONFIGDIR, name), data)
        if os.path.isdir(DEV):
            mount(None, DEV, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC)
        for name, data in files.items():              # root's, and read-only like the cold sandbox's binds
            path = os.path.join(SCRATCH, name)
            write_readonly(path, data)
            mount(path, path, None, MS_BIND)
            mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID)    # the jail's own folders too
        for directory, leaf in job["cgroups"]:
            fd = os.open(f"{leaf}/cgroup.procs", os.O_WRONLY | os.O_NOFOLLOW, dir_fd=cgroup_dirs[directory])
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)
        for fd in cgroup_dirs:
            os.close(fd)
        init = os.fork()
        if init == 0:
            os.close(report_fd)
            init_process(job, job_fds, program)      # never returns
        for fd in job_fds:
            os.close(fd)
        os.write(report_fd, b"%d\n" % init)
        os.close(report_fd)
        _, status = os.waitpid(init, 0)
        code = os.waitstatus_to_exitcode(status)
        code = 128 - code if code < 0 else code
    except BaseException as error:  # noqa: B036 - nothing may escape a forked child
        say(job_fds[1], f"the warm sandbox could not isolate the job: {error}")
    os._exit(code)


def hold_mounts_below(folder, skip):
    """[(mount point, O_PATH descriptor)] for the outermost mounts strictly below ``folder`` but not below
    ``skip``: what a fresh tmpfs on ``folder`` would hide, such as an interpreter or a virtual environment
    that lives under /tmp (a checkout there), bound in by bubblewrap (see :func:`restore_mounts`)."""
    with open("/proc/self/mountinfo", "rb") as handle:       # field 5: the mount point, octal-escaped
        points = {os.fsdecode(re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m[1], 8)]), line.split()[4]))
                  for line in handle}
    inside = [p for p in points if p.startswith(folder + "/") and not (p + "/").startswith(skip + "/")]
    outer = sorted(p for p in inside if not any(p.startswith(q + "/") for q in inside))
    return [(point, os.open(point, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)) for point in outer]


def restore_mounts(held):
    """Bind each held mount back at its path, under the fresh tmpfs, read-only as bubblewrap bound it."""
    for point, fd in held:
        parts = point.strip("/").split("/")
        for depth in range(2, len(parts)):           # below the fresh /tmp, each folder open to the job's uid
            folder = "/" + "/".join(parts[:depth])
            if not os.path.isdir(folder):
                os.mkdir(folder)
                os.chmod(folder, 0o755)              # whatever the umask (the door's is 077)
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            os.mkdir(point)
            os.chmod(point, 0o755)
        else:
            os.close(os.open(point, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444))
        mount(f"/proc/self/fd/{fd}", point, None, MS_BIND | MS_REC)
        mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.close(fd)


def loopback_up():
    """Bring up the new network namespace's loopback, as bubblewrap does (and nothing else: no route out)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as handle:
        request = struct.pack("16sH14x", b"lo", IFF_UP | IFF_LOOPBACK | IFF_RUNNING)
        fcntl.ioctl(handle, SIOCSIFFLAGS, request)


def write_readonly(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444)
    try:
        os.fchmod(fd, 0o444)                          # whatever the umask (the door's is 077)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def say(fd, text):
    """A line on the job's stderr (``fd``), where the grader reads why a job did not start."""
    try:
        os.write(fd, (text + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


def init_process(job, job_fds, program):
    """G: PID 1 of the job's namespace; forks R, then only reaps."""
    code = SETUP_FAILED
    try:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, "die with C")
        prctl(PR_SET_DUMPABLE, 0, "undumpable")      # in a user namespace R has G's uid: no /proc/1/mem for it,
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # and no KeyboardInterrupt (the kernel drops it for a PID 1)
        mount("proc", TMP, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)    # in a user namespace: only while the
        unmount(PROC)                                # zygote's /proc is visible; then moved over it
        mount(TMP, PROC, None, MS_MOVE)
        for name in ("sys", "sysrq-trigger", "irq", "bus"):   # read-only, as bubblewrap leaves them
            path = f"{PROC}/{name}"
            if os.path.exists(path):
                mount(path, path, None, MS_BIND | MS_REC)
                mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
        runner = os.fork()
        if runner == 0:
            run_runner(job, job_fds, program)        # never returns
        for fd in job_fds:
            os.close(fd)
        drop_capabilities()
        while True:
            pid, status = os.wait()
            if pid == runner:
                code = os.waitstatus_to_exitcode(status)
                code = 128 - code if code < 0 else code
                break
    except BaseException as error:  # noqa: B036
        say(job_fds[1], f"the warm sandbox's init failed: {error}")
    os._exit(code)


def run_runner(job, job_fds, program):
    """R: the job's process, stripped of every privilege, then the runner."""
    try:
        os.setsid()
        stdin = os.open("/dev/null", os.O_RDONLY)
        for target, fd in zip((0, 1, 2, CHANNEL_FD), (stdin, *job_fds)):
            os.dup2(fd, target)
        os.closerange(CHANNEL_FD + 1, os.sysconf("SC_OPEN_MAX"))
        limits = job["limits"]
        cpu = int(limits["cpu_seconds"])
        for name, soft, hard in (("AS", limits["memory"], None), ("CPU", cpu, cpu + 5),
                                 ("NPROC", limits["processes"], None), ("FSIZE", limits["file_size"], None),
                                 ("NOFILE", limits["open_files"], None), ("CORE", 0, None)):
            value = int(soft)
            resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (value, int(hard) if hard else value))
        uid = int(job["uid"])
        if uid <= 0:
            raise ValueError(f"uid: expected an unprivileged uid, got {uid}")
        if job.get("groups", True):                   # refused in a user namespace (see isolation/userns.py)
            os.setgroups([])
        os.setresgid(uid, uid, uid)
        empty_bounding_set()
        os.setresuid(uid, uid, uid)
        drop_capabilities()
        prctl(PR_SET_DUMPABLE, 1, "dumpable")        # as after the exec of a cold start
        os.chdir(SCRATCH)
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in job["environment"].items()})
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        random.seed()                                  # the zygote's seed is every job's: draw a fresh one
        importlib.invalidate_caches()                  # /scratch is a new folder at the same path
        load_filter(program)
    except BaseException as error:  # noqa: B036
        say(2, f"the warm sandbox could not drop the job's privileges: {error}")
        os._exit(SETUP_FAILED)
    from . import runner
    runner.main(job["argv"])                           # ends the process


def empty_bounding_set():
    last = int(open("/proc/sys/kernel/cap_last_cap").read())
    for cap in range(last + 1):
        prctl(PR_CAPBSET_DROP, cap, f"drop capability {cap} from the bounding set")


def drop_capabilities():
    """No effective, permitted, inheritable or ambient capability (and none to gain: no_new_privs)."""
    libc.prctl(PR_CAP_AMBIENT, ctypes.c_ulong(PR_CAP_AMBIENT_CLEAR_ALL), ctypes.c_ulong(0), ctypes.c_ulong(0),
               ctypes.c_ulong(0))
    header, data = CapHeader(CAPABILITY_VERSION_3, 0), (CapData * 2)()
    number = SYS_CAPSET.get(os.uname().machine)
    if number is None:
        raise OSError(f"capset: unknown system-call number on {os.uname().machine}")
    check(libc.syscall(number, ctypes.byref(header), data), "capset")
    prctl(PR_SET_NO_NEW_PRIVS, 1, "no_new_privs")


def load_filter(program):
    """Install the classic-BPF system-call filter ``program`` (bytes of struct sock_filter) on this thread."""
    if not program:
        return
    count = len(program) // ctypes.sizeof(SockFilter)
    filters = (SockFilter * count).from_buffer_copy(program)
    prog = SockFprog(count, ctypes.cast(filters, ctypes.POINTER(SockFilter)))
    check(libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(prog), ctypes.c_ulong(0),
                     ctypes.c_ulong(0)), "seccomp")


# --- the zygote ---------------------------------------------------------------------------------------------

class Zygote:
    def __init__(self, control, program, cgroup_dirs):
        self.control, self.program, self.cgroup_dirs = control, program, cgroup_dirs
        self.jobs = 0

    def serve(self):
        names = warm_up()
        send(self.control, b"R", json.dumps({"assignments": names, "threads": threads(),
                                             "fds": sorted(int(n) for n in os.listdir("/proc/self/fd"))}).encode())
        while True:
            message = receive(self.control, max_fds=JOB_FDS)
            if message is None:
                return 0
            kind, payload, fds = message
            if kind != b"J" or len(fds) != JOB_FDS:
                for fd in fds:
                    os.close(fd)
                send(self.control, b"E", b"expected a job with its three pipes")
                continue
            try:
                size = LENGTH.unpack(payload[:LENGTH.size])[0]
                self.job(json.loads(payload[LENGTH.size:LENGTH.size + size]), payload[LENGTH.size + size:], fds)
            finally:
                for fd in fds:
                    try:
                        os.close(fd)
                    except OSError:
                        pass

    def job(self, job, data, fds):
        """Fork C for ``job`` (its header), whose scratch files are ``data`` one after the other."""
        files, offset = {}, 0
        for name, size in job["files"]:
            if "/" in name or name.startswith("."):
                send(self.control, b"E", f"file name {name!r} refused".encode())
                return
            files[name] = data[offset:offset + size]
            offset += size
        if threads() != 1 or threading.active_count() != 1:
            # a fork now could copy a lock held by another thread into the child: refuse, and stop
            send(self.control, b"E", f"the zygote has {threads()} threads; it stops".encode())
            raise SystemExit(3)
        report_r, report_w = os.pipe()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        pid = os.fork()
        if pid == 0:
            self.control.close()
            os.close(report_r)
            run_job(job, files, fds, report_w, self.cgroup_dirs, self.program)
        os.close(report_w)
        for fd in fds:
            os.close(fd)
        fds.clear()
        self.jobs += 1
        self.watch(pid, report_r)

    def watch(self, pid, report_r):
        """Relay G's pid and C's exit; kill the job on K or when the grader goes."""
        init, text = None, b""
        handle = os.pidfd_open(pid)
        watched = [self.control, report_r, handle]
        try:
            while True:
                ready, _, _ = select.select(watched, [], [])
                if report_r in ready:
                    chunk = os.read(report_r, 64)
                    if not chunk:               # the pipe's end: watching it further would spin the zygote at
                        watched.remove(report_r)    # 100% CPU for the rest of the job (both sides' cores)
                    text += chunk
                    if chunk and text.endswith(b"\n") and init is None:
                        init = int(text)
                        send(self.control, b"S", json.dumps({"pid": init}).encode())
                if self.control in ready:
                    message = receive(self.control)
                    if message is None or message[0] == b"K":
                        self.kill(pid, init)
                    if message is None:
                        os.waitpid(pid, 0)
                        raise SystemExit(0)
                if handle in ready:
                    _, status = os.waitpid(pid, 0)
                    code = os.waitstatus_to_exitcode(status)
                    send(self.control, b"X", json.dumps({"status": 128 - code if code < 0 else code,
                                                         "started": init is not None, "pid": init}).encode())
                    return
        finally:
            os.close(handle)
            os.close(report_r)

    @staticmethod
    def kill(pid, init):
        for target in (init, pid):
            if target:
                try:
                    os.kill(target, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m attnkit_sandbox.zygote", description=__doc__.splitlines()[0])
    parser.add_argument("--control", type=int, required=True, help="the control socket's file descriptor")
    parser.add_argument("--seccomp", type=int, help="a pipe holding the system-call filter (BPF)")
    parser.add_argument("--cgroups", default="", help="comma-separated descriptors of the cgroup parent folders")
    args = parser.parse_args(argv)
    program = b""
    if args.seccomp is not None:
        with os.fdopen(args.seccomp, "rb") as handle:
            program = handle.read()
    cgroup_dirs = [int(fd) for fd in args.cgroups.split(",") if fd.strip()]
    control = socket.socket(fileno=args.control)
    return Zygote(control, program, cgroup_dirs).serve()


if __name__ == "__main__":
    sys.exit(main())

"""The warm start: each grading worker's runs fork from a zygote that imported torch once, isolated as before.

Of every cold sandboxed run's CPU, most went to starting Python and importing torch, numpy, matplotlib and
the student package. :class:`WarmSandbox` starts, once per worker, a bubblewrap sandbox holding a *zygote*
(:mod:`attnkit_sandbox.zygote`) that imports all of it and computes nothing; each run is then a child
forked from it, which isolates itself in the fork path before any student code runs. The argument, step by
step (each one is what the cold :class:`~.bwrap.Sandbox` gives a run, and a test checks it on the warm path):

- **files**: the zygote's tree is the cold sandbox's jail (read-only system, interpreter and staged
  packages); each child gets a mount namespace of its own with fresh size-capped tmpfs on /scratch and /tmp
  and /dev read-only, so no file a job writes is seen by another;
- **processes**: each child is the init of a PID namespace of its own; when it exits the kernel kills
  everything left in it. Jobs never see the zygote or each other (no pid to signal, trace or read in /proc);
- **IPC and network**: an IPC namespace (System V objects and message queues outlive their processes) and a
  network namespace (loopback only) per job;
- **privileges**: the job's process gets the limits (RLIMIT_AS, CPU, NPROC, FSIZE, NOFILE, no core), its
  cgroups (memory, pids, a CPU share), no supplementary group, the worker's uid and gid, an empty bounding
  set, no capabilities, no_new_privs and the system-call filter, as setpriv and bwrap give a cold run; it stays
  chrooted (no user namespace can be made). For a grader that is not root the zygote lives in a user
  namespace where the grader's uid is the only one: the job runs as that uid, with no capability, no cgroup
  and its supplementary groups kept (:mod:`.userns` says what caps it then);
- **memory and state**: a forked child starts from the zygote's image, which no student code ever touched:
  what one job patches (a module, builtins, the environment, signal handlers, random seeds, copy-on-write
  pages) is its own copy. The zygote refuses to fork while it has more than one thread;
- **descriptors**: the child keeps its three pipes to this process and nothing else (not the zygote's
  control socket, not the cgroup folders); the zygote never reads what a job writes, so a job cannot fill
  its descriptors or feed it data.

What a warm run does not get afresh: the zygote's sandbox itself (its jail and namespaces are shared by the
worker's runs, all read-only or replaced per job as above), and Python's start-up (the child does not run
``site`` again; the environment and sys.path are the ones a cold run would have).

Warm starts need root (the grading process as root, or the hub's door, :mod:`.door`), or a user namespace
that bubblewrap may make for a grader that is not root (:mod:`.userns`); where the system refuses one, runs
start cold, as before.
"""

import collections
import dataclasses
import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

from attnkit_sandbox import zygote

from . import seccomp as syscall_filter
from .bwrap import (CHANNEL, JAIL, SCRATCH, Sandbox, SandboxResult, SandboxUnavailable, collect, finish,
                    namespace_args, record_exit, tool_path)
from .cgroups import Cgroup
from .reaping import reap
from . import userns
from ..results import Message

# besides the cold sandbox's: the jobs' namespaces and mounts, and their loopback's flags
ZYGOTE_CAPABILITIES = ("CAP_SYS_ADMIN", "CAP_NET_ADMIN")
READY_SECONDS = 300.0                        # the zygote's imports, on a loaded machine


class ZygoteError(RuntimeError):
    """The zygote could not be started, or stopped answering."""


def available():
    """True when runs can start warm here: as root, or where bubblewrap may make the zygote's user namespace
    (probed once; where it may not, the grader says so once on stderr and runs start cold)."""
    if os.geteuid() == 0:
        return True
    reason = userns.refusal()
    if reason:
        userns.tell_cold(reason)
    return reason is None


def launcher(public_dir, limits=None, warm=None):
    """A :class:`WarmSandbox` where warm starts are possible (and ``warm`` is not False), else a cold
    :class:`~.bwrap.Sandbox`; ``warm=True`` insists (SandboxUnavailable where not possible)."""
    if warm or (warm is None and available()):
        return WarmSandbox(public_dir, limits)
    return Sandbox(public_dir, limits)


class WarmSandbox:
    """One worker's runs, forked from its zygote; ``launch`` is :meth:`.bwrap.Sandbox.launch`'s."""

    def __init__(self, public_dir, limits=None, python=None, cgroups=None):
        if not available():
            raise SandboxUnavailable(f"warm starts need root or a user namespace, which this system refuses "
                                     f"({userns.refusal()})")
        self.cold = Sandbox(public_dir, limits, python, cgroups)     # its checks, file tree and environment
        self.limits = self.cold.limits
        self.process = None
        self.control = None
        self.parents = []
        self.errors = collections.deque(maxlen=40)
        self.buffer = bytearray()
        self.ready = None
        self.program = None

    @property
    def use_cgroups(self):
        return self.cold.use_cgroups

    @property
    def as_root(self):
        return self.cold.as_root

    def job_uid(self, limits):
        """The uid a job runs as: the uid ``limits`` names as root, else the only uid of the zygote's user namespace."""
        return limits.uid if self.as_root else os.getuid()

    # --- the zygote ---------------------------------------------------------------------------------------
    def command(self, control_fd, seccomp_fd, cgroup_fds):
        """bwrap's command line for the zygote: the cold sandbox's tree (jail on a tmpfs of its own) and
        namespaces, with CAP_SYS_ADMIN kept for the jobs' isolation, no filter, and no uid drop."""
        limits = self.limits
        args = [self.cold.bwrap, *self.cold.tree(limits, JAIL, own_mount=True)]
        if self.as_root:
            args += namespace_args(True)
            for capability in ZYGOTE_CAPABILITIES:
                args += ["--cap-add", capability]
        else:
            args = [*userns.without_devpts(args), *userns.namespace_args()]
        args += ["--chdir", f"{JAIL}{SCRATCH}", "--clearenv"]
        for name, value in self.cold.environment(limits, zygote.CHANNEL_FD).items():
            args += ["--setenv", name, value]
        return args + ["--", tool_path("chroot"), JAIL, "env", f"--chdir={SCRATCH}", self.cold.python, "-m",
                       "attnkit_sandbox.zygote", "--control", str(control_fd),
                       *(["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []),
                       "--cgroups", ",".join(map(str, cgroup_fds))]

    def start(self):
        """Start the zygote and wait until it has imported everything (ZygoteError if it cannot)."""
        self.close()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        program = self.program = syscall_filter.program()
        seccomp = syscall_filter.pipe(program) if program else None
        self.parents = cgroup_parents(self.limits) if self.cold.use_cgroups else []
        cgroup_fds = [os.open(folder, os.O_RDONLY | os.O_DIRECTORY) for folder in self.parents]
        passed = [theirs.fileno(), *([seccomp] if seccomp is not None else []), *cgroup_fds]
        try:
            self.process = subprocess.Popen(
                self.command(theirs.fileno(), seccomp, cgroup_fds), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, pass_fds=passed, start_new_session=True,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        except OSError as error:
            ours.close()
            raise ZygoteError(f"the warm sandbox could not start: {error}") from None
        finally:
            theirs.close()
            for fd in cgroup_fds + ([seccomp] if seccomp is not None else []):
                os.close(fd)
        threading.Thread(target=self._drain, args=(self.process.stderr,), daemon=True).start()
        self.control, self.buffer = ours, bytearray()
        ours.settimeout(READY_SECONDS)
        try:
            message = zygote.receive(ours)
        except (OSError, ValueError, EOFError) as error:
            message = None
            self.errors.append(str(error))
        if message is None or message[0] != b"R":
            self.close()
            raise ZygoteError(f"the warm sandbox's zygote did not start{self.why()}")
        ours.settimeout(None)
        self.ready = json.loads(message[1])
        if self.ready.get("threads") != 1:
            self.close()
            raise ZygoteError(f"the zygote runs {self.ready.get('threads')} threads after its imports: a fork "
                              f"could deadlock; start cold (--cold-start)")

    def _drain(self, stream):
        for line in iter(stream.readline, b""):
            self.errors.append(line.decode("utf-8", "replace").rstrip())

    def why(self):
        said = [line for line in self.errors if line.strip()]
        return f": {' / '.join(said[-3:])}" if said else ""

    def alive(self):
        return self.process is not None and self.process.poll() is None and self.control is not None

    def close(self):
        """End the zygote (closing its socket ends it and the job it runs)."""
        if self.control is not None:
            self.control.close()
            self.control = None
        if self.process is not None:
            reap(self.process, grace=10)
            self.process = None

    # --- one run ----------------------------------------------------------------------------------------------
    def launch(self, job, scratch_dir, limits=None):
        """The notebook runner's ``job`` over the files of ``scratch_dir``, forked from the zygote: a SandboxResult."""
        limits = limits or self.limits
        files = scratch_files(scratch_dir)
        if not self.alive() or self.program != syscall_filter.program():
            try:
                self.start()
            except ZygoteError as error:
                return SandboxResult(False, reason=Message.text(str(error)))     # the grader's own failure, as it is
        group = Cgroup.create(limits) if self.parents else None
        header = {"argv": [a.replace(CHANNEL, str(zygote.CHANNEL_FD)) for a in job.argv()[3:]],
                  "uid": self.job_uid(limits), "groups": self.as_root, "limits": dataclasses.asdict(limits),
                  "cgroups": [[self.parents.index(folder.parent), folder.name] for folder in group.folders]
                  if group else [],
                  "environment": self.cold.environment(limits, zygote.CHANNEL_FD),
                  "files": [[name, len(data)] for name, data in files.items()]}
        encoded = json.dumps(header).encode()
        payload = zygote.LENGTH.pack(len(encoded)) + encoded + b"".join(files.values())
        pipes = [os.pipe() for _ in range(zygote.JOB_FDS)]
        start = time.monotonic()
        result = None
        try:
            try:
                zygote.send(self.control, b"J", payload, fds=[w for _, w in pipes])
            except OSError as error:
                self.close()
                return SandboxResult(False, reason=Message.text(f"the warm sandbox's zygote stopped answering "
                                                                f"({error}){self.why()}"))
            finally:
                for _, w in pipes:
                    os.close(w)
            result = self.watch([r for r, _ in pipes], limits, start)
        finally:
            for r, _ in pipes:
                os.close(r)
            finish(result, group, limits)
        result.seccomp, result.warm = self.program is not None, True
        return result

    def watch(self, readers, limits, start):
        streams = dict(zip(readers, ("stdout", "stderr", "channel")))
        events = {}

        def ended():
            for kind, payload in self.messages():
                if kind == b"S":
                    events["child-pid"] = json.loads(payload)["pid"]
                elif kind == b"X":
                    events["exit-code"] = json.loads(payload)["status"]
                elif kind == b"E":
                    events["error"] = payload.decode("utf-8", "replace")
            if not self.alive() and "exit-code" not in events and "error" not in events:
                events["error"] = f"the warm sandbox's zygote ended{self.why()}"
                self.close()
            return "exit-code" in events or "error" in events

        def kill(_):
            if self.control is not None:
                try:
                    zygote.send(self.control, b"K")
                except OSError:
                    self.close()

        result, _ = collect(streams, ended, kill, limits, start)
        result.seconds = round(time.monotonic() - start, 3)
        if "error" in events:
            result.stderr += f"\n{events['error']}".encode()
        status = {k: v for k, v in events.items() if k in ("child-pid", "exit-code")}
        code = events.get("exit-code")
        if code == zygote.SETUP_FAILED and "child-pid" not in events:
            status = {}
        record_exit(result, code, json.dumps(status).encode(), limits)
        return result

    def messages(self):
        """The zygote's complete messages since the last call, read without blocking."""
        found = []
        if self.control is None:
            return found
        try:
            while True:
                chunk = self.control.recv(1 << 16, socket.MSG_DONTWAIT)
                if not chunk:
                    self.close()
                    break
                self.buffer += chunk
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self.close()
        head = 1 + zygote.LENGTH.size
        while len(self.buffer) >= head:
            size = zygote.LENGTH.unpack(self.buffer[1:head])[0]
            if len(self.buffer) < head + size:
                break
            found.append((bytes(self.buffer[:1]), bytes(self.buffer[head:head + size])))
            del self.buffer[:head + size]
        return found


def scratch_files(scratch_dir):
    """{name: bytes} of the plain files of a scratch folder (its out/ left aside), as the cold sandbox binds them."""
    files = {}
    for entry in sorted(Path(scratch_dir).iterdir()):
        if entry.name == "out":
            continue
        if entry.is_symlink() or not entry.is_file():
            raise ValueError(f"scratch_dir: {entry} is not a plain file")
        files[entry.name] = entry.read_bytes()
    return files


def cgroup_parents(limits):
    """The folders the jobs' cgroups are made in (one per hierarchy), learnt by making and removing one."""
    probe = Cgroup.create(limits)
    if probe is None:
        return []
    try:
        return [folder.parent for folder in probe.folders]
    finally:
        probe.remove()

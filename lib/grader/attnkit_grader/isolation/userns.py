"""Warm starts for a grading process that is not root: the zygote in a user namespace of its own.

An instructor grading as themself, or a Dask worker without the hub's door, cannot give the zygote
(:mod:`attnkit_sandbox.zygote`) real capabilities. bubblewrap can still start it in a user namespace
(``--unshare-user``) where the instructor's uid is the only uid mapped, holding inside it only the
capabilities the per-job steps need (:data:`CAPABILITIES`: namespaces and mounts, the loopback, the
chroot into the jail, emptying the bounding set). Each job then gets what a job gets as root (see
:mod:`.warm`): a fresh mount, PID, IPC, UTS and network namespace, fresh size-capped tmpfs, a PID 1 of
its own, the resource limits, an empty bounding set, no capabilities, no_new_privs and the system-call
filter. What differs:

- **one uid**: the job runs as the single mapped uid, the instructor's own, with no capability (the uid a
  :class:`~.limits.Limits` names cannot exist in the namespace). It reaches no more of the instructor's
  files than a job as root does: its file tree is the jail's, read-only, and a fresh tmpfs. Supplementary
  groups cannot be dropped in a user namespace (``setgroups`` is denied there); they show as the overflow
  group and open nothing in the jail;
- **no user namespace for the jobs**: the chroot into the jail (the kernel refuses CLONE_NEWUSER to a
  chrooted process) and the filter's refusal of ``unshare`` and ``clone`` with a namespace flag, each alone.
  Not bwrap's ``--disable-userns``: it puts the zygote in a nested user namespace that does not own the
  mount namespace, so every mount a job's setup must remount would be locked;
- **no cgroups** (an unprivileged process cannot make them, unless it was delegated a cgroup v2 tree), so
  processes, memory and CPU are capped by the limits alone: RLIMIT_AS per process (3 GiB by default: a
  job of N processes may use N times that, up to the tmpfs sizes on top); RLIMIT_NPROC, which the kernel
  counts per uid *and user namespace* since Linux 5.14: here the processes and threads of the zygote's
  namespace, i.e. the zygote, the job's three setup processes and whatever the job starts (the default
  64 leaves a job about 60). Before 5.14 it counted every process of the instructor's uid on the machine,
  so a desktop session of more than 64 processes would leave a job none; there, grade as root or through
  the door. RLIMIT_CPU per process (SIGXCPU, then SIGKILL 5 s later) and the wall clock stop a spinning
  job, and each job is a session of its own, so the scheduler's autogroup shares the CPU between jobs,
  not between their processes.

Where the system forbids unprivileged user namespaces (``kernel.unprivileged_userns_clone=0``, Ubuntu's
``kernel.apparmor_restrict_unprivileged_userns=1``, a container's seccomp profile), :func:`refusal` says
why, the runs start cold, and the grader says so once on stderr (:func:`tell_cold`). The guide:
site/pages/en/guide/instructors.md#warm-starts-without-root.
"""

import functools
import os
import shutil
import subprocess
import sys

CAPABILITIES = ("CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_SYS_CHROOT", "CAP_SETPCAP")
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
PROBE_SECONDS = 30


def without_devpts(args):
    """``args`` (bwrap's) with each ``--dev FOLDER`` made by hand: a tmpfs, the host's plain devices bound in,
    stdin/stdout/stderr links and an empty shm folder. bwrap's ``--dev`` also mounts a devpts, for which it
    maps the grader to uid 0 and then moves the sandbox into a second, nested user namespace: one that does
    not own the mount namespace, where every mount a job's setup remounts would be locked."""
    made, at = [], 0
    while at < len(args):
        if args[at] == "--dev" and at + 1 < len(args):
            folder = args[at + 1]
            made += ["--perms", "0755", "--tmpfs", folder]
            for name in DEVICES:
                made += ["--dev-bind", f"/dev/{name}", f"{folder}/{name}"]
            for number, name in enumerate(("stdin", "stdout", "stderr")):
                made += ["--symlink", f"/proc/self/fd/{number}", f"{folder}/{name}"]
            made += ["--perms", "01777", "--dir", f"{folder}/shm"]
            at += 2
        else:
            made.append(args[at])
            at += 1
    return made


def namespace_args(uid=None):
    """bwrap's arguments for the zygote of a grader that is not root: every namespace, the user one with
    ``uid`` (default: this process's) as its only uid and gid, and the :data:`CAPABILITIES` kept."""
    uid = os.getuid() if uid is None else uid
    if not isinstance(uid, int) or isinstance(uid, bool) or uid <= 0:
        raise ValueError(f"uid: expected the unprivileged uid of the grading process, got {uid!r}")
    args = ["--unshare-all", "--unshare-user", "--uid", str(uid), "--gid", str(uid),
            "--die-with-parent", "--new-session", "--hostname", "sandbox"]
    for capability in CAPABILITIES:
        args += ["--cap-add", capability]
    return args


@functools.lru_cache(maxsize=None)
def refusal(bwrap="bwrap"):
    """None when ``bwrap`` can start a zygote's user namespace here (probed once), else one line saying why not."""
    program = shutil.which(bwrap)
    if program is None:
        return f"{bwrap} was not found"
    probe = [program, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", *namespace_args(), "--", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=PROBE_SECONDS, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bubblewrap could not be run: {error}"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return said[-1] if said else f"bubblewrap ended with exit status {done.returncode}"
    return None


@functools.lru_cache(maxsize=None)
def tell_cold(reason):
    """Say once on stderr that runs start cold, and why (``reason``: :func:`refusal`'s line)."""
    sys.stderr.write(f"attnkit: runs start cold (slower): this system refuses the warm sandbox's user namespace "
                     f"({reason}).\n")

"""Throwaway cgroups that cap the memory and the process count of one sandbox as a whole."""

import functools
import logging
import os
import time
from pathlib import Path

log = logging.getLogger(__name__)

from .limits import Limits


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

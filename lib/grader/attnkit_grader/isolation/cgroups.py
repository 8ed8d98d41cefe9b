"""Throwaway cgroups that cap the memory, the process count and the CPU share of one sandbox as a whole."""

import functools
import logging
import os
import time
from pathlib import Path

log = logging.getLogger(__name__)

from .limits import Limits


class Cgroup:
    """A throwaway cgroup holding one sandbox: memory (no swap), process count and CPU of all its processes.

    RLIMIT_AS caps each process; only a cgroup caps their sum (a fork bomb whose children each allocate).
    cgroup v2 when /sys/fs/cgroup is a v2 hierarchy (groups under /sys/fs/cgroup/attnkit), else the v1
    memory, pids, cpu and cpuacct hierarchies, under this process's own groups. A sandbox started by this
    process enters it through ``sh -c 'echo $$ > cgroup.procs; exec bwrap ...'``; a warm one (:mod:`.warm`)
    through the zygote, which writes its job's process into ``cgroup.procs`` of each folder. Every process of
    the sandbox is born inside.

    The CPU share: each sandbox's group gets the same weight (v1 ``cpu.shares``, v2 ``cpu.weight``) and a
    quota of ``Limits.cpus`` cores (v1 ``cpu.cfs_quota_us``, v2 ``cpu.max``), so a notebook that spins up
    dozens of processes gets no more CPU than a classmate's single thread, whatever the scheduler's autogroup
    setting. Where the cpu controller is missing the group still caps memory and processes
    (``has_cpu`` False); where no group can be made at all, each sandbox is a session of its own (autogroup,
    where the kernel has it on, then shares the CPU between sessions) and RLIMIT_CPU bounds each process.
    """

    ROOT = Path("/sys/fs/cgroup")
    PERIOD = 100_000                # microseconds of a CPU quota period
    counter = 0

    def __init__(self, version, folders, name=None):
        self.version, self.folders, self.name = version, folders, name
        self.cpu_folder = None       # where the CPU use is accounted (v1 cpuacct, v2 the group itself)

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
        wanted = {"memory", "pids", "cpu"} & set((cls.ROOT / "cgroup.controllers").read_text().split())
        if not wanted <= set((parent / "cgroup.subtree_control").read_text().split()):
            (parent / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in sorted(wanted)))
        folder = parent / name
        folder.mkdir()
        group = cls("v2", [folder], name)
        try:
            (folder / "memory.max").write_text(str(limits.total_memory))
            (folder / "memory.swap.max").write_text("0")
            (folder / "pids.max").write_text(str(limits.processes + 2))     # + bwrap's two processes
            if (folder / "cpu.max").exists():
                (folder / "cpu.weight").write_text("100")
                (folder / "cpu.max").write_text(f"{round(limits.cpus * cls.PERIOD)} {cls.PERIOD}")
                group.cpu_folder = folder
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
        group = cls("v1", [], name)
        made = {}
        try:
            for controller in ("memory", "pids", "cpu", "cpuacct"):
                if controller not in own:
                    continue
                folder = cls.ROOT / controller / own[controller] / f"attnkit-{name}"
                real = folder.parent.resolve() / folder.name          # cpu and cpuacct may be one hierarchy
                if real not in made:
                    folder.mkdir()
                    group.folders.append(folder)
                    made[real] = folder
                made[controller] = made[real]
            memory, pids = made["memory"], made["pids"]
            (memory / "memory.limit_in_bytes").write_text(str(limits.total_memory))
            if (memory / "memory.memsw.limit_in_bytes").exists():
                (memory / "memory.memsw.limit_in_bytes").write_text(str(limits.total_memory))
            (memory / "memory.swappiness").write_text("0")
            (pids / "pids.max").write_text(str(limits.processes + 2))
            if "cpu" in made and "cpuacct" in made:
                (made["cpu"] / "cpu.shares").write_text("1024")
                (made["cpu"] / "cpu.cfs_period_us").write_text(str(cls.PERIOD))
                (made["cpu"] / "cpu.cfs_quota_us").write_text(str(round(limits.cpus * cls.PERIOD)))
                group.cpu_folder = made["cpuacct"]
        except OSError:
            group.remove()
            raise
        return group

    @property
    def has_cpu(self):
        """True when the group also holds the sandbox to its CPU share and accounts its CPU time."""
        return self.cpu_folder is not None

    def enter_command(self):
        """Prefix to a command line: move the shell into every folder of this group, then exec the command."""
        script = 'while [ "$1" != -- ]; do echo $$ > "$1/cgroup.procs" || exit 125; shift; done; shift; exec "$@"'
        return ["/bin/sh", "-c", script, "sh", *map(str, self.folders), "--"]

    def cpu_seconds(self):
        """CPU seconds (user + system) every process of the group used so far, or None where not accounted."""
        if self.cpu_folder is None:
            return None
        try:
            if self.version == "v1":
                return int((self.cpu_folder / "cpuacct.usage").read_text()) / 1e9
            stats = dict(line.split() for line in (self.cpu_folder / "cpu.stat").read_text().splitlines())
            return int(stats["usage_usec"]) / 1e6
        except (OSError, ValueError, KeyError):
            return None

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

"""The resource limits of one sandbox run, and the unprivileged uid of each worker."""

from dataclasses import dataclass

GiB, MiB = 2**30, 2**20


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed run (bytes, seconds, counts)."""

    memory: int = 3 * GiB            # RLIMIT_AS of each process: the reference notebooks peak at 0.8-0.9 GiB,
                                     # the PS2 memory probe needs < 4 GiB at its sequence length,
                                     # attnkit_assignments.ps2_relative_pe.inputs.MEMORY_LENGTH
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
    cpus: float = 1.0                # cores' worth of CPU time the whole sandbox may use (a cgroup's quota)
    uid: int = 65534                 # give each concurrent sandbox its own uid (see worker_uid)


def worker_uid(slot):
    """A uid of its own for pool worker ``slot``: RLIMIT_NPROC counts every process of a uid together."""
    return 61000 + int(slot)

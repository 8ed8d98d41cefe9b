"""The runner's process housekeeping: leftover processes killed and reaped after every step, resource use."""

import os
import signal
import sys
import threading
import time

REAP_SECONDS = 5.0                  # how long the runner keeps killing one step's leftover processes


def other_processes():
    """PIDs listed in /proc but this process and PID 1 (in the sandbox: bubblewrap's init)."""
    me = os.getpid()
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    return [int(name) for name in names if name.isdigit() and int(name) not in (1, me)]


def reap_children():
    """Collect every ended child of this process, so that none stays a zombie counting against RLIMIT_NPROC."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except OSError:                        # ECHILD: no child at all
            return
        if pid == 0:
            return


def kill_others(seconds=REAP_SECONDS):
    """SIGKILL every other process of this PID namespace until none is left: (how many, how many remain).

    Only for a runner in a PID namespace of its own (the sandbox's, where it runs as an unprivileged
    uid): there ``kill(-1, SIGKILL)`` reaches every process of the namespace but the caller and the
    namespace's init (bubblewrap's reaper, which the kernel never lets a namespace member kill and which
    reaps the orphans); outside one it would reach every process of the uid on the machine. Children of
    the runner itself are reaped here. One kill(-1) stops a fork bomb (the kernel holds fork off while it
    signals, and a process with SIGKILL pending forks no more); it is repeated until /proc is empty of
    others, for at most ``seconds`` (a thread of the runner may still be forking).
    """
    reap_children()
    seen = set(other_processes())
    if not seen:
        return 0, 0
    end = time.monotonic() + seconds
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:                        # ESRCH: nothing left to signal
            pass
        reap_children()
        left = other_processes()
        seen.update(left)
        if not left:
            return len(seen), 0
        if time.monotonic() > end:
            return len(seen), len(left)
        time.sleep(0.002)


def close_figures():
    """Close the notebook's figures after each cell, as the inline backend does (frees their memory)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        try:
            pyplot.close("all")
        except Exception:  # the notebook may have broken pyplot; only memory is at stake
            pass


def peak_memory():
    """{"vm": peak address space, "rss": peak resident set} of this process in bytes (Linux), for sizing limits."""
    peaks = {}
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                name, _, value = line.partition(":")
                if name in ("VmPeak", "VmHWM"):
                    peaks["vm" if name == "VmPeak" else "rss"] = int(value.split()[0]) * 1024
    except (OSError, ValueError):
        pass
    return peaks


def cpu_seconds():
    """User + system CPU seconds of this process so far (its start and imports included), for sizing limits."""
    try:
        import resource
    except ImportError:
        return None
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return round(usage.ru_utime + usage.ru_stime, 3)


def current_limits(cell_timeout, cell_output):
    """The limits this process runs under, for the report (resource limits as the kernel enforces them)."""
    limits = {"cell_timeout": cell_timeout, "cell_output": cell_output}
    try:
        import resource
    except ImportError:
        return limits
    for name in ("AS", "CPU", "NPROC", "FSIZE", "NOFILE"):
        soft = resource.getrlimit(getattr(resource, f"RLIMIT_{name}"))[0]
        limits[name.lower()] = None if soft == resource.RLIM_INFINITY else soft
    return limits


def yield_to_the_runner():
    """In a process the notebook forks: the lowest CPU priority, so the runner keeps its share of the quota.

    Inside the sandbox's CPU quota a fork bomb's spinning children would otherwise share the CPU equally
    with the runner, which must still see the cell's timeout, reap and report; a process forked from the
    warm zygote costs milliseconds of CPU to fork, so a starved runner could not even reach the process
    limit. An unprivileged process cannot raise its priority again. A child started without Python's
    fork hooks (subprocess, ctypes) keeps the runner's priority: this is fairness, not a limit.
    """
    try:
        os.nice(19)
    except OSError:
        pass


# --- the watchdog: a step that ignores its timeout ends the process ---------------------------------------

class Watchdog(threading.Thread):
    """Ends the process (after telling the parent) when a step runs ``grace`` s past its timeout."""

    def __init__(self, say, grace, status):
        super().__init__(daemon=True, name="attnkit-watchdog")
        self.say, self.grace, self.status = say, grace, status
        self.deadline, self.step, self.wake = None, None, threading.Event()
        self._exit = os._exit                 # bound now: student code may replace os._exit later

    def arm(self, step, seconds):
        self.step, self.deadline = step, time.monotonic() + seconds + self.grace

    def disarm(self):
        self.deadline = None

    def run(self):
        while True:
            self.wake.wait(0.25)
            deadline, step = self.deadline, self.step
            if deadline is not None and time.monotonic() > deadline:
                self.say({"event": "stuck", "step": step})
                self._exit(self.status)

"""Run one submitted notebook inside the sandbox: its code cells in order in one namespace, then the probes.

    python -m attnkit_sandbox.runner SCRATCH_DIR [--assignment NAME] [--probes MODULE] [--channel FD]
        [--cell-timeout SECONDS] [--grace SECONDS] [--skip N,N,...] [--language LANG] [--reap]

(the options, their defaults and how the grader builds the line: :mod:`attnkit_sandbox.command`).

Reads SCRATCH_DIR/notebook.ipynb with plain ``json`` and tolerates anything (not JSON, no cells, cells of
odd types); runs the code cells in order in one fresh namespace (``__name__ == "__main__"``), each under
a timeout (SIGALRM), capturing its stdout and stderr up to a byte cap; then calls each probe of
``PROBES`` (from ``attnkit_assignments.<assignment>.probes`` or --probes) on the inputs the trusted grader put
in SCRATCH_DIR (see :mod:`attnkit_sandbox.channel`). Makes outputs.npz and report.json in memory and, with
--channel FD, sends them (after one progress line per cell) over that pipe: in the sandbox nothing the
parent reads is written to a file on either side. Without a pipe it writes them into OUT (default
SCRATCH_DIR/out).

No Jupyter: a plain interpreter starts much faster than a kernel. IPython syntax is handled minimally:
a cell that is not valid Python has its ``%magic`` and ``!shell`` lines skipped (``%time``/``%%time``
run their statement); matplotlib draws with Agg. A cell that raises is recorded and the next one runs,
as in ``nbgrader autograde``.

With --reap (only in the sandbox, where the runner has a PID namespace of its own) every process a cell
or probe left behind is killed and reaped before the next step: a fork bomb's children, or a server a
cell started, never compete with the later cells and the probes for the CPU or the process limit.
Threads a cell started live in the runner's own process and cannot be stopped from outside; the report
counts them (``threads`` of the cell), and they end with the process.

Nothing here trusts the notebook: the namespace, the objects probes get back, and everything the report
says about them come from student code. The report is for reasons and remarks, never for points; points
come from a trusted judge comparing the outputs with a reference on inputs the notebook could not choose.
"""

import builtins
import faulthandler
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

from . import channel, command, remarks
from .cells import NOTEBOOK, compile_cell, python_source, read_cells, read_expected, structure_remarks
from .command import CELL_TIMEOUT, EXIT_STUCK, LANGUAGE_VARIABLE
from .probe_sets import probes_of
from .remarks import remark
from .processes import (Watchdog, close_figures, cpu_seconds, current_limits, kill_others, peak_memory,
                        yield_to_the_runner)

CELL_OUTPUT = 20_000                # bytes kept of each of a cell's stdout and stderr
REPORT_OUTPUT = 2 * 2**20           # bytes of captured output kept in the whole report (many noisy cells)
MEMORY_WORDS = ("can't allocate memory", "Cannot allocate memory", "bad_alloc", "out of memory")


class CellTimeout(BaseException):
    """Raised in the running cell when its time is up (BaseException: ``except Exception`` does not catch it)."""


class CappedStream:
    """A text stream keeping the first ``cap`` bytes (UTF-8) written to it and counting the rest."""

    encoding, errors = "utf-8", "replace"

    def __init__(self, cap):
        self.cap, self.parts, self.kept, self.total = cap, [], 0, 0

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        data = text.encode("utf-8", "replace")
        self.total += len(data)
        room = self.cap - self.kept
        if room > 0:
            piece = utf8_head(data, room)
            self.parts.append(piece)
            self.kept += len(piece)
            if len(piece) < len(data):
                self.cap = self.kept     # full: a shorter character written later must not slip in after the cut
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        pass

    def isatty(self):
        return False

    def writable(self):
        return True

    @property
    def truncated(self):
        return self.total > self.kept

    def data(self):
        return b"".join(self.parts)

    def text(self):
        return self.data().decode("utf-8", "replace")


def utf8_head(data, size):
    """The first ``size`` bytes or fewer of UTF-8 ``data``, never ending inside a character."""
    if size >= len(data):
        return data
    end = max(size, 0)
    while end > 0 and (data[end] & 0xC0) == 0x80:    # data[end] continues a character: cut before that character
        end -= 1
    return data[:end]


# --- the run ----------------------------------------------------------------------------------------------

class Runner:
    """One notebook's run: cells, then probes; ``report`` is what :meth:`run` returns and writes.

    ``grace``: seconds a step may run past its timeout before a watchdog thread ends the process
    (None: no watchdog, for in-process runs); ``pipe``: a pipe's file descriptor to the parent;
    ``reap``: kill every other process of the PID namespace after each step (see :func:`kill_others`:
    only where the runner has a PID namespace of its own, never in-process).
    """

    def __init__(self, scratch, out=None, assignment=None, probes=None, cell_timeout=CELL_TIMEOUT,
                 cell_output=CELL_OUTPUT, skip=(), pipe=None, grace=None, reap=False):
        self.scratch = Path(scratch)
        self.out = Path(out) if out else self.scratch / channel.OUT_DIR
        self.assignment, self.probes_module = assignment, probes
        self.cell_timeout, self.cell_output, self.skip = cell_timeout, cell_output, set(skip)
        self.pipe = pipe
        # The watchdog ends the whole process: only for the command line, never for an in-process run.
        self.watchdog = Watchdog(self.say, grace, EXIT_STUCK) if grace is not None else None
        self.pid = os.getpid()                 # a process the notebook forked must not speak for it
        self.reap = reap
        self.report = {"version": 1, "status": "ok", "reason": None, "remarks": [], "cells": [], "probes": {},
                       "assignment": assignment, "limits": current_limits(cell_timeout, cell_output)}
        self.outputs = {}
        self.output_room = REPORT_OUTPUT

    # Messages to the parent -------------------------------------------------------------------------------
    def say(self, record):
        if self.pipe is None or os.getpid() != self.pid:
            return
        try:
            channel.send_file(self.pipe, channel.PROGRESS_JSONL, json.dumps(record).encode() + b"\n")
        except (OSError, ValueError):
            pass                               # the notebook closed or broke the pipe: its own loss

    def run(self):
        """Run everything, write report.json and outputs.npz into ``out`` (and the channel); return the report."""
        start = time.perf_counter()
        probes, probe_error = self.load_probes()
        inputs = channel.read_inputs(self.scratch)
        cells, odd, problem = read_cells(self.scratch / NOTEBOOK)
        self.report["remarks"] = odd + structure_remarks(cells, read_expected(self.scratch))
        if problem:
            self.report.update(status="invalid-notebook", reason=problem)
        if self.watchdog:
            self.watchdog.start()
        with ProcessState(self.scratch):
            namespace = {"__name__": "__main__", "__builtins__": builtins, "__doc__": None}
            for cell in cells:
                if cell["cell_type"] == "code" and cell["source"].strip():
                    self.report["cells"].append(self.run_cell(cell, namespace))
            self.run_probes(probes, probe_error, inputs, namespace, problem)
        self.report["seconds"] = round(time.perf_counter() - start, 3)
        self.report["memory"] = peak_memory()
        self.report["cpu"] = cpu_seconds()
        if self.report["reason"] is None:
            self.report["reason"] = summary(self.report)
        self.write()
        return self.report

    def load_probes(self):
        """(probes of the assignment, None) or ([], why not); done before any student code runs."""
        if not self.assignment:
            return [], None
        try:
            return probes_of(self.assignment, self.probes_module), None
        except Exception as error:  # a broken or missing probes module is the course's fault: say so
            return [], f"probes unavailable ({type(error).__name__}: {channel.clip_message(error)})"

    def run_cell(self, cell, namespace):
        index, filename = cell["index"], f"<cell {cell['index']}>"
        record = {"index": index, "grade_id": cell["grade_id"], "status": "ok"}
        self.say({"event": "start", "cell": index, "grade_id": cell["grade_id"]})
        code, notes = python_source(cell["source"])
        if notes:
            record["notes"] = notes
        if index in self.skip or code is None:
            record["status"] = "skipped"
            self.say({"event": "done", "cell": record})
            return record
        stdout, stderr = CappedStream(self.cell_output), CappedStream(self.cell_output)
        threads = set(threading.enumerate())
        start, cpu = time.perf_counter(), time.process_time()
        try:
            body, last = compile_cell(code, filename)
        except (SyntaxError, ValueError) as error:
            record.update(status="error", error=describe(error), line=getattr(error, "lineno", None))
        else:
            def execute():
                exec(body, namespace)
                if last is not None:
                    result = eval(last, namespace)
                    return None if result is None else channel.clip_message(repr(result), 200)
                return None

            status, value = self.guarded(f"cell {index}", execute, filename, stdout, stderr)
            record.update(status)
            if value is not None:
                record["result"] = value
        record["seconds"] = round(time.perf_counter() - start, 4)
        record["cpu"] = round(time.process_time() - cpu, 4)      # the cell's own CPU: the floor of grading it
        record.update(self.leftovers(threads))
        for name, stream in (("stdout", stdout), ("stderr", stderr)):
            data = utf8_head(stream.data(), self.output_room)     # bytes with bytes: the room is in bytes
            self.output_room -= len(data)
            if stream.total:
                record[name] = data.decode("utf-8", "replace")
            if stream.truncated or len(data) < stream.kept:
                record[f"{name}_bytes"] = stream.total
        close_figures()
        self.say({"event": "done", "cell": record})
        return record

    def guarded(self, step, function, filename, stdout, stderr):
        """Call ``function()`` under the timeout with output captured: ({"status", ...}, its return value)."""
        saved = sys.stdout, sys.stderr
        status, value = {"status": "ok"}, None
        try:
            sys.stdout, sys.stderr = stdout, stderr
            self.arm(step)
            try:
                value = function()
            finally:
                self.disarm()
                if os.getpid() != self.pid:    # a child the notebook forked is done with the cell
                    os._exit(0)
        except CellTimeout:
            status = {"status": "timeout", "error": f"ran over the {self.cell_timeout:g} s limit and was interrupted"}
        except BaseException as error:  # noqa: B036 -- SystemExit and KeyboardInterrupt are cell errors too
            status = {"status": "error", "error": describe(error), "line": error_line(error, filename)}
            if is_memory_error(error):
                status["memory"] = True
            elif isinstance(error, BlockingIOError) or "can't start new thread" in status["error"]:
                status["processes"] = True     # fork() or a new thread refused: RLIMIT_NPROC
        finally:
            sys.stdout, sys.stderr = saved
            self.disarm()
        return status, value

    def leftovers(self, threads=None):
        """After a step: kill the processes it left (with reap), count the Python threads it left running.

        Returns the entries for the step's record: ``killed`` (processes it left behind, now dead),
        ``still_running`` (processes that could not be killed in REAP_SECONDS) and ``threads`` (threads
        started since ``threads``, a set from threading.enumerate(), that still run: they live in this
        process and keep running, but only until the runner ends it).
        """
        found = {}
        if self.reap and os.getpid() == self.pid:
            killed, left = kill_others()
            if killed:
                found["killed"] = killed
            if left:
                found["still_running"] = left
        if threads is not None:
            started = [t for t in threading.enumerate() if t not in threads and t.is_alive()]
            if started:
                found["threads"] = len(started)
        return found

    def arm(self, step):
        if self.watchdog:
            self.watchdog.arm(step, self.cell_timeout)
        if self.cell_timeout and threading.current_thread() is threading.main_thread():
            signal.setitimer(signal.ITIMER_REAL, self.cell_timeout)

    def disarm(self):
        if threading.current_thread() is threading.main_thread():
            signal.setitimer(signal.ITIMER_REAL, 0)
        if self.watchdog:
            self.watchdog.disarm()

    def run_probes(self, probes, probe_error, inputs, namespace, problem):
        if probe_error:
            self.report["probe_error"] = probe_error
        for probe in probes:
            name = getattr(probe, "name", None)
            if not isinstance(name, str) or not channel.NAME.fullmatch(name):
                self.report.setdefault("probe_error", f"probe with an unusable name {name!r} skipped")
                continue
            record = {"grade_id": getattr(probe, "grade_id", None)}
            self.report["probes"][name] = record
            if problem:
                record.update(status="error", error="not run: " + problem["template"].format(**problem["args"]))
                continue
            self.say({"event": "start", "probe": name})
            entry = inputs.get(name, {})
            arrays = {key: value.copy() for key, value in entry.get("arrays", {}).items()}
            params = json.loads(json.dumps(entry.get("params", {})))   # a fresh copy for each probe
            sink = CappedStream(0)                     # what student code prints during a probe is dropped
            start, cpu = time.perf_counter(), time.process_time()
            status, result = self.guarded(f"probe {name}", lambda: probe.run(namespace, arrays, params),
                                          None, sink, sink)
            record["seconds"] = round(time.perf_counter() - start, 4)
            record["cpu"] = round(time.process_time() - cpu, 4)
            record.update(self.leftovers())
            if status["status"] == "ok":
                try:
                    self.outputs[name] = checked_outputs(result, name)
                except (TypeError, ValueError) as error:
                    status = {"status": "error", "error": describe(error)}
            record.update(status)
            if record["status"] == "ok":
                record["keys"] = sorted(self.outputs[name])
            self.say({"event": "done", "probe": name, "status": record["status"]})

    def write(self):
        """outputs.npz and report.json, built in memory: over the channel when there is one (and nothing else
        is sent), else into ``out``."""
        if os.getpid() != self.pid:
            return
        files = {channel.OUTPUTS_NPZ: channel.encode_outputs(self.outputs),
                 channel.REPORT_JSON: json.dumps(self.report, indent=1, sort_keys=True, default=repr).encode() + b"\n"}
        if self.pipe is None:
            self.out.mkdir(parents=True, exist_ok=True)
            for name, data in files.items():
                (self.out / name).write_bytes(data)
            return
        for name, data in files.items():
            try:
                channel.send_file(self.pipe, name, data)
            except OSError:
                pass


def checked_outputs(result, probe):
    """The probe's result {key: array} as plain arrays; TypeError/ValueError when it is anything else."""
    if type(result) is not dict:
        raise TypeError(f"probe {probe!r} returned {type(result).__name__}, not a dict of arrays")
    checked = {}
    for key, value in result.items():
        channel.check_name(key, f"probe {probe!r} output key")
        checked[key] = channel.check_array(value, f"probe {probe!r} output {key!r}")
    return checked


class ProcessState:
    """Work in ``scratch`` with matplotlib on Agg and the grader's signal handlers; put everything back after."""

    def __init__(self, scratch):
        self.scratch = scratch

    def __enter__(self):
        self.saved = (os.getcwd(), list(sys.argv), sys.stdout, sys.stderr, sys.stdin,
                      signal.getsignal(signal.SIGALRM), sys.getrecursionlimit(), os.environ.get("MPLBACKEND"))
        os.environ["MPLBACKEND"] = "Agg"
        if "matplotlib" in sys.modules:
            sys.modules["matplotlib"].use("Agg", force=True)
        os.chdir(self.scratch)
        sys.argv = [""]
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGALRM, raise_timeout)
        return self

    def __exit__(self, *exc):
        cwd, sys.argv, sys.stdout, sys.stderr, sys.stdin, alarm, limit, backend = self.saved
        os.chdir(cwd)
        if backend is None:                     # in-process runs (tests) must not leak it to later kernels
            os.environ.pop("MPLBACKEND", None)
        else:
            os.environ["MPLBACKEND"] = backend
        sys.setrecursionlimit(limit)
        if threading.current_thread() is threading.main_thread():
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, alarm)
        return False


def raise_timeout(signum, frame):
    raise CellTimeout()


def describe(error):
    """'TypeName: first line of the message' for an exception raised by untrusted code (never raises)."""
    name = type(error).__name__
    try:
        message = channel.clip_message(error)
    except BaseException:  # noqa: B036 -- a hostile __str__ may raise anything
        message = "<message could not be printed>"
    if isinstance(error, SyntaxError) and error.lineno:
        message = f"{error.msg} (line {error.lineno})"
    return f"{name}: {message}" if message else name


def error_line(error, filename):
    """Line of the cell where ``error`` was raised (innermost frame of that cell), or None."""
    line, tb = None, error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def is_memory_error(error):
    if isinstance(error, MemoryError):
        return True
    try:
        text = str(error)
    except BaseException:  # noqa: B036
        return False
    return any(word in text for word in MEMORY_WORDS)


def summary(report):
    """The worst thing that happened in a run that ended normally, as a remark (:mod:`.remarks`: a template and
    its values, which the grader words in the hand-in's language), a text from a lower layer, or None."""
    limits = report.get("limits", {})
    cells = report["cells"]

    def about(template, cell, **args):
        return remark(template, cell["index"], cell.get("grade_id") or None, **args)

    for cell in cells:
        if cell["status"] == "timeout":
            return about(remarks.TIMEOUT, cell, seconds=limits.get("cell_timeout"))
    for cell in cells:
        if cell.get("memory"):
            cap = limits.get("as")
            return (about(remarks.MEMORY_LIMIT, cell, gib=cap / 2**30, error=str(cell.get("error"))) if cap
                    else about(remarks.MEMORY, cell, error=str(cell.get("error"))))
    for cell in cells:
        if cell.get("processes"):
            return about(remarks.PROCESSES, cell, count=limits.get("nproc"), error=str(cell.get("error")))
    for cell in cells:
        if cell.get("still_running"):
            return about(remarks.STILL_RUNNING, cell, count=cell["still_running"])
    for cell in cells:
        if cell.get("killed"):
            return about(remarks.KILLED, cell, count=cell["killed"])
    for cell in cells:
        for name in ("stdout", "stderr"):
            if f"{name}_bytes" in cell:
                return about(remarks.CUT, cell, total=cell[f"{name}_bytes"], stream=name,
                             kept=limits.get("cell_output"))
    if report.get("probe_error"):
        return report["probe_error"]
    return report["remarks"][0] if report["remarks"] else None


# --- command line -------------------------------------------------------------------------------------------

def main(argv=None):
    """Run the notebook, then end the process at once (student threads and atexit hooks never run)."""
    args = command.parse(argv)
    if args.reap and os.geteuid() == 0:
        raise SystemExit("--reap: refused as root (kill(-1) would reach every process root may signal)")
    faulthandler.enable(file=sys.__stderr__)        # a segfault prints which cell's line crashed
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # over the file-size limit: an OSError, not death
    if args.channel is not None:
        os.set_inheritable(args.channel, False)     # no subprocess of the notebook gets the pipe
    if args.reap:
        os.register_at_fork(after_in_child=yield_to_the_runner)
    if args.language:
        os.environ[LANGUAGE_VARIABLE] = args.language  # read by attnkit.i18n when a message is shown
    skip = {int(n) for n in args.skip.split(",") if n.strip().isdigit()}
    runner = Runner(args.scratch, None, args.assignment, args.probes, args.cell_timeout, CELL_OUTPUT,
                    skip, args.channel, grace=args.grace, reap=args.reap)
    code = 0
    try:
        runner.run()
    except BaseException as error:  # noqa: B036 -- the runner's own failure must still leave a report
        code = 1
        runner.report.update(status="runner-error", reason=f"the grader's runner failed: {describe(error)}")
        try:
            runner.write()
        except BaseException:  # noqa: B036
            pass
    for stream in (sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":
    main()

"""The one door to root for sandboxed grading: a root process that runs notebooks in sandboxes, asked by data.

Only root can give each sandbox its own unprivileged uid, its cgroup and the other isolation steps of
:mod:`.bwrap`; the grading itself (the course's ``nbgrader_config.py``, the gradebook, the judge, the
reports, ``grades/``, ``autograded/``) runs as the instructor. Between them is this door:

    sudo -n PREFIX/sbin/attnkit-sandbox     (a sudoers rule lets the instructors' group run it, no arguments)

The program (:func:`main`, ``--serve``) reads requests on stdin and answers on stdout, one at a time, until
stdin ends. A request is data only: the name of an installed assignment, a few numbers (cell timeout,
grace, cells to skip, resource limits no higher than the door's own) and the files of one scratch folder
under fixed names (the notebook, the probe inputs, the release's cell types). The door validates all of it
(:func:`parse_request`), writes the files into a scratch folder of its own, runs the runner in a sandbox
under a uid it chose, and answers with the sandbox's result: exit status, flags, stdout, stderr and the files
the runner sent, all of it bytes for the grading process to read as hostile, as before.

What the door never does: take a path, a command, a module name or a callable from the request; read the
instructor's course folder or their ``nbgrader_config.py``; write anywhere but its own state folder; import
code from a folder the instructor can write (``python -I``, and :func:`check_trusted_code` refuses to serve
if any loaded module or any folder on ``sys.path`` could be changed by a user other than root).

The instructor's side is :class:`Door`: one session (one door process) per grading worker, with the
``launch(job, scratch_dir, limits)`` of a :class:`~.bwrap.Sandbox`, so :mod:`.notebook_run` and the
sandboxed autograder use either. ``attnkit`` on the hub (PREFIX/bin/attnkit) names the door in
:data:`DOOR_VARIABLE`; elsewhere the grading process starts bubblewrap itself, as before.
"""

import argparse
import collections
import dataclasses
import io
import json
import math
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from attnkit_sandbox import channel, installed
from attnkit_sandbox.cells import EXPECTED, MAX_NOTEBOOK_BYTES, NOTEBOOK
from attnkit_sandbox.command import CELL_TIMEOUT, LANGUAGES, STUCK_GRACE

from .bwrap import SandboxResult
from . import slots
from .limits import Limits, worker_uid
from .reaping import reap
from ..results import Message

DOOR_VARIABLE = "ATTNKIT_SANDBOX_DOOR"   # the door program, for the grading process (set by PREFIX/bin/attnkit)
MAGIC = b"attnkit-door/1"
REQUEST = "request.json"
RESULT = "result.json"
STREAMS = ("stdout", "stderr")
MAX_FRAMES = 32
MAX_HEADER = 200                               # bytes of a header line
# What a request may carry besides request.json, with the most bytes of each.
FILE_LIMITS = {NOTEBOOK: MAX_NOTEBOOK_BYTES, channel.INPUTS_NPZ: 128 * 2**20,
               channel.INPUTS_JSON: 2**20, EXPECTED: 2**20, REQUEST: 64 * 2**10}
MAX_SKIP = 1000
MAX_GRACE = 60.0
CEILING = Limits()                             # no request may ask for more than the door's defaults


class RequestError(ValueError):
    """A request the door refuses; the message names what is wrong (sent back to the grading process)."""


class DoorError(RuntimeError):
    """The grading process could not get an answer from the door (not installed, refused by sudo, died)."""


# --- framing ----------------------------------------------------------------------------------------------

def write_message(stream, frames):
    """Write ``frames`` [(name, bytes)] as one message: a header line, then each frame's 'NAME LENGTH' and bytes."""
    stream.write(MAGIC + b" %d\n" % len(frames))
    for name, data in frames:
        channel.check_name(name, "frame name")
        stream.write(f"{name} {len(data)}\n".encode("ascii"))
        stream.write(data)
    stream.flush()


def read_message(stream, limits=None, max_total=None):
    """[(name, bytes)] of the next message on ``stream``, or None at the end of the stream.

    ``limits``: {name: most bytes} (a name not in it is refused); ``max_total``: most bytes in all.
    Raises RequestError on anything malformed; the stream cannot be trusted to be in step after that.
    """
    header = read_line(stream, allow_eof=True)
    if header is None:
        return None
    parts = header.split(b" ")
    if len(parts) != 2 or parts[0] != MAGIC or not parts[1].isdigit() or int(parts[1]) > MAX_FRAMES:
        raise RequestError(f"not a door message (header {header[:40]!r})")
    frames, total = [], 0
    for _ in range(int(parts[1])):
        line = read_line(stream).decode("ascii", "replace").split(" ")
        if len(line) != 2 or not channel.NAME.fullmatch(line[0]) or not line[1].isdigit():
            raise RequestError(f"garbled frame header {' '.join(line)[:80]!r}")
        name, length = line[0], int(line[1])
        if limits is not None and name not in limits:
            raise RequestError(f"file {name!r}: not one the runner reads (expected one of {sorted(limits)})")
        if limits is not None and length > limits[name]:
            raise RequestError(f"file {name!r}: {length} bytes, over its limit of {limits[name]}")
        total += length
        if max_total is not None and total > max_total:
            raise RequestError(f"request: over {max_total} bytes in all")
        data = read_exactly(stream, length)
        frames.append((name, data))
    return frames


def read_line(stream, allow_eof=False):
    line = stream.readline(MAX_HEADER + 1)
    if not line and allow_eof:
        return None
    if not line.endswith(b"\n"):
        raise RequestError("message cut short, or a header line over its length limit")
    return line[:-1]


def read_exactly(stream, length):
    data = stream.read(length)
    if data is None or len(data) != length:
        raise RequestError("message cut short")
    return data


# --- the root side ----------------------------------------------------------------------------------------

def installed_assignments():
    """Names of the assignments whose probes the installed grader holds (the only names a request may give)."""
    from .staging import package_dir
    return installed.assignments(package_dir(installed.PACKAGE))


def parse_request(frames, assignments):
    """(RunnerJob, {file name: bytes}, Limits without a uid) of a request, or RequestError naming the problem."""
    from .notebook_run import RunnerJob
    files = dict(frames)
    if len(files) != len(frames):
        raise RequestError("request: a file is sent twice")
    if REQUEST not in files or NOTEBOOK not in files:
        raise RequestError(f"request: expected {REQUEST} and {NOTEBOOK}, got {sorted(files)}")
    try:
        fields = json.loads(files.pop(REQUEST).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise RequestError(f"{REQUEST}: not JSON") from None
    if not isinstance(fields, dict):
        raise RequestError(f"{REQUEST}: expected an object")
    unknown = set(fields) - {"assignment", "cell_timeout", "grace", "skip", "limits", "language"}
    if unknown:
        raise RequestError(f"{REQUEST}: unknown fields {sorted(unknown)} (a door takes no paths, commands or modules)")
    assignment = fields.get("assignment")
    if not isinstance(assignment, str) or not installed.NAME.fullmatch(assignment) or assignment not in assignments:
        raise RequestError(f"assignment: expected one of the installed assignments {assignments}, got {assignment!r}")
    limits = parse_limits(fields.get("limits", {}))
    cell_timeout = number(fields.get("cell_timeout", CELL_TIMEOUT), "cell_timeout", 0.0, limits.wall_seconds)
    grace = number(fields.get("grace", STUCK_GRACE), "grace", 0.0, MAX_GRACE, allow_zero=True)
    skip = fields.get("skip", [])
    if not isinstance(skip, list) or len(skip) > MAX_SKIP or not all(
            type(n) is int and 1 <= n <= 10**6 for n in skip):
        raise RequestError(f"skip: expected at most {MAX_SKIP} cell numbers from 1, got {str(skip)[:80]}")
    language = fields.get("language")
    if language is not None and language not in LANGUAGES:
        raise RequestError(f"language: expected one of {list(LANGUAGES)}, got {str(language)[:40]!r}")
    return RunnerJob(assignment, cell_timeout, grace, tuple(skip), language=language), files, limits


def number(value, name, low, high, allow_zero=False):
    if type(value) not in (int, float) or not math.isfinite(value) or not (
            low <= value <= high if allow_zero else low < value <= high):
        raise RequestError(f"{name}: expected a number in {'[' if allow_zero else '('}{low:g}, {high:g}], got {value!r}")
    return float(value)


def parse_limits(values):
    """The request's limits, each at most the door's own (CEILING) and positive; never a uid."""
    if not isinstance(values, dict):
        raise RequestError("limits: expected an object")
    fields = {f.name: f for f in dataclasses.fields(Limits) if f.name != "uid"}
    unknown = set(values) - set(fields)
    if unknown:
        raise RequestError(f"limits: unknown or refused fields {sorted(unknown)} (the door chooses the uid)")
    chosen = {}
    for name, value in values.items():
        ceiling = getattr(CEILING, name)
        kinds = (int,) if isinstance(ceiling, int) else (int, float)
        if type(value) not in kinds or not math.isfinite(value) or not 0 < value <= ceiling:
            raise RequestError(f"limits.{name}: expected a {'whole ' if kinds == (int,) else ''}number in "
                               f"(0, {ceiling}], got {value!r}")
        chosen[name] = value
    return dataclasses.replace(CEILING, **chosen)


def result_frames(result):
    """The reply to a request that ran: result.json, stdout, stderr, then the files the runner sent."""
    fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(SandboxResult)
              if f.name not in ("stdout", "stderr", "files")}
    fields["reason"] = result.reason.to_json() if result.reason is not None else None     # a Message
    names = list(result.files)
    header = json.dumps({"error": None, "result": fields, "files": names}).encode("utf-8")
    return [(RESULT, header), ("stdout", result.stdout), ("stderr", result.stderr)] + \
        [(name, result.files[name]) for name in names]


def error_frames(message):
    return [(RESULT, json.dumps({"error": str(message)[:2000]}).encode("utf-8"))]


def serve(requests, replies, state_dir):
    """Answer requests until ``requests`` ends (see the module's docstring); return an exit status."""
    from .staging import stage_packages
    from .warm import launcher
    state_dir = Path(state_dir)
    work = private_dir(state_dir / f"run-{os.getpid()}")
    ((slot, lock),) = slots.claim(1)
    assignments = installed_assignments()
    box = None
    budget = sum(FILE_LIMITS.values())
    try:
        while True:
            try:
                frames = read_message(requests, FILE_LIMITS, budget)
            except RequestError as error:               # out of step: say why and stop
                write_message(replies, error_frames(error))
                return 2
            if frames is None:
                return 0
            try:
                job, files, limits = parse_request(frames, assignments)
            except RequestError as error:
                write_message(replies, error_frames(error))
                continue
            if box is None:                             # warm: one zygote for this session (a grading worker)
                box = launcher(stage_packages(private_dir(work / "public", mode=0o755)), CEILING)
            result = run_request(box, job, files, dataclasses.replace(limits, uid=worker_uid(slot)), work)
            write_message(replies, result_frames(result))
    finally:
        if box is not None:
            box.close()
        lock.close()
        shutil.rmtree(work, ignore_errors=True)


def run_request(launcher, job, files, limits, work):
    """The SandboxResult of a parsed request: its ``files`` written into a scratch folder of ``work`` (removed
    after), and ``job`` run over it by ``launcher`` (a :class:`~.bwrap.Sandbox`, a
    :class:`~.warm.WarmSandbox`, or a :class:`Door`)."""
    scratch = Path(tempfile.mkdtemp(prefix="job-", dir=work))
    try:
        for name, data in files.items():
            (scratch / name).write_bytes(data)
        return launcher.launch(job, scratch, limits)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def private_dir(path, mode=0o700):
    """``path`` made afresh as root's own folder (a link or anything else there is removed first)."""
    path = Path(path)
    if path.is_symlink() or path.exists():
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    path.mkdir(mode=0o700, parents=True)
    path.chmod(mode)
    return path


def check_trusted_code(paths=None, modules=None):
    """Raise PermissionError unless no user but root could change the code the door runs: every folder on
    ``paths`` (default: sys.path) and every file of ``modules`` (default: the loaded modules'), each folder
    above them, and what their links lead to, must belong to root and be writable by no one else.

    Above a sys.path folder or a module's own folder, a folder others may write is accepted with the sticky
    bit (e.g. /tmp holding root's checkout): nobody else can rename or replace root's folder in it. Where the
    door runs as another user (tests), that user stands for root.
    """
    me = os.geteuid()
    if paths is None:
        paths = sys.path
    if modules is None:
        modules = [getattr(m, "__file__", None) for m in list(sys.modules.values())]
    # (place, how many levels from it must be closed to others: a path folder itself, a module and its folder)
    places = [(p, 0) for p in paths if p] + [(f, 1) for f in modules if isinstance(f, str)]
    checked = set()
    for place, strict in places:
        for chain in (Path(os.path.abspath(place)), Path(os.path.realpath(place))):
            while not os.path.lexists(chain):        # a folder yet to be made: whoever may make it decides
                chain, strict = chain.parent, 0
            for level, item in enumerate([chain, *chain.parents]):
                key = (item, level <= strict)
                if key in checked:
                    continue
                checked.add(key)
                info = os.lstat(item)
                if info.st_uid not in (0, me):
                    raise PermissionError(f"{item} belongs to uid {info.st_uid}: the door runs no code another user owns")
                sticky = stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX
                if info.st_mode & 0o022 and not stat.S_ISLNK(info.st_mode) and (level <= strict or not sticky):
                    raise PermissionError(f"{item} may be changed by other users: the door runs no code from it")


def main(argv=None):
    """The door program: ``--serve --state DIR``; runs as root (through sudo), reads requests on stdin."""
    parser = argparse.ArgumentParser(prog="attnkit-sandbox", description=__doc__.splitlines()[0])
    parser.add_argument("--serve", action="store_true", help="answer requests on stdin until it ends")
    parser.add_argument("--state", type=Path, required=True, help="the door's own folder (root only)")
    args = parser.parse_args(argv)
    os.umask(0o077)
    os.environ.clear()
    os.environ.update(PATH="/usr/sbin:/usr/bin:/sbin:/bin", LANG="C.UTF-8", HOME=str(args.state),
                      MPLCONFIGDIR=str(args.state / "matplotlib"))
    args.state.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(args.state)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise SystemExit(f"--state: {args.state} must be a folder of this user's own, closed to everyone else")
    os.chdir(args.state)
    replies = os.fdopen(os.dup(1), "wb")          # the protocol's own stdout; print() goes to stderr
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    try:
        check_trusted_code()
    except PermissionError as error:
        write_message(replies, error_frames(f"the door refuses to run: {error}"))
        return 2
    if not args.serve:
        return 0
    return serve(requests, replies, args.state)


# --- the grading process's side ---------------------------------------------------------------------------

class Door:
    """One session with the door (one door process), used by one grading worker at a time.

    ``program``: the door (PREFIX/sbin/attnkit-sandbox); started through ``sudo -n`` unless this process is
    root. ``launch`` has the signature of :meth:`.bwrap.Sandbox.launch`.
    """

    def __init__(self, program, limits=None):
        self.program = str(program)
        self.limits = limits or Limits()
        self.process = None
        self.errors = collections.deque(maxlen=40)

    def command(self):
        return [self.program] if os.geteuid() == 0 else ["sudo", "-n", self.program]

    def start(self):
        self.errors.clear()
        try:
            self.process = subprocess.Popen(self.command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE)
        except OSError as error:
            raise DoorError(f"the sandbox door {self.program} could not be started: {error}") from None
        threading.Thread(target=self._drain, args=(self.process.stderr,), daemon=True).start()

    def _drain(self, stream):
        for line in iter(stream.readline, b""):
            self.errors.append(line.decode("utf-8", "replace").rstrip())

    def launch(self, job, scratch_dir, limits=None):
        frames = request_frames(job, scratch_dir, limits or self.limits)
        if self.process is None or self.process.poll() is not None:
            self.start()
        try:
            write_message(self.process.stdin, frames)
            reply = read_message(self.process.stdout)
        except (OSError, RequestError) as error:
            self.close()
            raise DoorError(f"the sandbox door stopped answering ({error}){self.why()}") from None
        if reply is None:
            self.close()
            raise DoorError(f"the sandbox door ended without an answer{self.why()}")
        return parse_reply(reply)

    def why(self):
        """': what the door (or sudo) last said on stderr', or ''."""
        said = [line for line in self.errors if line.strip()]
        return f": {' / '.join(said[-3:])}" if said else ""

    def close(self):
        if self.process is None:
            return
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass
        reap(self.process, grace=30)
        self.process = None


def request_frames(job, scratch_dir, limits):
    """The request for ``job`` (a :class:`~.notebook_run.RunnerJob`) over the runner's files in ``scratch_dir``:
    its name and numbers (``limits`` without the uid, which the answering side chooses) and those files' bytes."""
    if job.probes:
        raise ValueError("job: a door runs an installed assignment's own probes only")
    fields = {"assignment": job.assignment, "cell_timeout": job.cell_timeout, "grace": job.grace,
              "skip": list(job.skip), "language": job.language,
              "limits": {f.name: getattr(limits, f.name) for f in dataclasses.fields(Limits) if f.name != "uid"}}
    frames = [(REQUEST, json.dumps(fields).encode("utf-8"))]
    for name in FILE_LIMITS:
        path = Path(scratch_dir) / name
        if name != REQUEST and path.is_file():
            frames.append((name, path.read_bytes()))
    return frames


def encode(frames):
    """One message of ``frames`` as bytes (what :func:`write_message` writes on a stream)."""
    stream = io.BytesIO()
    write_message(stream, frames)
    return stream.getvalue()


def decode(data, limits=None, max_total=None):
    """The frames of the one message ``data`` holds (:func:`read_message`'s checks); RequestError if it holds
    anything else, or more than that message."""
    if not isinstance(data, bytes):
        raise RequestError(f"message: expected bytes, got {type(data).__name__}")
    stream = io.BytesIO(data)
    frames = read_message(stream, limits, max_total)
    if frames is None or stream.read(1):
        raise RequestError("message: expected exactly one door message")
    return frames


def parse_reply(frames):
    """The SandboxResult of the door's reply; DoorError when the door refused the request."""
    if not frames or frames[0][0] != RESULT:
        raise DoorError("the sandbox door answered without a result")
    try:
        header = json.loads(frames[0][1].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise DoorError("the sandbox door's result is not JSON") from None
    if header.get("error"):
        raise DoorError(f"the sandbox door refused the request: {header['error']}")
    names = header.get("files", [])
    if [name for name, _ in frames[1:]] != [*STREAMS, *names]:
        raise DoorError("the sandbox door's reply does not hold the files it lists")
    data = dict(frames[1:])
    known = {f.name for f in dataclasses.fields(SandboxResult)} - {"stdout", "stderr", "files"}
    fields = {k: v for k, v in header.get("result", {}).items() if k in known}
    if fields.get("reason") is not None:
        try:
            fields["reason"] = Message.from_json(fields["reason"])
        except ValueError:
            raise DoorError("the sandbox door's result holds a reason that is not a message") from None
    return SandboxResult(**fields, stdout=data["stdout"], stderr=data["stderr"], files={n: data[n] for n in names})


def configured():
    """The door named by :data:`DOOR_VARIABLE`, or None (then the grading process runs bubblewrap itself)."""
    program = os.environ.get(DOOR_VARIABLE, "").strip()
    return program or None


if __name__ == "__main__":
    sys.exit(main())

"""nbgrader's file-system exchange, from the instructor's side, trusting nothing students wrote.

    attnkit collect ASSIGNMENT [--exchange DIR] [--tolerance SECONDS]
    attnkit release-feedback ASSIGNMENT [--exchange DIR]

``nbgrader collect`` believes the hand-in's name (``STUDENT+ASSIGNMENT+TIMESTAMP+RANDOM``) and the
``timestamp.txt`` inside it, both written by the student: it only warns when the folder's owner is not the
student it names, and anyone can write an earlier (or later) time into ``timestamp.txt``. This step
refuses instead of warning:

- a hand-in whose folder, or anything in it, is not owned by the student it names (submitting as
  someone else), or that holds a symbolic link, a hard link or anything but folders and plain files
  (a way to hand in a file the student cannot read, e.g. the instructor's);
- a student who is not enrolled in the gradebook;
- a hand-in whose time, in its name or in ``timestamp.txt``, is not the time the file system recorded:
  the latest status change (``st_ctime``) of the folder and of everything in it. Nobody but root can set
  a ctime, and every write, rename or chmod moves it forward, so a backdated or postdated
  ``timestamp.txt``, or a hand-in changed after it was made, is refused.

Hand-ins of the assignment's language editions (``ASSIGNMENT_fr``, ``ASSIGNMENT_zh``: the same notebook,
translated; see :mod:`.editions`) are hand-ins of the assignment. Of each student's accepted hand-ins, in
whatever language, the latest is copied into ``submitted/STUDENT/ASSIGNMENT/`` (replacing an older one
there), with ``timestamp.txt`` rewritten from the file system's time: that is the time the grader's late
penalty reads. Refused hand-ins stay in the exchange, listed with their reasons.

``release-feedback`` is ``nbgrader generate_feedback`` then ``nbgrader release_feedback``, the pages made
complete offline in between (:mod:`.offline`: formulas typeset to SVG, no script, no request), with the two
files nbgrader's release step reads from each feedback folder (``timestamp.txt`` and
``submission_secret.txt``, which names the page in the exchange) put there from submitted/: the sandboxed
grader's autograded copies hold only the notebook, so plain nbgrader would stop at the first student.
"""

import datetime
import json
import logging
import os
import pwd
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.api import MissingEntry
from nbgrader.utils import parse_utc

from . import editions, offline
from .course import NothingToDo, use_venv_tools
from .files import remove
from .releases import NbgraderError

log = logging.getLogger(__name__)

TIMESTAMP = "timestamp.txt"
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f %Z"     # nbgrader's own (Exchange.timestamp_format), in UTC
SECRET = "submission_secret.txt"
RECORD = "collect.json"                           # written by collect into each submission: see copy_handin
TOLERANCE = 60.0                                  # seconds between nbgrader submit's clock and its last write


@dataclass
class Handin:
    """One folder in the exchange's inbound, and what this step made of it."""

    path: Path
    student: str = None                 # as the name says
    edition: str = None                 # the assignment's name in the exchange: the graded one or a translation
    claimed: datetime.datetime = None   # the time in the name (UTC, naive)
    recorded: datetime.datetime = None  # the file system's time: latest ctime in the folder (UTC, naive)
    problems: list = field(default_factory=list)

    @property
    def accepted(self):
        return not self.problems


@dataclass
class Collection:
    """What :func:`collect` did: the hand-ins it copied, kept (not newer) and refused."""

    assignment: str
    collected: list = field(default_factory=list)
    kept: list = field(default_factory=list)
    refused: list = field(default_factory=list)

    def text(self):
        lines = [f"{self.assignment}: {len(self.collected)} collected, {len(self.kept)} already collected, "
                 f"{len(self.refused)} refused"]
        lines += [f"  collected {h.student} ({stamp(h.recorded)}{language(self.assignment, h.edition)}) from "
                  f"{h.path.name}" for h in self.collected]
        lines += [f"  refused {h.path.name}: {'; '.join(h.problems)}" for h in self.refused]
        return "\n".join(lines)


def collect(course, assignment, exchange_root, tolerance=TOLERANCE, owner_name=None, students=None, update=True,
            before_duedate=False):
    """Collect ``assignment``'s hand-ins from ``exchange_root``/COURSE_ID/inbound into the course's submitted/.

    ``course`` is a :class:`~attnkit_grader.course.Course`; ``tolerance``: seconds a hand-in's stated time
    may differ from the file system's; ``owner_name``: uid -> user name (default: the password database);
    ``students``: collect only these (default: everyone); ``update``: replace a submission already in
    submitted/ by a newer hand-in (nbgrader's ``--update``); ``before_duedate``: of each student's hand-ins,
    take the latest made by the due date, or the latest if none was (nbgrader's ``--before-duedate``).
    Returns a :class:`Collection`.
    """
    if tolerance < 0:
        raise ValueError(f"tolerance: expected seconds >= 0, got {tolerance}")
    course.check_assignments([assignment])
    names = set(course.editions(assignment).values())
    inbound = Path(exchange_root) / course.course_id / "inbound"
    if not inbound.is_dir():
        raise FileNotFoundError(f"exchange: no inbound folder {inbound} (release an assignment first)")
    owner_name = owner_name or user_name
    enrolled = enrolled_students(course)
    due = due_date(course, assignment) if before_duedate else None
    result = Collection(assignment)
    accepted = {}
    for path in sorted(inbound.iterdir()):
        edition = path.name.split("+")[1:2]
        if not edition or edition[0] not in names:
            continue
        if students is not None and path.name.split("+")[0] not in students:
            continue
        handin = inspect(path, edition[0], owner_name, tolerance)
        if handin.accepted and handin.student not in enrolled:
            handin.problems.append(f"{handin.student} is not enrolled in the gradebook")
        if handin.accepted:
            accepted.setdefault(handin.student, []).append(handin)
        else:
            result.refused.append(handin)
    for student, handins in sorted(accepted.items()):
        handin = chosen(handins, due)
        target = course.assignment_dir("submitted", assignment, student)
        if not replaces(recorded_time(target), handin.recorded, update, before_duedate):
            result.kept.append(handin)
            continue
        try:
            copy_handin(handin, target, assignment)
        except OSError as error:            # a file made unreadable after it was inspected
            handin.problems.append(f"could not be copied: {error}")
            result.refused.append(handin)
            continue
        result.collected.append(handin)
    for handin in result.refused:
        log.info("refused %s: %s", handin.path, "; ".join(handin.problems))
    return result


def replaces(existing, new, update, before_duedate):
    """Whether a hand-in made at ``new`` replaces the submission made at ``existing`` (None: there is none), as
    nbgrader's collect decides: a newer one with ``update``, any other one with ``before_duedate``."""
    if existing is None:
        return True
    if existing == new:
        return False
    return before_duedate or (update and new > existing)


def chosen(handins, due=None):
    """The latest of one student's accepted hand-ins; with a due date, the latest made by then if any."""
    in_time = [h for h in handins if due is not None and h.recorded <= due]
    return max(in_time or handins, key=lambda h: h.recorded)


def due_date(course, assignment):
    """The assignment's due date in the gradebook (naive UTC), or None."""
    use_venv_tools()
    with course.gradebook() as gradebook:
        try:
            return gradebook.find_assignment(assignment).duedate
        except MissingEntry:
            return None


def release_feedback(course, assignment, exchange_root):
    """Feedback pages of ``assignment`` generated, made complete offline (:mod:`.offline`: formulas typeset, no
    script, no request) and released to ``exchange_root``; returns ({student: page}, [students without a page,
    with why], whether every formula was typeset). Raises NbgraderError when nbgrader fails."""
    course.check_assignments([assignment])
    if not graded_students(course, assignment):
        raise NothingToDo(f"{assignment}: nothing graded yet, so no feedback to release (grade it first: "
                          f"attnkit grade {assignment})")
    if not (Path(exchange_root) / course.course_id).is_dir():
        raise FileNotFoundError(f"exchange: no course folder {Path(exchange_root) / course.course_id}")
    api = course.api(**{"Exchange.root": str(exchange_root)})
    nbgrader_step(api.generate_feedback(assignment), "generate_feedback")      # finished by offline's exporter
    pages = sorted(course.step_dir("feedback").glob(f"*/{assignment}/*.html"))
    typeset = all(offline.typeset_in(page) for page in pages)
    released, skipped = {}, []
    for page in pages:
        student = page.parent.parent.name
        submitted = course.assignment_dir("submitted", assignment, student)
        if not (submitted / SECRET).is_file() or recorded_time(submitted) is None:
            skipped.append(f"{student}: no {SECRET} or {TIMESTAMP} in {submitted} (not handed in through the exchange)")
            page.unlink()
            continue
        for name in (TIMESTAMP, SECRET):
            shutil.copyfile(submitted / name, page.parent / name)
        released[student] = page
    nbgrader_step(api.release_feedback(assignment), "release_feedback")
    return released, skipped, typeset


def graded_students(course, assignment):
    """The students with a graded submission of ``assignment`` in the gradebook, sorted (none without one)."""
    if course.db_url.startswith("sqlite:///") and not Path(course.db_url.removeprefix("sqlite:///")).is_file():
        return []                                       # never create an empty gradebook to look into it
    with course.gradebook() as gradebook:
        try:
            found = gradebook.find_assignment(assignment)
        except MissingEntry:
            return []
        return sorted(submission.student.id for submission in found.submissions)


def nbgrader_step(result, name):
    if not result.get("success"):
        raise NbgraderError(f"nbgrader {name} failed: {result.get('error') or result.get('log')}")


def inspect(path, assignment, owner_name, tolerance):
    """A :class:`Handin` for the folder ``path``, with every reason to refuse it in ``problems``."""
    handin = Handin(Path(path), edition=assignment)
    parts = handin.path.name.split("+")
    if len(parts) not in (3, 4) or parts[1] != assignment or not parts[0]:
        handin.problems.append(f"not an nbgrader hand-in name (STUDENT+{assignment}+TIME[+RANDOM])")
        return handin
    handin.student = parts[0]
    try:
        handin.claimed = parse_utc(parts[2])
    except (ValueError, OverflowError):
        handin.problems.append(f"the time in its name, {parts[2]!r}, is not a time")
        return handin
    info = os.lstat(handin.path)
    if not stat.S_ISDIR(info.st_mode):
        handin.problems.append("not a folder (a link or a file)")
        return handin
    ctimes = [info.st_ctime]
    entries = [(handin.path, info)]
    unreadable = []
    for folder, folders, files in os.walk(handin.path, onerror=unreadable.append):
        for name in folders + files:
            entry = Path(folder) / name
            entries.append((entry, os.lstat(entry)))
            ctimes.append(entries[-1][1].st_ctime)
    owners = {}
    for entry, entry_info in entries:
        where = entry.relative_to(handin.path)
        owner = owner_name(entry_info.st_uid)
        if owner != handin.student:
            owners.setdefault(owner, []).append("the folder" if where == Path(".") else str(where))
        if not (stat.S_ISDIR(entry_info.st_mode) or stat.S_ISREG(entry_info.st_mode)):
            handin.problems.append(f"{where} is a link or a special file; hand in plain files")
        elif stat.S_ISREG(entry_info.st_mode) and entry_info.st_nlink > 1:
            handin.problems.append(f"{where} is a hard link; hand in plain files")
    for owner, places in owners.items():
        handin.problems.append(f"owned by {owner}, not by {handin.student} ({', '.join(places[:4])}"
                               f"{f' and {len(places) - 4} more' if len(places) > 4 else ''})")
    for error in unreadable:
        handin.problems.append(f"{Path(error.filename).relative_to(handin.path.parent)} cannot be read by the "
                               "instructor; hand in readable files")
    handin.recorded = datetime.datetime.fromtimestamp(max(ctimes), datetime.timezone.utc).replace(tzinfo=None)
    written = read_time(handin.path / TIMESTAMP)
    if written is None:
        handin.problems.append(f"no readable {TIMESTAMP}")
    elif written != handin.claimed:
        handin.problems.append(f"{TIMESTAMP} says {stamp(written)}, its name says {stamp(handin.claimed)}")
    drift = (handin.claimed - handin.recorded).total_seconds()
    if abs(drift) > tolerance:
        when = "before" if drift < 0 else "after"
        handin.problems.append(f"its stated time {stamp(handin.claimed)} is {abs(drift):.0f} s {when} the file "
                               f"system's {stamp(handin.recorded)} (backdated, postdated or changed later)")
    return handin


def copy_handin(handin, target, assignment):
    """Copy the accepted hand-in to ``target`` (replacing what is there), timestamp.txt from the file system,
    and :data:`RECORD`: where it came from, in which edition, when."""
    staging = target.with_name(f".{target.name}.collecting")
    remove(staging)
    staging.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(handin.path, staging, symlinks=True, copy_function=shutil.copyfile)
    for folder, _, files in os.walk(staging):     # the course's, not the exchange's world-writable modes
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    (staging / TIMESTAMP).write_text(stamp(handin.recorded), encoding="utf-8")
    record = {"student": handin.student, "assignment": assignment, "edition": handin.edition,
              "language": editions.split(handin.edition, {assignment})[1], "handin": handin.path.name,
              "time": stamp(handin.recorded)}
    (staging / RECORD).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    remove(target)
    staging.rename(target)


def language(assignment, edition):
    """', LANG edition' for a hand-in of a language edition of ``assignment``, '' for the graded one itself."""
    return f", {edition[len(assignment) + 1:]} edition" if edition and edition != assignment else ""


def stamp(moment):
    """nbgrader's timestamp text of the naive UTC datetime ``moment``."""
    return moment.replace(tzinfo=datetime.timezone.utc).strftime(TIMESTAMP_FORMAT)


def read_time(path):
    """The UTC time in the timestamp file ``path``, or None when missing or not a time."""
    try:
        text = Path(path).read_text(encoding="utf-8").strip()
        return parse_utc(text) if text else None
    except (OSError, ValueError, OverflowError):
        return None


def recorded_time(folder):
    """The time of the submission already in ``folder`` (submitted/...), or None."""
    return read_time(Path(folder) / TIMESTAMP) if Path(folder).is_dir() else None


def enrolled_students(course):
    use_venv_tools()                    # a new gradebook is made by the alembic script
    with course.gradebook() as gradebook:
        return {student.id for student in gradebook.students}


def user_name(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"

"""Reading a class roster for the hub's enrolment: Canvas's gradebook export, Moodle's grade export, or a plain CSV.

Run as root with the system's Python, like hub/course.py (``make hub-enrol ROSTER=file.csv``, or
``python3 hub/enrol.py ROSTER.csv [--remove-demo]``). Every row of the roster becomes a student with an account
name, first and last names, an email and an LMS id:

- Canvas (Grades > Export): the account is ``SIS Login ID``, the LMS id is Canvas's ``ID`` (what the kit's
  Canvas export matches by default), the names come from ``Student`` ("Last, First") or ``LastName`` and
  ``FirstName``; the ``Points Possible`` and ``Manual Posting`` rows and Canvas's test student are left out;
- Moodle (Grades > Export > Plain text file): the account is ``Username`` or, without it, the email's part
  before ``@``; the LMS id is ``ID number``;
- a plain CSV with nbgrader's student columns: ``id`` (the account), ``first_name``, ``last_name``, ``email``,
  ``lms_user_id``.

A row is refused, by its line number, when its account name is not a plain Unix name (letters, digits, ``_``
and ``-``, starting with a letter or ``_``, at most 32 characters: no shell metacharacters, no path separator),
names a reserved account (``root``, the instructor) or an existing system account, or repeats another row's
account or LMS id; or when a name holds a character an account's comment field cannot (``:``, ``,``, ``=``,
a control character). A refused row stops the whole roster: nothing is enrolled.

Enrolling (``apply``): each student's Unix account is created (home 0700, the edition's lectures in ~/course,
the group ``attnkit-students`` that the hub's PAM login allows, the names as the account's comment) with a
random first password, appended to PREFIX/state/first-passwords.csv (root only; never printed) for the
instructor to hand out; an existing account keeps its password and gets the names and the group. The
course's ``students.csv`` gains every student's fields and nbgrader's gradebook imports it, so the Formgrader
shows names and the LMS exports match on the LMS ids. ``--remove-demo`` removes the demo accounts
(student1-3), their homes and their gradebook entries. Running it again with the same roster changes nothing.
"""

import argparse
import csv
import io
import os
import re
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ACCOUNT = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
RESERVED = {"root", "instructor", "nobody"}
FIRST_UID = 1000            # Debian's first ordinary account; below it (and nobody's 65534) are the system's
NAME_FORBIDDEN = re.compile(r"[:,=\x00-\x1f\x7f]")
PLAIN = ("id", "first_name", "last_name", "email", "lms_user_id")
STUDENTS_GROUP = "attnkit-students"      # hub/jupyterhub_config.py lets this group log in
PASSWORD_LETTERS = "abcdefghjkmnpqrstuvwxyz23456789"   # no 0/o, 1/l/i: read aloud or copied by hand


class RosterError(ValueError):
    """A roster that cannot be enrolled; the message names the file and every refused row."""


@dataclass(frozen=True)
class Enrolee:
    """One student of a roster: the Unix account and nbgrader's student fields."""

    id: str
    first_name: str = ""
    last_name: str = ""
    email: str = ""
    lms_user_id: str = ""
    line: int = 0


def sniff(text):
    """The delimiter of the roster's first line: the most frequent of , ; tab."""
    first = text.split("\n", 1)[0]
    return max((",", ";", "\t"), key=first.count)


def cells(row, header, *names):
    """The first of ``names`` present in ``header``, stripped, from ``row``; '' when none is."""
    for name in names:
        if name in header:
            index = header.index(name)
            return row[index].strip() if index < len(row) else ""
    return ""


def canvas_rows(header, rows):
    """Enrolees of Canvas's gradebook export."""
    for line, row in rows:
        first_cell = row[0].strip() if row else ""
        if not first_cell or first_cell in ("Points Possible", "Student, Test") or first_cell.startswith("Manual"):
            continue
        last, first = cells(row, header, "LastName"), cells(row, header, "FirstName")
        if "Student" in header:
            last, _, first = cells(row, header, "Student").partition(",")
        yield Enrolee(cells(row, header, "SIS Login ID"), first.strip(), last.strip(), "",
                      cells(row, header, "ID"), line)


def moodle_rows(header, rows):
    """Enrolees of Moodle's grade export."""
    for line, row in rows:
        email = cells(row, header, "Email address")
        account = cells(row, header, "Username") or email.partition("@")[0]
        yield Enrolee(account, cells(row, header, "First name"), cells(row, header, "Last name"), email,
                      cells(row, header, "ID number"), line)


def plain_rows(header, rows):
    """Enrolees of a plain CSV with nbgrader's student columns."""
    for line, row in rows:
        yield Enrolee(*(cells(row, header, name) for name in PLAIN), line)


def kind(header):
    """'canvas', 'moodle' or 'plain' from the header; None when it is none of them."""
    if "SIS Login ID" in header and "ID" in header:
        return "canvas"
    if "First name" in header and "Last name" in header and ("Email address" in header or "Username" in header):
        return "moodle"
    if "id" in header:
        return "plain"
    return None


def read(path, existing_uid=None):
    """[Enrolee] of the roster at ``path`` (argument 'ROSTER'), checked; RosterError naming each refused row.

    ``existing_uid(name)``: the uid of an existing account ``name``, or None (default: the machine's accounts)."""
    if existing_uid is None:
        existing_uid = machine_uid
    try:
        text = open(path, encoding="utf-8-sig", newline="").read()
    except (OSError, UnicodeDecodeError) as error:
        raise RosterError(f"ROSTER: cannot read {path}: {error}") from None
    table = list(csv.reader(text.splitlines(), delimiter=sniff(text)))
    if not table:
        raise RosterError(f"ROSTER: {path} is empty")
    header = [name.strip() for name in table[0]]
    found = kind(header)
    if found is None:
        raise RosterError(f"ROSTER: {path} is no Canvas gradebook export (no 'SIS Login ID' and 'ID' columns), no "
                          f"Moodle grade export (no 'First name', 'Last name', 'Email address') and no plain roster "
                          f"(no 'id' column); its columns: {header[:8]}")
    rows = [(number, row) for number, row in enumerate(table[1:], start=2) if any(cell.strip() for cell in row)]
    readers = {"canvas": canvas_rows, "moodle": moodle_rows, "plain": plain_rows}
    enrolees = list(readers[found](header, rows))
    problems = [f"line {enrolee.line}: {problem}" for enrolee in enrolees
                for problem in row_problems(enrolee, existing_uid)]
    problems += repeated(enrolees, "id", "account") + repeated(enrolees, "lms_user_id", "LMS id")
    if problems:
        raise RosterError(f"ROSTER: {path}: {len(problems)} row(s) refused, nothing enrolled:\n  " + "\n  ".join(problems))
    if not enrolees:
        raise RosterError(f"ROSTER: {path} lists no student")
    return enrolees


def row_problems(enrolee, existing_uid):
    """Why ``enrolee`` cannot be enrolled (empty when it can)."""
    if not enrolee.id:
        return ["no account name"]
    if not ACCOUNT.fullmatch(enrolee.id):
        return [f"account {enrolee.id!r} is not a plain Unix name (a-z, 0-9, _ and -, starting with a letter or _, "
                f"at most 32 characters)"]
    problems = []
    if enrolee.id in RESERVED:
        problems.append(f"account {enrolee.id!r} is reserved")
    else:
        uid = existing_uid(enrolee.id)
        if uid is not None and (uid < FIRST_UID or uid >= 65534):
            problems.append(f"account {enrolee.id!r} is a system account (uid {uid})")
    for field in ("first_name", "last_name", "email", "lms_user_id"):
        if NAME_FORBIDDEN.search(getattr(enrolee, field)):
            problems.append(f"{field} {getattr(enrolee, field)!r} holds ':', ',', '=' or a control character")
    return problems


def repeated(enrolees, field, what):
    """A problem line for each row whose ``field`` an earlier row already has."""
    seen, problems = {}, []
    for enrolee in enrolees:
        value = getattr(enrolee, field)
        if value and value in seen:
            problems.append(f"line {enrolee.line}: {what} {value!r} is also line {seen[value]}'s")
        seen.setdefault(value, enrolee.line)
    return problems


def machine_uid(name):
    """The uid of this machine's account ``name``, or None."""
    import pwd

    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        return None


# --- enrolling (root) -------------------------------------------------------------------------------------
def passwords_file(prefix):
    return Path(prefix) / "state" / "first-passwords.csv"


def comment(enrolee):
    return " ".join(part for part in (enrolee.first_name, enrolee.last_name) if part)


def account(enrolee, edition, hub):
    """Create or update ``enrolee``'s Unix account; returns what changed ('' when nothing did)."""
    import grp
    import pwd

    try:
        info = pwd.getpwnam(enrolee.id)
    except KeyError:
        hub.run(["useradd", "--create-home", "--shell", "/bin/bash", "--comment", comment(enrolee),
                 "-G", STUDENTS_GROUP, "--", enrolee.id])
        first = "".join(secrets.choice(PASSWORD_LETTERS) for _ in range(12))
        subprocess.run(["chpasswd"], input=f"{enrolee.id}:{first}\n", text=True, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        record = passwords_file(hub.PREFIX)
        handle = os.open(record, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        with os.fdopen(handle, "a", encoding="utf-8") as out:
            if out.tell() == 0:
                out.write("account,first_password\n")
            out.write(f"{enrolee.id},{first}\n")
        home = Path(pwd.getpwnam(enrolee.id).pw_dir)
        home.chmod(0o700)
        hub.copy_as(enrolee.id, edition, ["course"], home)
        return "new account"
    changed = []
    if info.pw_gecos.split(",")[0] != comment(enrolee):
        hub.run(["usermod", "--comment", comment(enrolee), "--", enrolee.id])
        changed.append("names")
    if enrolee.id not in grp.getgrnam(STUDENTS_GROUP).gr_mem:
        hub.run(["usermod", "--append", "--groups", STUDENTS_GROUP, "--", enrolee.id])
        changed.append(f"group {STUDENTS_GROUP}")
    return ", ".join(changed)


def class_list(enrolees, current, removed):
    """The text of the course's students.csv: ``current`` (its text now) with each enrolee's fields, less ``removed``."""
    rows = {}
    for row in csv.DictReader(io.StringIO(current)):
        if row.get("id") and row["id"] not in removed:
            rows[row["id"]] = {name: row.get(name) or "" for name in PLAIN}
    for enrolee in enrolees:
        rows[enrolee.id] = {name: getattr(enrolee, name) for name in PLAIN}
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=PLAIN, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows[name] for name in sorted(rows))
    return out.getvalue()


def gradebook(enrolees, removed, hub):
    """students.csv and nbgrader's gradebook up to date (as the instructor); True when anything changed."""
    course = hub.course_dir()
    # read as the instructor: root never follows a link the instructor could plant in their own folder
    current = subprocess.run(["runuser", "-u", hub.INSTRUCTOR, "--", "cat", str(course / "students.csv")],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.decode("utf-8", "replace")
    wanted = class_list(enrolees, current, removed)
    for name in removed:
        subprocess.run(["runuser", "-u", hub.INSTRUCTOR, "--", "sh", "-c", 'cd "$1" && shift && exec "$@"', "sh",
                        str(course), f"{hub.PREFIX}/venv/bin/nbgrader", "db", "student", "remove", "--force", name],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if wanted == current:
        return bool(removed)
    hub.write_as(hub.INSTRUCTOR, course / "students.csv", wanted)
    hub.run(["nbgrader", "db", "student", "import", "students.csv"], user=hub.INSTRUCTOR, cwd=course, quiet=True)
    return True


def remove_demo(enrolees, hub):
    """Remove the demo accounts the roster does not name; returns their names."""
    import pwd

    named = {enrolee.id for enrolee in enrolees}
    removed = []
    for user in hub.STUDENTS:
        if user in named:
            continue
        try:
            pwd.getpwnam(user)
        except KeyError:
            continue
        hub.kill_user_processes(user)
        hub.run(["userdel", "--remove", "--", user], quiet=True)
        removed.append(user)
    return removed


def apply(enrolees, edition, hub, demo=False):
    """Enrol ``enrolees`` on this machine (root); prints one line per change, or one sentence when none."""
    hub.require_root()
    hub.ensure_group(STUDENTS_GROUP)
    changes = 0
    for enrolee in enrolees:
        what = account(enrolee, edition, hub)
        if what:
            changes += 1
            hub.say(f"{enrolee.id} ({comment(enrolee) or 'no name'}): {what}")
    removed = remove_demo(enrolees, hub) if demo else []
    for user in removed:
        hub.say(f"{user}: demo account removed, with its home and gradebook entry")
    if gradebook(enrolees, set(removed), hub):
        changes += 1
        hub.say(f"gradebook: {len(enrolees)} student(s) with their names and LMS ids ({hub.course_dir()}/students.csv)")
    if not changes:
        hub.say(f"nothing to change: the {len(enrolees)} student(s) of the roster are enrolled as it says.")
    elif passwords_file(hub.PREFIX).exists():
        hub.say(f"first passwords of new accounts: {passwords_file(hub.PREFIX)} (root only); hand them out, then "
                "students change theirs with passwd in a terminal")


def main(argv=None):
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(prog="hub/enrol.py", description=__doc__.splitlines()[0])
    parser.add_argument("roster", metavar="ROSTER", help="Canvas or Moodle export, or a CSV with an 'id' column")
    parser.add_argument("--remove-demo", action="store_true", help="remove the demo accounts student1-3")
    parser.add_argument("--edition", type=Path, default=here.parent / "build" / "student-edition",
                        help="the student edition whose lectures new students get (make publish builds it)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(here))
    import course as hub

    if not (args.edition / "course").is_dir():
        raise SystemExit(f"enrol.py: --edition: {args.edition} is not a student edition (run make publish)")
    try:
        enrolees = read(args.roster)
    except RosterError as error:
        raise SystemExit(f"enrol.py: {error}") from None
    hub.hold_lock()
    apply(enrolees, args.edition.resolve(), hub, demo=args.remove_demo)
    return 0


if __name__ == "__main__":
    sys.exit(main())

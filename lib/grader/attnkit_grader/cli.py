"""Command line of the grading pipeline: ``attnkit`` (or ``python -m attnkit_grader``).

  release [ASSIGNMENT...] [--check]   student versions from source/, language editions included
                                      (--check: report drift, exit 1 if any)
  grade ASSIGNMENT... [--submissions DIR] [--students CSV] [--reports DIR] [--student ID...] [GRADER OPTIONS]
  demo [--reports DIR] [GRADER OPTIONS]   grade the bundled example class in the kit's repository
  publish OUT [--force]               the student edition: lectures, released assignments, student package
  new-assignment NAME [--title TITLE] a new assignment's folder and notebooks (then: attnkit release)
  collect ASSIGNMENT [--exchange DIR] nbgrader's exchange -> submitted/, refusing forged owners and times
                                      (hand-ins of its language editions, ASSIGNMENT_fr/_zh, included)
  release-feedback ASSIGNMENT [--exchange DIR]   generate the feedback pages and release them to students
  export {canvas,moodle} LMS_CSV --out FILE [EXPORT OPTIONS]   fill the LMS's own gradebook file with the
                                      gradebook's totals (see attnkit_grader.lms)
  hub enrol ROSTER [--remove-demo]    as root, from the kit's checkout: the hub's accounts and gradebook from an
                                      LMS roster (hub/enrol.py; the hub guide)
  cluster certs DIR [--host HOST...]  a Dask cluster's authority and certificates (attnkit_grader.cluster.certs)
  cluster scheduler --certs DIR       its scheduler (TLS only, no dashboard)
  cluster worker ADDRESS --certs DIR  a worker (unprivileged; the kit's preload; see attnkit_grader.cluster)

Grader options: --grader sandbox (default: each submission in a bubblewrap sandbox, verdicts from the
trusted judges, a pool of --workers N, resumable; on the course's hub, sandboxes start through the door of
attnkit_grader.isolation.door, so the instructor grades as themselves) or --grader nbgrader (plain nbgrader
autograde; refused where a door is configured);
--fresh ignores the journal of an earlier run; --show-tests puts the visible test cells in the feedback;
--scheduler tls://HOST:PORT --certs DIR runs the sandboxes on that Dask cluster's workers (the judge, the
journal and the gradebook stay in this process).
--cold-start starts every sandbox from a fresh interpreter instead of forking it from a worker's warm zygote
(warm starts are the default where the grader or the door is root; see attnkit_grader.isolation.warm).

Exit status: 0 done (bad submissions are reported, they do not fail the run; also: nothing to do, said in one
sentence: grade with nothing handed in, release-feedback with nothing graded), 1 release drift, a
hand-in refused by collect (the others are collected) or an export stopped by mismatches or ungraded cells
(nothing written), 2 usage or course errors (also: the sandbox cannot run here; the message says how to
install it), 3 a batch stopped because the cluster's scheduler was lost (run it again: it resumes), 4 a batch
refused by its canary (attnkit_grader.canary: the solved release or a catalogued mistake, graded first, scored
otherwise than its manifest says; nothing was graded or written).
"""

import argparse
import logging
import os
import subprocess
import sys
from pathlib import Path

from . import offline
from .autograders.base import BatchInterrupted
from .canary import CanaryFailed
from .course import Course, NothingToDo
from .exchange import TOLERANCE, collect, release_feedback
from .insight.render import report_language
from .pipeline import GRADERS, demo, grade
from .publish import student_edition
from .scaffold import new_assignment
from .releases import NbgraderError, drift, release
from .isolation.bwrap import SandboxUnavailable
from .lms.fill import MISSING
from .lms.plugins import LAYOUTS, PLUGINS
from .lms.roster import FIELDS

CERTS_VARIABLE = "ATTNKIT_CLUSTER_CERTS"     # the cluster's certificates folder, for --certs


def parser():
    top = argparse.ArgumentParser(prog="attnkit", description="Grading pipeline of the attention course kit.")
    top.add_argument("--root", type=Path, default=None, metavar="DIR",
                     help="course folder holding nbgrader_config.py (default: the current folder; for demo "
                          "and publish, the kit's repository)")
    top.add_argument("-q", "--quiet", action="store_true", help="no progress lines, only the results")
    commands = top.add_subparsers(dest="command", required=True)

    rel = commands.add_parser("release", help="nbgrader generate_assignment --force for each assignment")
    rel.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="default: every folder in source/")
    rel.add_argument("--check", action="store_true",
                     help="regenerate in a temporary copy and compare with release/ (exit 1 on drift)")

    run = commands.add_parser("grade", help="enrol, pre-check, autograde, feedback, export and report")
    run.add_argument("assignments", nargs="+", metavar="ASSIGNMENT")
    run.add_argument("--submissions", type=Path, metavar="DIR",
                     help="folder of STUDENT/ASSIGNMENT/ folders (only read; default: the course's submitted/, "
                          "where collect puts them)")
    run.add_argument("--students", type=Path, metavar="CSV", help="class list CSV with an 'id' column (nbgrader's format)")
    run.add_argument("--reports", type=Path, metavar="DIR", help="where the reports go (default: COURSE/grades)")
    run.add_argument("--student", action="append", metavar="ID", dest="only",
                     help="grade this student's submission only (repeatable; the Formgrader's Autograde button)")
    grader_options(run)

    example = commands.add_parser("demo", help="grade the example class (examples/example_class)")
    example.add_argument("--reports", type=Path, metavar="DIR", help="where the reports go (default: COURSE/grades)")
    grader_options(example)

    edition = commands.add_parser("publish", help="build the student edition (no source/, no grader, no solution)")
    edition.add_argument("out", type=Path, metavar="OUT", help="folder to build it in (outside the repository)")
    edition.add_argument("--force", action="store_true", help="replace OUT if it exists")

    scaffolding = commands.add_parser("new-assignment", help="scaffold a new assignment: its grader folder, its "
                                                             "source notebook and its editions (then attnkit release)")
    scaffolding.add_argument("name", metavar="NAME", help="the assignment's (folder and notebook) name, e.g. ps3_rope")
    scaffolding.add_argument("--title", help="its title, one line (default: from the name)")

    inbox = commands.add_parser("collect", help="collect hand-ins from nbgrader's exchange, refusing forged ones")
    inbox.add_argument("assignment", metavar="ASSIGNMENT")
    inbox.add_argument("--exchange", type=Path, metavar="DIR",
                       help="nbgrader's exchange folder (default: Exchange.root of the course's nbgrader_config.py)")
    inbox.add_argument("--tolerance", type=seconds, default=TOLERANCE, metavar="SECONDS",
                       help=f"how far a hand-in's stated time may be from the file system's (default {TOLERANCE:g})")

    back = commands.add_parser("release-feedback", help="nbgrader generate_feedback + release_feedback, for "
                                                        "submissions graded by attnkit grade")
    back.add_argument("assignment", metavar="ASSIGNMENT")
    back.add_argument("--exchange", type=Path, metavar="DIR",
                      help="nbgrader's exchange folder (default: Exchange.root of the course's nbgrader_config.py)")

    hub = commands.add_parser("hub", help="the course's JupyterHub (as root, from the kit's checkout)")
    hub_commands = hub.add_subparsers(dest="hub_command", required=True)
    enrolling = hub_commands.add_parser("enrol", help="enrol a class from its LMS roster (hub/enrol.py)")
    enrolling.add_argument("roster", type=Path, metavar="ROSTER",
                           help="Canvas or Moodle export, or a CSV with an 'id' column")
    enrolling.add_argument("--remove-demo", action="store_true", help="remove the demo accounts student1-3")
    enrolling.add_argument("--edition", type=Path, metavar="DIR",
                           help="the student edition new students get (default: the checkout's build/student-edition)")

    cluster = commands.add_parser("cluster", help="a Dask cluster to grade on: certificates, scheduler, workers")
    roles = cluster.add_subparsers(dest="role", required=True)
    made = roles.add_parser("certs", help="the cluster's authority and a certificate for each role")
    made.add_argument("folder", type=Path, metavar="DIR", help="where they go (keys readable by you only)")
    made.add_argument("--host", action="append", default=[], metavar="HOST",
                      help="a machine's name or address recorded in the certificates (repeatable)")
    made.add_argument("--days", type=positive, default=365, help="how long they are valid (default 365)")
    made.add_argument("--force", action="store_true", help="replace the certificates in DIR")
    scheduler = roles.add_parser("scheduler", help="dask scheduler with the cluster's TLS")
    scheduler.add_argument("--certs", type=Path, required=True, metavar="DIR", help="from attnkit cluster certs")
    scheduler.add_argument("--host", default="", help="interface to listen on (default: every one)")
    scheduler.add_argument("--port", type=int, default=8786, help="default 8786 (0: any free port)")
    scheduler.add_argument("--scheduler-file", type=Path, metavar="FILE", help="write the address here")
    work = roles.add_parser("worker", help="dask worker with the cluster's TLS and the kit's sandbox preload")
    work.add_argument("address", nargs="?", metavar="ADDRESS", help="the scheduler's tls://HOST:PORT")
    work.add_argument("--certs", type=Path, required=True, metavar="DIR", help="from attnkit cluster certs")
    work.add_argument("--scheduler-file", type=Path, metavar="FILE", help="read the address from here instead")
    work.add_argument("--nthreads", type=positive, help="sandboxes at once (default: the machine's cores)")
    work.add_argument("--nworkers", type=positive, default=1, help="worker processes (default 1)")
    work.add_argument("--name", help="the worker's name (default: its address)")
    work.add_argument("--host", help="interface to listen on")
    work.add_argument("--death-timeout", type=seconds, metavar="SECONDS",
                      help="give up when no scheduler answers for this long")

    lms = commands.add_parser("export", help="fill the LMS's own gradebook file (Canvas, Moodle) with the totals")
    kinds = lms.add_subparsers(dest="lms", required=True)
    for name, layout in LAYOUTS.items():
        export_options(kinds.add_parser(name, help=f"fill {layout.WHAT}"), layout)
    return top


def export_options(command, layout):
    """The options of ``attnkit export LMS``: the LMS's file, where the copy goes, how students are matched."""
    command.add_argument("lms_csv", type=Path, metavar="LMS_CSV", help=f"{layout.WHAT} (only read)")
    command.add_argument("--out", type=Path, required=True, metavar="FILE", help="where the filled copy goes")
    command.add_argument("--assignments", nargs="+", default=[], metavar="ASSIGNMENT",
                         help="default: every assignment in the gradebook")
    identifiers = ", ".join(f"{key}: {header!r} matched with the roster's {field}"
                            for key, (header, field) in layout.IDENTIFIERS.items())
    command.add_argument("--identifier", choices=sorted(layout.IDENTIFIERS), default=layout.DEFAULT_IDENTIFIER,
                         help=f"the LMS column students are found by ({identifiers}; default "
                              f"{layout.DEFAULT_IDENTIFIER})")
    command.add_argument("--identity-column", metavar="HEADER",
                         help="that column's header, where the LMS's export names it differently (another language)")
    command.add_argument("--match", choices=FIELDS, help="the roster field matched with it (default: as above)")
    command.add_argument("--students", type=Path, metavar="CSV",
                         help="class list completing the gradebook's students (id, first_name, last_name, email, "
                              "lms_user_id)")
    command.add_argument("--column", action="append", type=column_pair, default=[], metavar="ASSIGNMENT=HEADER",
                         help="the LMS column of an assignment not titled after it (repeatable)")
    command.add_argument("--missing", choices=MISSING, default="zero",
                         help="what a student without a submission in the gradebook gets: zero (default) or blank "
                              "(no grade); a value already in the LMS file is kept")
    command.add_argument("--allow-mismatches", action="store_true",
                         help="write the file although students are missing, extra, duplicated or named otherwise")
    command.add_argument("--allow-ungraded", action="store_true",
                         help="write the file although cells await a manual grade in the formgrader")


def column_pair(text):
    assignment, sep, header = text.partition("=")
    if not sep or not assignment.strip() or not header.strip():
        raise argparse.ArgumentTypeError(f"expected ASSIGNMENT=HEADER, got {text!r}")
    return assignment.strip(), header.strip()


def seconds(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected seconds >= 0, got {text}")
    return value


def grader_options(command):
    command.add_argument("--grader", choices=GRADERS, default="sandbox",
                         help="sandbox (default): every submission in its own sandbox, judged outside it; "
                              "nbgrader: plain nbgrader autograde (no isolation)")
    command.add_argument("--workers", type=positive, metavar="N",
                         help="sandboxes run at once (default: the number of CPU cores)")
    command.add_argument("--fresh", action="store_true",
                         help="grade everything again, ignoring the journal of an earlier (interrupted) run")
    command.add_argument("--show-tests", action="store_true",
                         help="show the released visible test cells in the feedback pages (never hidden tests)")
    command.add_argument("--scheduler", metavar="ADDRESS",
                         help="run the sandboxes on the Dask cluster at tls://HOST:PORT (attnkit cluster)")
    command.add_argument("--certs", type=Path, metavar="DIR", default=os.environ.get(CERTS_VARIABLE) or None,
                         help=f"the cluster's certificates (attnkit cluster certs; default ${CERTS_VARIABLE})")
    command.add_argument("--cold-start", action="store_true",
                         help="start each sandbox from a fresh interpreter, not from a worker's warm zygote")


def positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def main(argv=None):
    args = parser().parse_args(argv)
    configure_logging(logging.WARNING if args.quiet else logging.INFO)
    try:
        return COMMANDS[args.command](args)
    except NothingToDo as error:
        print(f"attnkit: nothing to do: {error}")
        return 0
    except (ValueError, FileNotFoundError, FileExistsError, NbgraderError, SandboxUnavailable) as error:
        print(f"attnkit: error: {error}", file=sys.stderr)
        return 2
    except BatchInterrupted as error:
        print(f"attnkit: stopped: {error}", file=sys.stderr)
        return 3
    except CanaryFailed as error:
        print(f"attnkit: refused: {error}", file=sys.stderr)
        return 4


def run_release(args):
    course = Course(args.root or Path.cwd())
    if not args.check:
        for assignment in release(course, args.assignments):
            print(f"released {assignment} -> {course.assignment_dir('release', assignment)}")
        return 0
    drifted = 0
    for assignment, differences in drift(course, args.assignments).items():
        print(f"{assignment}: {'DRIFT' if differences else 'up to date'}")
        for line in differences:
            print(f"  {line}")
        drifted += bool(differences)
    return 1 if drifted else 0


def run_grade(args):
    report_language()                       # a wrong ATTNKIT_REPORT_LANG stops here, before any grading
    course = Course(args.root or Path.cwd())
    submissions = args.submissions or course.step_dir("submitted")
    if args.submissions is None and not submissions.is_dir():
        raise NothingToDo(f"nothing handed in: {submissions} does not exist yet; nothing graded (collect the "
                          f"hand-ins first: attnkit collect ASSIGNMENT)")
    show(grade(course, args.assignments, submissions, args.students, args.reports, only=args.only, **options(args)))
    return 0


def run_demo(args):
    report_language()
    show(demo(args.root, args.reports, **options(args)))
    return 0


def run_publish(args):
    out = student_edition(args.root or Path.cwd(), args.out, force=args.force)
    print(f"student edition in {out}")
    return 0


def run_new_assignment(args):
    root = args.root or Path.cwd()
    for path in new_assignment(root, args.name, args.title):
        print(f"wrote {path.relative_to(root)}")
    print(f"next: attnkit release {args.name}; python -m attnkit_grader.catalogue --write-worked {args.name}; "
          f"python examples/make_example_class.py; then replace the exercise with yours (the authors' guide)")
    return 0


def run_collect(args):
    course = Course(args.root or Path.cwd())
    result = collect(course, args.assignment, exchange_of(course, args), tolerance=args.tolerance)
    print(result.text())
    return 1 if result.refused else 0


def run_release_feedback(args):
    course = Course(args.root or Path.cwd())
    released, skipped, typeset = release_feedback(course, args.assignment, exchange_of(course, args))
    print(f"{args.assignment}: feedback released to {', '.join(released) or 'nobody'}")
    for line in skipped:
        print(f"  no feedback for {line}")
    if not typeset:
        print(f"  warning: the pages show their formulas as TeX: MathJax was not found ({offline.WHERE})")
    return 0


def run_export(args):
    course = Course(args.root or Path.cwd())
    database = course.db_url.removeprefix("sqlite:///")
    if course.db_url.startswith("sqlite:///") and not Path(database).is_file():
        raise FileNotFoundError(f"root: {course.root} has no gradebook ({database}); grade first (attnkit grade)")
    plugin = PLUGINS[args.lms](
        to=str(args.out), lms_csv=str(args.lms_csv), assignment=args.assignments, identifier=args.identifier,
        identity_column=args.identity_column or "", match=args.match or "",
        students_csv=str(args.students) if args.students else "", columns=dict(args.column), missing=args.missing,
        allow_mismatches=args.allow_mismatches, allow_ungraded=args.allow_ungraded)
    with course.gradebook() as gradebook:
        report = plugin.run(gradebook)
    print(report.text())
    return 1 if report.blocked else 0


def exchange_of(course, args):
    """--exchange, else the course's c.Exchange.root."""
    exchange = args.exchange or course.config.get("Exchange", {}).get("root")
    if not exchange:
        raise ValueError("exchange: not given, and the course's nbgrader_config.py sets no c.Exchange.root")
    return Path(exchange)


def options(args):
    return {"grader": args.grader, "workers": args.workers, "fresh": args.fresh, "show_tests": args.show_tests,
            "warm": False if args.cold_start else None, "progress": not args.quiet, "scheduler": args.scheduler,
            "certs": args.certs}


def run_hub(args):
    """``attnkit hub enrol``: hub/enrol.py of the kit's checkout this grader comes from (root's, like the hub)."""
    script = Path(__file__).resolve().parents[3] / "hub" / "enrol.py"
    if not script.is_file():
        raise ValueError(f"hub: {script} not found: run `attnkit hub enrol` from the kit's checkout (its .venv), "
                         f"as root, where the hub was set up")
    command = [sys.executable, str(script), str(args.roster)]
    command += ["--remove-demo"] * args.remove_demo + (["--edition", str(args.edition)] if args.edition else [])
    return subprocess.call(command)


def run_cluster(args):
    from .cluster import certs, commands

    if args.role == "certs":
        for path in certs.make(args.folder, args.host, days=args.days, force=args.force):
            print(f"wrote {path}")
        print(f"copy ca.pem and scheduler*.pem to the scheduler's machine, ca.pem and worker*.pem to each worker's "
              f"(readable by the worker's user), keep {certs.CA_KEY} elsewhere")
        return 0
    commands.refuse_root(args.role)
    if args.role == "scheduler":
        commands.start(commands.scheduler_command(args.certs, args.host, args.port, args.scheduler_file))
    commands.start(commands.worker_command(args.certs, args.address, args.scheduler_file, args.nthreads,
                                           args.nworkers, args.name, args.host, args.death_timeout))
    return 0


def show(run):
    if run.canary:
        print(run.canary + "\n")
    print(run.text())
    graded = sum(s.status == "graded" for s in run.submissions.values())
    resumed = sum(s.resumed for s in run.submissions.values())
    again = f" ({resumed} taken from the journal of an earlier run)" if resumed else ""
    kept = [a for a in run.course or () if a not in run.assignments]
    also = f" (they also hold {', '.join(kept)}, as last graded)" if kept else ""
    print(f"\n{graded} of {len(run.submissions)} submissions graded{again}; reports{also}:")
    for path in run.reports.values():
        print(f"  {path}")


def configure_logging(level):
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("attnkit_grader")
    logger.handlers[:] = [handler]
    logger.setLevel(level)
    logger.propagate = False


COMMANDS = {"release": run_release, "grade": run_grade, "demo": run_demo, "publish": run_publish,
            "new-assignment": run_new_assignment,
            "collect": run_collect, "release-feedback": run_release_feedback, "export": run_export,
            "cluster": run_cluster, "hub": run_hub}

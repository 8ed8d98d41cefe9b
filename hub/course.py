"""The attention course on one machine: JupyterHub, local Unix users and nbgrader's exchange. Run as root.

    python3 hub/course.py setup [--reset] [--edition DIR]   build or refresh everything under PREFIX
    python3 hub/course.py start                             start JupyterHub (background), wait until it answers
    python3 hub/course.py stop                              stop it (and every user's server)
    python3 hub/course.py status
    python3 hub/course.py grade ASSIGNMENT                  attnkit grade on the instructor's collected hand-ins

``make hub`` is setup + start, ``make hub-stop`` is stop. Everything lives under PREFIX
(/opt/attnkit-course, or $ATTNKIT_COURSE_PREFIX), never under /root, which other users cannot read:

    venv/        the course's Python: the student edition's package + JupyterLab + nbgrader + JupyterHub.
                 No grader, no reference solution; the instructor's nbgrader extensions are switched off
                 there (the edition's postBuild) and back on for the instructor only (user level).
    grader/      the instructor's grader (lib/grader), readable by root and group attnkit-instructors only
    bin/attnkit  runs it with the course's Python (group attnkit-instructors; grading itself runs as root)
    proxy/       configurable-http-proxy from the npm registry
    exchange/    nbgrader's exchange (1777, as nbgrader documents, plus the sticky bit), with the course's
                 folder made by this script, owned by the instructor, so no student can take its name
    etc/         jupyterhub_config.py
    state/       the hub's database, cookie secret, pid file and log (root only)

Users (demo passwords, change them for a real course): instructor / attention-instructor and
student1..3 / attention-student1..3. The instructor's course folder is ~instructor/attention-kit (the
repository's source/, translations/, release/ and nbgrader_config.py), 0700 like every home here. Setup
releases both assignments to the exchange, each in English, French and Chinese (ps1_learnable_pe,
ps1_learnable_pe_fr, ...). Nothing run by start needs the network.
"""

import argparse
import fcntl
import grp
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PREFIX = Path(os.environ.get("ATTNKIT_COURSE_PREFIX", "/opt/attnkit-course"))
PORT = int(os.environ.get("ATTNKIT_HUB_PORT", "8000"))
COURSE_ID = "attention-kit"
INSTRUCTOR = "instructor"
STUDENTS = ("student1", "student2", "student3")
INSTRUCTORS_GROUP = "attnkit-instructors"
ASSIGNMENTS = ("ps1_learnable_pe", "ps2_relative_pe")
PROXY_VERSION = "5"                 # configurable-http-proxy major version (npm)
INSTRUCTOR_EXTENSIONS = {            # switched off for everyone by the edition's postBuild, on for the instructor
    "server": ("nbgrader.server_extensions.formgrader", "nbgrader.server_extensions.course_list"),
    "lab": ("@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment", "@jupyter/nbgrader:course-list"),
}


def password(user):
    """The demo course's known password of ``user``."""
    return f"attention-{user}"


def course_dir():
    return Path(pwd.getpwnam(INSTRUCTOR).pw_dir) / COURSE_ID


def exchange_dir():
    return PREFIX / "exchange"


# --- running things ---------------------------------------------------------------------------------------
def run(command, user=None, cwd=None, env=None, quiet=False):
    """Run ``command`` (a list), as ``user`` when given (runuser, login environment not used)."""
    if user:
        home = pwd.getpwnam(user).pw_dir
        base = {"HOME": home, "USER": user, "LOGNAME": user,
                "PATH": f"{PREFIX}/bin:{PREFIX}/venv/bin:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
        base.update(env or {})
        command = ["runuser", "-u", user, "--", "env", "-i"] + [f"{k}={v}" for k, v in base.items()] + command
        env = None
    output = subprocess.run(command, cwd=cwd, env=env, check=False, text=True,
                            stdout=subprocess.PIPE if quiet else None, stderr=subprocess.STDOUT if quiet else None)
    if output.returncode:
        detail = f"\n{output.stdout}" if quiet and output.stdout else ""
        raise SystemExit(f"course.py: failed ({output.returncode}): {' '.join(map(str, command))}{detail}")
    return output.stdout


def say(text):
    print(f"course.py: {text}", flush=True)


# --- setup ------------------------------------------------------------------------------------------------
def setup(edition, reset=False):
    """Build or refresh the course under PREFIX; ``reset``: users' homes, the exchange and the hub's state anew."""
    require_root()
    edition = Path(edition).resolve()
    if not (edition / "postBuild").is_file():
        raise SystemExit(f"course.py: edition: {edition} is not a student edition (run make publish)")
    for tool in ("node", "npm", "runuser", "useradd", "chpasswd"):
        if shutil.which(tool) is None:
            raise SystemExit(f"course.py: {tool} not found (the hub needs Node.js 20 with npm, and util-linux)")
    if reset:
        stop(quiet=True)
    PREFIX.mkdir(parents=True, exist_ok=True)
    PREFIX.chmod(0o755)
    environment(edition)
    proxy()
    state(reset)
    users(edition, reset)
    exchange(reset)
    instructor_course(reset)
    say(f"ready: make hub (or {sys.executable} {__file__} start), then http://127.0.0.1:{PORT}/")


def require_root():
    if os.geteuid() != 0:
        raise SystemExit("course.py: run as root (it creates users and starts JupyterHub as root, as PAM needs)")


def environment(edition):
    """PREFIX/venv from the student edition (+ the hub); PREFIX/grader and PREFIX/bin/attnkit for the instructor.
    Each is rebuilt only when what it is made from changed."""
    venv = PREFIX / "venv"
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    inputs = {name: (edition / name).read_text() for name in ("pyproject.toml", "constraints.txt", "postBuild")}
    inputs["attnkit"] = tree_digest(edition / "lib" / "attnkit")
    if changed(PREFIX / "environment.json", inputs, venv / "bin" / "jupyterhub"):
        say(f"building {venv} from {edition} (about a minute)")
        python = shutil.which("python3", path="/usr/bin:/bin")   # the system's Python: readable by every user
        if python is None:
            raise SystemExit("course.py: /usr/bin/python3 not found (apt-get install python3 python3-venv)")
        no_pip = subprocess.run([python, "-c", "import ensurepip"], capture_output=True).returncode
        if no_pip and shutil.which("apt-get"):
            run(["apt-get", "install", "-y", "-qq", "python3-venv"])     # Debian splits venv's pip out
        if not (venv / "bin" / "python").exists():
            run([python, "-m", "venv", str(venv)])
        run(pip + ["-c", str(edition / "constraints.txt"), f"{edition}[notebooks,hub]"])
        # The edition's postBuild switches the instructor's nbgrader extensions off in this environment.
        run(["sh", str(edition / "postBuild")], env={**os.environ, "PATH": f"{venv}/bin:/usr/bin:/bin"}, quiet=True)
        (PREFIX / "environment.json").write_text(json.dumps(inputs))
    # The grader: apart from the students' environment, readable by the instructors' group only.
    ensure_group(INSTRUCTORS_GROUP)
    grader = PREFIX / "grader"
    inputs = {"grader": tree_digest(REPO / "lib" / "grader")}
    if not changed(PREFIX / "grader.json", inputs, grader):
        return
    say(f"installing the grader in {grader}")
    if grader.exists():
        shutil.rmtree(grader)
    run(pip + ["--no-deps", "--target", str(grader), str(REPO / "lib" / "grader"), "pyseccomp>=0.1.2,<0.2"], quiet=True)
    gid = grp.getgrnam(INSTRUCTORS_GROUP).gr_gid
    for path in [grader, *grader.rglob("*")]:
        os.chown(path, 0, gid, follow_symlinks=False)
        if not path.is_symlink():
            path.chmod(0o750 if path.is_dir() else 0o640)
    tools = PREFIX / "bin"
    tools.mkdir(exist_ok=True)
    tools.chmod(0o755)
    script = tools / "attnkit"
    script.write_text(f'#!/bin/sh\n# The grader, with the course\'s Python (instructors and root only).\n'
                      f'PYTHONPATH="{grader}" exec "{venv}/bin/python" -m attnkit_grader "$@"\n')
    os.chown(script, 0, gid)
    script.chmod(0o750)
    (PREFIX / "grader.json").write_text(json.dumps(inputs))


def changed(stamp, inputs, product):
    """True unless ``product`` exists and the JSON file ``stamp`` records exactly ``inputs``."""
    return not (stamp.is_file() and product.exists() and json.loads(stamp.read_text()) == inputs)


def tree_digest(folder):
    """A cheap fingerprint of the source files under ``folder`` (names, sizes, modification times); what
    building and importing leave there (build/, *.egg-info, __pycache__) is left out."""
    def source(path):
        parts = path.relative_to(folder).parts
        return path.is_file() and not ({"build", "__pycache__"} & set(parts)) and \
            not any(part.endswith(".egg-info") for part in parts)
    entries = sorted((str(p.relative_to(folder)), p.stat().st_size, int(p.stat().st_mtime))
                     for p in folder.rglob("*") if source(p))
    return json.dumps(entries)


def proxy():
    """configurable-http-proxy from the npm registry, under PREFIX/proxy (the machine's Node.js runs it)."""
    binary = PREFIX / "proxy" / "node_modules" / ".bin" / "configurable-http-proxy"
    if binary.exists():
        return
    say("installing configurable-http-proxy (npm)")
    run(["npm", "install", "--prefix", str(PREFIX / "proxy"), "--no-audit", "--no-fund", "--loglevel=error",
         f"configurable-http-proxy@{PROXY_VERSION}"])


def ensure_group(name):
    try:
        grp.getgrnam(name)
    except KeyError:
        run(["groupadd", "--system", name])


def users(edition, reset):
    """The instructor and the students: Unix accounts with the demo passwords, private homes."""
    ensure_group(INSTRUCTORS_GROUP)
    for user in (INSTRUCTOR, *STUDENTS):
        if reset:
            try:
                pwd.getpwnam(user)
                kill_user_processes(user)
                run(["userdel", "--remove", user], quiet=True)
            except KeyError:
                pass
        try:
            pwd.getpwnam(user)
        except KeyError:
            groups = ["-G", INSTRUCTORS_GROUP] if user == INSTRUCTOR else []
            run(["useradd", "--create-home", "--shell", "/bin/bash", *groups, user])
            subprocess.run(["chpasswd"], input=f"{user}:{password(user)}\n", text=True, check=True)
        home = Path(pwd.getpwnam(user).pw_dir)
        home.chmod(0o700)
        if user != INSTRUCTOR and not (home / "course").exists():
            # The lectures of the student edition, the student's own copy to run and change.
            shutil.copytree(edition / "course", home / "course")
            run(["chown", "-R", f"{user}:{user}", str(home / "course")])


def kill_user_processes(user):
    """End what ``user`` still runs (a server left by a killed hub) before the account is removed."""
    uid = pwd.getpwnam(user).pw_uid
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    os.kill(int(entry.name), signal.SIGKILL)
            except (OSError, ProcessLookupError):
                pass


def exchange(reset):
    """nbgrader's exchange: root 1777 (nbgrader asks for world-writable; the sticky bit keeps a student from
    renaming or deleting what others made), the course's folder owned by the instructor, made here before
    any student could take its name: outbound 0755, inbound 1733 (students write, cannot list, cannot
    remove others' submissions), feedback 0711 (found by a secret hash only)."""
    root = exchange_dir()
    if reset and root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o1777)
    instructor = pwd.getpwnam(INSTRUCTOR)
    course = root / COURSE_ID
    for path, mode in ((course, 0o755), (course / "outbound", 0o755), (course / "inbound", 0o1733),
                       (course / "feedback", 0o711)):
        path.mkdir(exist_ok=True)
        os.chown(path, instructor.pw_uid, instructor.pw_gid)
        path.chmod(mode)


def instructor_course(reset):
    """~instructor/attention-kit: source/, translations/, release/, nbgrader_config.py; the students enrolled,
    both assignments released to the exchange in every language; the instructor's own nbgrader config and
    extensions."""
    user = INSTRUCTOR
    home = Path(pwd.getpwnam(user).pw_dir)
    course = course_dir()
    if reset and course.exists():
        shutil.rmtree(course)
    if not course.exists():
        course.mkdir()
        for name in ("source", "translations", "release"):
            shutil.copytree(REPO / name, course / name,
                            ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
        shutil.copy2(REPO / "nbgrader_config.py", course / "nbgrader_config.py")
        with open(course / "nbgrader_config.py", "a") as config:
            config.write("\n# The course on this machine's hub (hub/course.py): its exchange, for attnkit collect,\n"
                         f"# and the late penalty: a hand-in after the due date scores 0 (nbgrader's 'zero').\n"
                         f"c.Exchange.root = {str(exchange_dir())!r}\n"
                         'c.LateSubmissionPlugin.penalty_method = "zero"\n')
        (course / "students.csv").write_text("id\n" + "".join(f"{s}\n" for s in STUDENTS))
    config = home / ".jupyter"
    config.mkdir(exist_ok=True)
    (config / "nbgrader_config.py").write_text(
        "# The instructor's nbgrader: the course folder (the formgrader's too).\n"
        "c = get_config()  # noqa: F821\n"
        f"c.CourseDirectory.root = {str(course)!r}\n")
    # The instructor's extensions back on at the user level, which outranks the environment's (the files
    # `jupyter server extension enable --user` and `jupyter labextension enable --level=user` write)
    # and the formgrader, which JupyterLab shows in a frame, may be framed by the instructor's own pages
    # (jupyterhub-singleuser forbids every frame by default: frame-ancestors 'none')
    (config / "jupyter_server_config.json").write_text(json.dumps(
        {"ServerApp": {"jpserver_extensions": {name: True for name in INSTRUCTOR_EXTENSIONS["server"]},
                       "tornado_settings": {"headers": {"Content-Security-Policy": "frame-ancestors 'self'"}}}},
        indent=1))
    (config / "labconfig").mkdir(exist_ok=True)
    (config / "labconfig" / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {name: False for name in INSTRUCTOR_EXTENSIONS["lab"]}}, indent=1))
    run(["chown", "-R", f"{user}:{user}", str(course), str(config)])
    course.chmod(0o700)
    nbgrader = ["nbgrader"]
    run(nbgrader + ["db", "student", "import", "students.csv"], user=user, cwd=course, quiet=True)
    # generate_assignment fills the gradebook, which grading needs; the language editions (release/
    # ASSIGNMENT_fr, ASSIGNMENT_zh, generated by `attnkit release` and committed) are graded as the assignment
    # itself and never enter the gradebook: every folder of release/ is only released, under its own name
    for assignment in ASSIGNMENTS:
        run(nbgrader + ["generate_assignment", assignment, "--force"], user=user, cwd=course, quiet=True)
    released = sorted(p.name for p in (course / "release").iterdir() if p.is_dir())
    for name in released:
        run(nbgrader + ["release_assignment", name, "--force"], user=user, cwd=course, quiet=True)
    say(f"course folder {course}; released {', '.join(released)} to {exchange_dir() / COURSE_ID}")


def state(reset):
    """PREFIX/etc (the hub's config), PREFIX/state (root only), the nbgrader config every user reads."""
    etc = PREFIX / "etc"
    etc.mkdir(exist_ok=True)
    shutil.copy2(REPO / "hub" / "jupyterhub_config.py", etc / "jupyterhub_config.py")
    folder = PREFIX / "state"
    if reset and folder.exists():
        for name in ("jupyterhub.sqlite", "jupyterhub.log"):
            (folder / name).unlink(missing_ok=True)
    folder.mkdir(exist_ok=True)
    folder.chmod(0o700)
    jupyter = PREFIX / "venv" / "etc" / "jupyter"
    jupyter.mkdir(parents=True, exist_ok=True)
    # No news or update checks from JupyterLab: the course needs no network.
    settings = PREFIX / "venv" / "share" / "jupyter" / "lab" / "settings"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "overrides.json").write_text(json.dumps(
        {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False}}, indent=1))
    (jupyter / "nbgrader_config.py").write_text(
        "# Every course user's nbgrader (students and instructor): the course and its exchange.\n"
        "c = get_config()  # noqa: F821\n"
        f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
        f"c.Exchange.root = {str(exchange_dir())!r}\n")


# --- start and stop ---------------------------------------------------------------------------------------
def pid_file():
    return PREFIX / "state" / "hub.pid"


def log_file():
    return PREFIX / "state" / "jupyterhub.log"


def running_pid():
    try:
        pid = int(pid_file().read_text())
    except (OSError, ValueError):
        return None
    return pid if alive(pid) else None


def alive(pid):
    """True while ``pid`` runs (a zombie does not: the hub is one until the process that started it reaps it)."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def start(wait=120):
    """Start JupyterHub in the background (its log: PREFIX/state/jupyterhub.log); return once it answers."""
    require_root()
    if not (PREFIX / "venv" / "bin" / "jupyterhub").exists():
        raise SystemExit("course.py: no course environment; run setup first (make hub does)")
    if running_pid():
        say(f"already running (pid {running_pid()}): http://127.0.0.1:{PORT}/")
        return
    env = {"PATH": f"{PREFIX}/venv/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(PREFIX / "state"),
           "ATTNKIT_COURSE_PREFIX": str(PREFIX), "ATTNKIT_HUB_PORT": str(PORT),
           "ATTNKIT_COURSE_USERS": " ".join((INSTRUCTOR, *STUDENTS)), "ATTNKIT_COURSE_INSTRUCTORS": INSTRUCTOR}
    with open(log_file(), "ab") as log:
        process = subprocess.Popen([str(PREFIX / "venv" / "bin" / "jupyterhub"),
                                    "-f", str(PREFIX / "etc" / "jupyterhub_config.py")],
                                   cwd=PREFIX / "state", env=env, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    pid_file().write_text(str(process.pid))
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"course.py: JupyterHub exited ({process.returncode}); see {log_file()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/hub/health", timeout=5) as answer:
                if answer.status == 200:
                    say(f"JupyterHub running (pid {process.pid}): http://127.0.0.1:{PORT}/ (log {log_file()})")
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"course.py: JupyterHub did not answer within {wait} s; see {log_file()}")


def stop(quiet=False, wait=60):
    """Stop JupyterHub; it stops the proxy and every user's server first. Files and submissions stay."""
    pid = running_pid()
    if pid is None:
        if not quiet:
            say("not running")
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if not alive(pid):
            break
        time.sleep(0.3)
    else:
        os.killpg(pid, signal.SIGKILL)
    pid_file().unlink(missing_ok=True)
    say(f"JupyterHub stopped (pid {pid})")


def grade(assignment):
    """``attnkit grade`` as root (the sandbox's tested path) on the instructor's submitted/, then what root
    wrote in the course folder given back to the instructor (whose formgrader and feedback steps need it)."""
    require_root()
    course = course_dir()
    run([str(PREFIX / "bin" / "attnkit"), "--root", str(course), "grade", assignment,
         "--submissions", str(course / "submitted")])
    run(["find", str(course), "-xdev", "-user", "root", "-exec", "chown", "-h", f"{INSTRUCTOR}:{INSTRUCTOR}", "{}", "+"])


def status():
    pid = running_pid()
    say(f"running (pid {pid}): http://127.0.0.1:{PORT}/" if pid else "not running")
    return 0 if pid else 3


LOCK = []


def hold_lock():
    """One course.py at a time on this prefix (a setup racing a start or another setup leaves a mess)."""
    require_root()
    PREFIX.mkdir(parents=True, exist_ok=True)
    handle = open(PREFIX / ".course.lock", "a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        say(f"waiting for another hub/course.py on {PREFIX}")
        fcntl.flock(handle, fcntl.LOCK_EX)
    LOCK.append(handle)         # held until this process ends


def main(argv=None):
    top = argparse.ArgumentParser(prog="hub/course.py", description=__doc__.splitlines()[0])
    commands = top.add_subparsers(dest="command", required=True)
    make = commands.add_parser("setup", help="build or refresh the course under PREFIX")
    make.add_argument("--edition", type=Path, default=REPO / "build" / "student-edition",
                      help="the student edition (make publish builds it)")
    make.add_argument("--reset", action="store_true",
                      help="start the course afresh: users' homes, the exchange, the hub's database")
    commands.add_parser("start", help="start JupyterHub in the background")
    commands.add_parser("stop", help="stop JupyterHub and every user's server")
    commands.add_parser("status", help="is the hub running?")
    marking = commands.add_parser("grade", help="attnkit grade (as root) on the instructor's submitted/")
    marking.add_argument("assignment", metavar="ASSIGNMENT")
    args = top.parse_args(argv)
    if args.command != "status":
        hold_lock()
    if args.command == "setup":
        setup(args.edition, reset=args.reset)
    elif args.command == "start":
        start()
    elif args.command == "stop":
        stop()
    elif args.command == "grade":
        grade(args.assignment)
    else:
        return status()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The attention course on one machine: JupyterHub, local Unix users and nbgrader's exchange. Run as root.

    python3 hub/course.py setup [--reset] [--edition DIR]   build or refresh everything under PREFIX
    python3 hub/course.py start                             start JupyterHub (background), wait until it answers
    python3 hub/course.py stop                              stop it (and every user's server)
    python3 hub/course.py status

``make hub`` is setup + start, ``make hub-stop`` is stop. Everything lives under PREFIX
(/opt/attnkit-course, or $ATTNKIT_COURSE_PREFIX), never under /root, which other users cannot read:

    venv/        the course's Python: the student edition's package + JupyterLab + nbgrader + JupyterHub, and
                 the hub's nbgrader plugins (hub/attnkit_hub.py) and the instructor's Formgrader buttons
                 (hub/attnkit_formgrader.py); in share/attnkit, MathJax for the feedback
                 pages' formulas. No grader, no reference solution; the instructor's nbgrader extensions are
                 switched off there (the edition's postBuild) and back on for the instructor only (user level).
                 Its etc/jupyter/nbgrader_config.py, read by every user, names the plugins: private hand-ins,
                 the checked collect, autograde refused (sandbox only).
    grader/      the instructor's grader (lib/grader), readable by root and group attnkit-instructors only; on
                 the course's Python path (a .pth file), where only the instructors can read it
    bin/attnkit  `attnkit` for the instructors (group attnkit-instructors): the grader, run as the instructor
    sbin/attnkit-sandbox  the grading sandbox's door to root: sudo lets the instructors' group run it with no
                 arguments (/etc/sudoers.d/attnkit-course); it takes requests as data on stdin and runs each
                 notebook in a sandbox (attnkit_grader.isolation.door). Nothing else the instructor does runs
                 as root, and the door reads nothing the instructor can write.
    proxy/       configurable-http-proxy from the npm registry
    exchange/    nbgrader's exchange (1777, as nbgrader documents, plus the sticky bit), with the course's
                 folder made by this script, owned by the instructor, so no student can take its name; its
                 inbound belongs to the instructors' group with the setgid bit, so hand-ins can be private
    etc/         jupyterhub_config.py
    state/       the hub's database, cookie secret, pid file and log; the door's scratch folders (root only)

/etc/profile.d/attnkit-course.sh puts the course's Python (and, for instructors, PREFIX/bin) on the PATH of
login shells, such as JupyterLab's terminal (bash -l; Debian's /etc/profile resets PATH).

Root writes nothing into a folder a user can change: what goes into a home (the lectures, the instructor's
course folder and nbgrader settings) is written by that user (runuser), from a tar stream root reads, and
the exchange's folders are changed through file descriptors opened without following links.

The checkout this runs from holds the solutions (source/) and the reference modules (lib/grader): setup
closes it to everyone but its owner (and says so), and refuses to go on if a student could still reach it.

Users (demo passwords, change them for a real course): instructor / attention-instructor and
student1..3 / attention-student1..3. The instructor's course folder is ~instructor/attention-kit (the
repository's source/, translations/, release/ and nbgrader_config.py), 0700 like every home here. Setup
enters the assignments the installed grader's registry knows in the gradebook and releases every folder
of release/ to the exchange, each assignment in English, French and Chinese (ps1_learnable_pe,
ps1_learnable_pe_fr, ...). Nothing run by start needs the network. The instructor grades from their own
terminal: attnkit collect, attnkit grade, attnkit release-feedback (no root shell, no sudo typed).
"""

import argparse
import fcntl
import grp
import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECORD = Path("share") / "attnkit" / "lock.txt"       # attnkit_grader.locks.RECORD: the lock a venv was made from
PREFIX = Path(os.environ.get("ATTNKIT_COURSE_PREFIX", "/opt/attnkit-course"))
PORT = int(os.environ.get("ATTNKIT_HUB_PORT", "8000"))
COURSE_ID = "attention-kit"
INSTRUCTOR = "instructor"
STUDENTS = ("student1", "student2", "student3")
INSTRUCTORS_GROUP = "attnkit-instructors"
DOOR_VARIABLE = "ATTNKIT_SANDBOX_DOOR"        # attnkit_grader.isolation.door.DOOR_VARIABLE
SUDOERS = Path("/etc/sudoers.d/attnkit-course")
PROFILE = Path("/etc/profile.d/attnkit-course.sh")
HUB_LOCK = REPO / "requirements" / "hub.txt"          # the course environment's lock (make lock; attnkit_grader.locks)
PROXY_LOCK = REPO / "requirements" / "npm" / "proxy"   # configurable-http-proxy's package.json and package-lock.json
INSTRUCTOR_EXTENSIONS = {            # switched off for everyone by the edition's postBuild, on for the instructor
    "server": ("nbgrader.server_extensions.formgrader", "nbgrader.server_extensions.course_list",
               "attnkit_formgrader"),      # the Formgrader's Collect and Autograde, the kit's way (never on elsewhere)
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
def run(command, user=None, cwd=None, env=None, quiet=False, input=None):
    """Run ``command`` (a list), as ``user`` when given (runuser, login environment not used); ``input``:
    bytes for its stdin. Returns its stdout (bytes) when ``quiet``."""
    if user:
        home = pwd.getpwnam(user).pw_dir
        base = {"HOME": home, "USER": user, "LOGNAME": user,
                "PATH": f"{PREFIX}/bin:{PREFIX}/venv/bin:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
        base.update(env or {})
        if cwd is not None:         # entered as the user: root never changes into a folder the user controls
            command = ["sh", "-c", 'cd "$1" && shift && exec "$@"', "sh", str(cwd), *command]
            cwd = None
        command = ["runuser", "-u", user, "--", "env", "-i"] + [f"{k}={v}" for k, v in base.items()] + command
        env = None
    output = subprocess.run(command, cwd=cwd, env=env, check=False, input=input,
                            stdout=subprocess.PIPE if quiet else None, stderr=subprocess.STDOUT if quiet else None)
    if output.returncode:
        detail = f"\n{output.stdout.decode('utf-8', 'replace')}" if quiet and output.stdout else ""
        raise SystemExit(f"course.py: failed ({output.returncode}): {' '.join(map(str, command))}{detail}")
    return output.stdout


def write_as(user, path, text, append=False):
    """Write ``text`` to ``path`` as ``user`` (folders made as needed, private): root never writes into a
    folder a user can change, where a planted link would turn the write against any file."""
    script = 'umask 077; mkdir -p "$(dirname "$1")" && cat ' + ('>>' if append else '>') + ' "$1"'
    run(["sh", "-c", script, "sh", str(path)], user=user, input=text.encode("utf-8"))


def copy_as(user, source, names, target):
    """Copy ``names`` (files and folders in ``source``, read by root) into the folder ``target``, written by
    ``user`` (a tar stream: root reads, the user writes)."""
    packed = subprocess.run(["tar", "-C", str(source), "-c", "--exclude=__pycache__",
                             "--exclude=.ipynb_checkpoints", *names], stdout=subprocess.PIPE, check=True).stdout
    run(["sh", "-c", 'umask 077; mkdir -p "$1" && exec tar -C "$1" -x --no-same-owner', "sh", str(target)],
        user=user, input=packed)


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
    private_checkout()
    exchange(reset)
    instructor_course(reset)
    say(f"ready: make hub (or {sys.executable} {__file__} start), then http://127.0.0.1:{PORT}/")


def require_root():
    if os.geteuid() != 0:
        raise SystemExit("course.py: run as root (it creates users and starts JupyterHub as root, as PAM needs)")


def environment(edition):
    """PREFIX/venv from the hub's lock and the student edition; PREFIX/grader and PREFIX/bin/attnkit for the
    instructor. Each is rebuilt only when what it is made from changed."""
    venv = PREFIX / "venv"
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    inputs = {name: (edition / name).read_text() for name in ("pyproject.toml", "constraints.txt", "postBuild")}
    inputs["attnkit"] = tree_digest(edition / "lib" / "attnkit")
    inputs["lock"] = HUB_LOCK.read_text()
    if changed(PREFIX / "environment.json", inputs, venv / "bin" / "jupyterhub"):
        say(f"building {venv} from {edition} (about a minute)")
        for stale in venv.glob("lib/python3*/site-packages/attnkit-grader.pth"):    # pip would check the grader's
            stale.unlink()                                                           # requirements too
        python = shutil.which("python3", path="/usr/bin:/bin")   # the system's Python: readable by every user
        if python is None:
            raise SystemExit("course.py: /usr/bin/python3 not found (apt-get install python3 python3-venv)")
        no_pip = subprocess.run([python, "-c", "import ensurepip"], capture_output=True).returncode
        if no_pip:
            apt_install("python3-venv")                                # Debian splits venv's pip out
        if (venv / "bin" / "python").exists():
            shutil.rmtree(venv)                              # only the lock's packages, none left from before
        run([python, "-m", "venv", str(venv)])
        # Every package from the lock, hashes checked, wheels only; then the edition's student package alone.
        run(pip + ["--require-hashes", "--only-binary", ":all:", "-r", str(HUB_LOCK)])
        run(pip + ["--no-deps", "--no-build-isolation", str(edition)])
        run([str(venv / "bin" / "python"), "-m", "pip", "check"], quiet=True)
        (venv / RECORD).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(HUB_LOCK, venv / RECORD)                  # what attnkit_grader.locks.identity() reads
        # The edition's postBuild switches the instructor's nbgrader extensions off in this environment.
        run(["sh", str(edition / "postBuild")], env={**os.environ, "PATH": f"{venv}/bin:/usr/bin:/bin"}, quiet=True)
        (PREFIX / "environment.json").write_text(json.dumps(inputs))
    # The grader: apart from the students' environment, readable by the instructors' group only, and on the
    # course's Python path (students' imports of it fail: they cannot read the folder).
    ensure_group(INSTRUCTORS_GROUP)
    gid = grp.getgrnam(INSTRUCTORS_GROUP).gr_gid
    grader = PREFIX / "grader"
    site = Path(run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                    quiet=True).decode().strip())
    (site / "attnkit-grader.pth").write_text(f"{grader}\n")
    for module in ("attnkit_hub.py", "attnkit_formgrader.py"):    # the hub's nbgrader plugins, Formgrader buttons
        shutil.copyfile(REPO / "hub" / module, site / module)
    inputs = {"grader": tree_digest(REPO / "lib" / "grader")}
    if changed(PREFIX / "grader.json", inputs, grader):
        say(f"installing the grader in {grader}")
        if grader.exists():
            shutil.rmtree(grader)
        run(pip + ["--no-deps", "--no-build-isolation", "--target", str(grader), str(REPO / "lib" / "grader")],
            quiet=True)                       # its dependencies, pyseccomp among them, are the lock's, in venv
        for path in [grader, *grader.rglob("*")]:
            os.chown(path, 0, gid, follow_symlinks=False)
            if not path.is_symlink():
                path.chmod(0o750 if path.is_dir() else 0o640)
        (PREFIX / "grader.json").write_text(json.dumps(inputs))
    os.chown(PREFIX / "grader.json", 0, gid)    # it names every grader file: the instructors' group's, like grader/
    (PREFIX / "grader.json").chmod(0o640)
    tools = PREFIX / "bin"
    tools.mkdir(exist_ok=True)
    tools.chmod(0o755)
    script = tools / "attnkit"
    script.write_text("#!/bin/sh\n# The grader, with the course's Python, run as the instructor who types it; the\n"
                      "# sandboxes start through the door (sudo, see sbin/attnkit-sandbox). Isolated mode: the\n"
                      "# grader and its assignments come from PREFIX/grader only, never from the current folder\n"
                      "# or PYTHONPATH (a course folder's attnkit_assignments/ is not an assignment).\n"
                      f'{DOOR_VARIABLE}="{door_program()}" exec "{venv}/bin/python" -I -m attnkit_grader "$@"\n')
    os.chown(script, 0, gid)
    script.chmod(0o750)
    sandbox_door()
    login_path()
    feedback_mathjax(venv)


def feedback_mathjax(venv):
    """MathJax for the feedback pages' formulas (attnkit_grader.offline looks in the environment's share/attnkit),
    copied from the checkout's .venv, where `make setup` installed it from npm (the version the Makefile pins)."""
    source = REPO / ".venv" / "share" / "attnkit" / "node_modules" / "mathjax"
    target = venv / "share" / "attnkit" / "node_modules" / "mathjax"
    if not (source / "package.json").is_file():
        say("warning: no MathJax in the checkout's .venv (make setup installs it): feedback pages will show TeX")
        return
    if (target / "package.json").is_file() and (target / "package.json").read_bytes() == \
            (source / "package.json").read_bytes():
        return
    say(f"copying MathJax into {target.parent}")
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, symlinks=False)
    for path in [target, *target.rglob("*")]:
        os.chown(path, 0, 0, follow_symlinks=False)
        path.chmod(0o755 if path.is_dir() else 0o644)


def door_program():
    return PREFIX / "sbin" / "attnkit-sandbox"


def sandbox_door():
    """PREFIX/sbin/attnkit-sandbox and the sudoers rule letting the instructors' group run it, no arguments.

    The door (attnkit_grader.isolation.door) runs with the course's Python in isolated mode (no PYTHONPATH,
    no user site, nothing from the current folder), keeps its scratch folders in PREFIX/state/door, and
    takes each request as data on stdin: an installed assignment's name, numbers, the notebook's bytes.
    """
    if shutil.which("sudo") is None or shutil.which("visudo", path="/usr/sbin:/sbin") is None:
        say("installing sudo (the instructors start the grading sandbox through it)")
        apt_install("sudo")
    folder = PREFIX / "sbin"
    folder.mkdir(exist_ok=True)
    os.chown(folder, 0, 0)
    folder.chmod(0o755)
    program = door_program()
    # At most one session per CPU core (2 at least) per instructor, each about 250 MiB: a slot is a lock file
    # of root's, held (read-only: nothing the door starts can write it) for the door's life.
    sessions = PREFIX / "state" / "door-sessions"
    program.write_text("#!/bin/sh\n# The grading sandbox's one door to root (hub/course.py): the instructors' group runs it\n"
                       "# through sudo with no arguments; requests arrive on stdin as data.\n"
                       f'sessions="{sessions}"\nmkdir -p "$sessions" && chmod 700 "$sessions" || exit 75\n'
                       'limit=$(nproc); [ "$limit" -ge 2 ] || limit=2\nn=0\n'
                       'while [ "$n" -lt "$limit" ]; do\n  n=$((n + 1)); slot="$sessions/uid-${SUDO_UID:-0}.$n"\n'
                       '  : >> "$slot" && exec 9<"$slot" && flock -n 9 && '
                       f'exec "{PREFIX}/venv/bin/python" -I -B -m attnkit_grader.isolation.door '
                       f'--serve --state "{PREFIX}/state/door"\n'
                       'done\necho "attnkit-sandbox: refused: $limit door sessions of yours are open already (the most '
                       'one instructor may hold, one per CPU core); wait for the other grading run to end, or grade '
                       'with fewer --workers" >&2\nexit 75\n')
    os.chown(program, 0, 0)
    program.chmod(0o755)
    rule = (f"# hub/course.py: the course's instructors start the grading sandbox's door as root, with no arguments.\n"
            f'%{INSTRUCTORS_GROUP} ALL=(root) NOPASSWD: {program} ""\n')
    staged = SUDOERS.with_name(f".{SUDOERS.name}.new")
    staged.write_text(rule)
    staged.chmod(0o440)
    checked = subprocess.run([shutil.which("visudo", path="/usr/sbin:/sbin"), "-cf", str(staged)],
                             capture_output=True, text=True)
    if checked.returncode:
        staged.unlink()
        raise SystemExit(f"course.py: the sudoers rule does not parse: {checked.stdout}{checked.stderr}")
    staged.rename(SUDOERS)


def login_path():
    """/etc/profile.d/attnkit-course.sh: the course's tools on the PATH of login shells (not root's)."""
    PROFILE.write_text(
        "# The attention course's tools in login shells, such as JupyterLab's terminal (bash -l: Debian's\n"
        "# /etc/profile resets PATH): its Python for every user, the grader for its instructors (hub/course.py).\n"
        'if [ "$(id -u)" != 0 ]; then\n'
        f'  PATH="{PREFIX}/venv/bin:$PATH"\n'
        f'  case " $(id -Gn 2>/dev/null) " in *" {INSTRUCTORS_GROUP} "*) PATH="{PREFIX}/bin:$PATH" ;; esac\n'
        "  export PATH\n"
        "fi\n")
    PROFILE.chmod(0o644)


def apt_install(*packages):
    if shutil.which("apt-get") is None:
        raise SystemExit(f"course.py: {', '.join(packages)} not found and no apt-get to install it")
    done = subprocess.run(["apt-get", "install", "-y", "-qq", *packages], capture_output=True)
    if done.returncode:
        run(["apt-get", "update", "-qq"])
        run(["apt-get", "install", "-y", "-qq", *packages])


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
    """configurable-http-proxy from the npm registry, under PREFIX/proxy (the machine's Node.js runs it), by
    ``npm ci`` from the committed lock (requirements/npm/proxy)."""
    folder = PREFIX / "proxy"
    binary = folder / "node_modules" / ".bin" / "configurable-http-proxy"
    lock = (PROXY_LOCK / "package-lock.json").read_bytes()
    if binary.exists() and (folder / "package-lock.json").is_file() and (folder / "package-lock.json").read_bytes() == lock:
        return
    say("installing configurable-http-proxy (npm ci)")
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(PROXY_LOCK / name, folder / name)
    run(["npm", "ci", "--prefix", str(folder), "--no-audit", "--no-fund", "--loglevel=error"])


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
        if user != INSTRUCTOR and not os.path.lexists(home / "course"):
            # The lectures of the student edition, the student's own copy to run and change.
            copy_as(user, edition, ["course"], home)


def private_checkout():
    """Close the checkout this script runs from to every user but its owner and root when a student could
    enter it (it holds source/ with the solutions and lib/grader with the reference modules), and check."""
    def entering():
        return [u for u in STUDENTS if subprocess.run(["runuser", "-u", u, "--", "test", "-x", str(REPO)]).returncode == 0]

    if not entering():
        return
    info = os.stat(REPO)
    mode = stat.S_IMODE(info.st_mode)
    group = grp.getgrgid(info.st_gid)
    shared = [u for u in STUDENTS if u in group.gr_mem or pwd.getpwnam(u).pw_gid == info.st_gid]
    closed = mode & ~0o007 & ~(0o070 if shared else 0)
    os.chmod(REPO, closed)
    say(f"closed the checkout {REPO} to other users (mode {mode:o} -> {closed:o}): its source/ and lib/grader hold "
        "the solutions; keep a course's checkout where students cannot read it")
    still = entering()
    if still:
        raise SystemExit(f"course.py: {', '.join(still)} can still enter the checkout {REPO} (an ACL?); move the "
                         f"checkout where students cannot read it (e.g. under /root, or a folder of mode 0700) "
                         f"and run setup again")


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
    any student could take its name: outbound 0755; inbound 3733, of the instructors' group with the setgid
    bit (students write, cannot list, cannot remove others' hand-ins; what they make in it belongs to the
    instructors' group, so the hub's submit can close a hand-in to everyone but its author and the
    instructors); feedback 0711 (found by a secret hash only). The instructor owns these folders, so each is
    changed through a descriptor opened without following links: never a link planted in their place."""
    root = exchange_dir()
    if reset and root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o1777)
    instructor = pwd.getpwnam(INSTRUCTOR)
    instructors = grp.getgrnam(INSTRUCTORS_GROUP).gr_gid
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        course = owned_dir(top, COURSE_ID, instructor.pw_uid, instructor.pw_gid, 0o755)
        try:
            for name, gid, mode in (("outbound", instructor.pw_gid, 0o755), ("inbound", instructors, 0o3733),
                                    ("feedback", instructor.pw_gid, 0o711)):
                os.close(owned_dir(course, name, instructor.pw_uid, gid, mode))
        finally:
            os.close(course)
    finally:
        os.close(top)


def owned_dir(parent, name, uid, gid, mode):
    """The folder ``name`` in the folder open as ``parent`` (made if missing), given ``uid``, ``gid`` and
    ``mode``; returns its descriptor. Refuses a link or anything but a folder there."""
    try:
        os.mkdir(name, 0o700, dir_fd=parent)
    except FileExistsError:
        pass
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    except OSError as error:
        raise SystemExit(f"course.py: {name} in the exchange is not a folder (a link?): {error}") from None
    os.fchown(fd, uid, gid)
    os.fchmod(fd, mode)
    return fd


def instructor_course(reset):
    """~instructor/attention-kit: source/, translations/, release/, nbgrader_config.py (an existing folder gains
    the assignments it lacks, nothing else); the students enrolled, every assignment released to the exchange
    in every language; the instructor's own nbgrader config and
    extensions. Everything in the instructor's home is written by the instructor (see write_as)."""
    user = INSTRUCTOR
    home = Path(pwd.getpwnam(user).pw_dir)
    course = course_dir()
    if reset:
        run(["rm", "-rf", "--one-file-system", str(course)], user=user)
    if not os.path.lexists(course):
        copy_as(user, REPO, ["source", "translations", "release", "nbgrader_config.py"], course)
        write_as(user, course / "nbgrader_config.py", append=True, text=(
            "\n# The course on this machine's hub (hub/course.py): its exchange, for attnkit collect,\n"
            f"# and the late penalty: a hand-in after the due date scores 0 (nbgrader's 'zero').\n"
            f"c.Exchange.root = {str(exchange_dir())!r}\n"
            'c.LateSubmissionPlugin.penalty_method = "zero"\n'))
        write_as(user, course / "students.csv", "id\n" + "".join(f"{s}\n" for s in STUDENTS))
    else:
        # the instructor's folder stays as it is; an assignment added to the kit since it was made joins it
        for folder in ("source", "translations", "release"):
            new = sorted(p.name for p in (REPO / folder).iterdir()
                         if p.is_dir() and not os.path.lexists(course / folder / p.name))
            if new:
                copy_as(user, REPO / folder, new, course / folder)
                say(f"added {', '.join(new)} to {course / folder}")
    config = home / ".jupyter"
    write_as(user, config / "nbgrader_config.py",
             "# The instructor's nbgrader: the course folder (the formgrader's too).\n"
             "c = get_config()  # noqa: F821\n"
             f"c.CourseDirectory.root = {str(course)!r}\n")
    # The instructor's extensions back on at the user level, which outranks the environment's (the files
    # `jupyter server extension enable --user` and `jupyter labextension enable --level=user` write)
    # and the formgrader, which JupyterLab shows in a frame, may be framed by the instructor's own pages
    # (jupyterhub-singleuser forbids every frame by default: frame-ancestors 'none')
    write_as(user, config / "jupyter_server_config.json", json.dumps(
        {"ServerApp": {"jpserver_extensions": {name: True for name in INSTRUCTOR_EXTENSIONS["server"]},
                       "tornado_settings": {"headers": {"Content-Security-Policy": "frame-ancestors 'self'"}}}},
        indent=1))
    write_as(user, config / "labconfig" / "page_config.json", json.dumps(
        {"disabledExtensions": {name: False for name in INSTRUCTOR_EXTENSIONS["lab"]}}, indent=1))
    run(["chmod", "700", str(course)], user=user)
    nbgrader = ["nbgrader"]
    run(nbgrader + ["db", "student", "import", "students.csv"], user=user, cwd=course, quiet=True)
    # generate_assignment fills the gradebook, which grading needs; the language editions (release/
    # ASSIGNMENT_fr, ASSIGNMENT_zh, generated by `attnkit release` and committed) are graded as the assignment
    # itself and never enter the gradebook: every folder of release/ is only released, under its own name
    for assignment in graded_assignments():
        run(nbgrader + ["generate_assignment", assignment, "--force"], user=user, cwd=course, quiet=True)
    released = sorted(p.name for p in (REPO / "release").iterdir() if p.is_dir())
    for name in released:
        run(nbgrader + ["release_assignment", name, "--force"], user=user, cwd=course, quiet=True)
    say(f"course folder {course}; released {', '.join(released)} to {exchange_dir() / COURSE_ID}")


def graded_assignments():
    """The assignments the installed grader's registry knows (attnkit_grader.registry)."""
    listed = run([str(PREFIX / "venv" / "bin" / "python"), "-I", "-c",
                  "from attnkit_grader import registry; print(*registry.assignments())"], quiet=True)
    return listed.decode().split()


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
        "# Every course user's nbgrader (students and instructor): the course, its exchange, and the hub's\n"
        "# plugins (hub/attnkit_hub.py): private hand-ins, collect through attnkit's checks (`nbgrader collect`),\n"
        "# and autograde refused in favour of the sandboxed `attnkit grade` (`nbgrader autograde`; the\n"
        "# Formgrader's Collect and Autograde buttons run attnkit itself: hub/attnkit_formgrader.py); feedback pages made\n"
        "# complete offline by the grader's exporter (the Generate Feedback button and `nbgrader generate_feedback`).\n"
        "c = get_config()  # noqa: F821\n"
        f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
        f"c.Exchange.root = {str(exchange_dir())!r}\n"
        'c.ExchangeFactory.submit = "attnkit_hub.PrivateSubmit"\n'
        'c.ExchangeFactory.collect = "attnkit_hub.CheckedCollect"\n'
        'c.Autograde.exporter_class = "attnkit_hub.SandboxedGradingOnly"\n'
        'c.GenerateFeedback.exporter_class = "attnkit_grader.offline.FeedbackExporter"\n')


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
    args = top.parse_args(argv)
    if args.command != "status":
        hold_lock()
    if args.command == "setup":
        setup(args.edition, reset=args.reset)
    elif args.command == "start":
        start()
    elif args.command == "stop":
        stop()
    else:
        return status()
    return 0


if __name__ == "__main__":
    sys.exit(main())

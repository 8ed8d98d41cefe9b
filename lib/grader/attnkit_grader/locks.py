"""The locks of the kit's environments and what is installed in them (the contributors' guide, "The lock").

``requirements/*.txt`` hold every package of each environment at one version, with its hashes, for Linux
x86-64 and CPython 3.11 (``make lock`` writes them from ``requirements/*.in``): ``kit`` (the kit's .venv, also
a grading cluster's machines), ``site`` and ``browser`` (added to it by ``make site`` and the browser tests),
``hub`` (the course's environment on the hub). ``constraints.txt`` holds the student pins: the hub lock's
versions without local labels or hashes, which the student edition ships.

    python -m attnkit_grader.locks student LOCK           the student pins of LOCK, on stdout
    python -m attnkit_grader.locks check LOCK [--also LOCK...]
                                                          exit 1 naming each package this environment holds that
                                                          the locks do not, at another version, or that LOCK
                                                          holds and is not installed

Standard library only: ``make lock`` and the hub's setup run it before any environment exists.
"""

import argparse
import functools
import hashlib
import importlib.metadata
import platform
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

LOCAL = {"attention-kit", "attention-kit-grader"}      # this checkout's packages: installed apart, never locked
RECORD = Path("share") / "attnkit" / "lock.txt"          # the lock an environment was installed from, under sys.prefix
INSTALLERS = {"pip", "setuptools"}                       # locked for the environments, no student pin
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def normalise(name):
    """A distribution's name as the package index compares it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(text):
    """{name: version} of a lock's or constraints file's text."""
    found = {}
    for line in text.splitlines():
        match = PIN.match(line)
        if match:
            found[normalise(match[1])] = match[2]
    return found


def read(path):
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"lock: {path} does not exist (make lock writes it)")
    return pins(path.read_text(encoding="utf-8"))


def student(lock):
    """The student pins of ``lock`` (a path): the same versions, no local label (torch 2.13.0, not 2.13.0+cpu:
    the students' own machines take PyPI's build for their system), no hash, no installer."""
    lines = [f"{name}=={version.split('+')[0]}" for name, version in sorted(read(lock).items())
             if name not in INSTALLERS]
    return ("# The student pins: the versions the course is tested with (requirements/hub.txt, Linux x86-64, CPython\n"
            "# 3.11), without hashes or local labels, for `pip install -c constraints.txt \".[notebooks]\"` on any\n"
            "# system (untested elsewhere). Written by make lock; never edit by hand.\n" + "\n".join(lines) + "\n")


def site_packages():
    """This environment's own folders of installed packages (not the whole sys.path: setuptools, once imported,
    appends its vendored copies to it, which no installer put there)."""
    return list(dict.fromkeys(sysconfig.get_path(name) for name in ("purelib", "platlib")))


def installed(path=None):
    """{name: version} of the distributions installed in ``path`` (default: :func:`site_packages`), the first of
    each name."""
    found = {}
    for distribution in importlib.metadata.distributions(path=path if path is not None else site_packages()):
        name = distribution.metadata["Name"]
        if name:
            found.setdefault(normalise(name), distribution.version)
    return found


def differences(exact, present, also=()):
    """Lines naming what ``present`` ({name: version}) holds outside the locks ``exact`` and ``also``, at another
    version than they say, and what ``exact`` holds that is not present. Empty: the environment is its lock."""
    allowed = {}
    for lock in (*also, exact):
        allowed.update(lock)
    lines = []
    for name, version in sorted(present.items()):
        if name in LOCAL:
            continue
        if name not in allowed:
            lines.append(f"{name}=={version} is installed but in no lock")
        elif allowed[name] != version:
            lines.append(f"{name}: {version} installed, the lock says {allowed[name]}")
    lines += [f"{name}=={version} is in the lock but not installed" for name, version in sorted(exact.items())
              if name not in present]
    return lines


@functools.lru_cache(maxsize=1)
def identity():
    """What the grades depend on in this environment, for the grading journal's key: the lock it was installed
    from (its sha256, or None where none was recorded), every installed distribution and its version (a
    digest), the Python, and the torch and numpy that the sandboxes import (they run this interpreter)."""
    record = Path(sys.prefix) / RECORD
    present = installed()
    packages = "\n".join(f"{name}=={version}" for name, version in sorted(present.items()))
    return {"lock": hashlib.sha256(record.read_bytes()).hexdigest()[:16] if record.is_file() else None,
            "packages": hashlib.sha256(packages.encode()).hexdigest()[:16],
            "python": platform.python_version(), "torch": present.get("torch"), "numpy": present.get("numpy")}


# What the kit takes from Debian, which no lock can pin: recorded in each test run's header instead (tests/conftest.py).
SYSTEM_PACKAGES = ("bubblewrap", "libseccomp2", "fonts-noto-cjk", "chromium", "nodejs", "python3", "sudo")


def system_versions(names=SYSTEM_PACKAGES):
    """'name version' for each Debian package of ``names`` (version 'not installed' where it is not), and
    Node.js's and npm's own versions (they may come from elsewhere than Debian)."""
    lines = []
    for name in names:
        try:
            done = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", name], capture_output=True, text=True)
            version = done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "not installed"
        except OSError:
            version = "unknown (no dpkg-query)"
        lines.append(f"{name} {version}")
    for tool in ("node", "npm"):
        try:
            done = subprocess.run([tool, "--version"], capture_output=True, text=True)
            lines.append(f"{tool} {done.stdout.strip() or 'not found'}")
        except OSError:
            lines.append(f"{tool} not found")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m attnkit_grader.locks", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("student", help="the student pins of a lock").add_argument("lock", type=Path)
    check = commands.add_parser("check", help="this environment against its lock")
    check.add_argument("lock", type=Path)
    check.add_argument("--also", type=Path, nargs="*", default=[], help="locks of layers added to it")
    args = parser.parse_args(argv)
    if args.command == "student":
        sys.stdout.write(student(args.lock))
        return 0
    lines = differences(read(args.lock), installed(), [read(path) for path in args.also])
    for line in lines:
        print(f"{sys.prefix}: {line}", file=sys.stderr)
    if lines:
        print(f"the environment is not its lock ({args.lock}): remove it and set it up again (make clean setup)",
              file=sys.stderr)
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())

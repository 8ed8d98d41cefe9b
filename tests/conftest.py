"""Shared pytest setup: plots without a display, fixture notebooks kept out of collection, course copies,
the example class's generator."""

import importlib.util
import os
import shutil
from pathlib import Path

import matplotlib
import pytest

# In-process only. Setting MPLBACKEND in os.environ would leak into the nbval kernels that
# `make test` starts beside these tests, and the lecture notebooks would then lose their figures.
matplotlib.use("Agg")

# Submission fixtures include notebooks that loop forever or are not JSON: never collect them as tests.
collect_ignore = ["fixtures"]

ROOT = Path(__file__).resolve().parents[1]


def pytest_report_header(config):
    """The Debian packages the kit uses, which no lock pins: their versions in every test log (no test
    depends on them), beside the lock the environment was installed from."""
    from attnkit_grader import locks

    return [f"lock: {locks.identity()}", "system: " + "; ".join(locks.system_versions())]


def example_class_generator():
    """examples/make_example_class.py as a module (it is a script, not a package)."""
    spec = importlib.util.spec_from_file_location("make_example_class",
                                                  ROOT / "examples" / "make_example_class.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def copy_course(root):
    """Make ``root`` a course folder like the repository's: nbgrader_config.py, source/, translations/ (the
    assignments' language editions) and release/."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT / "nbgrader_config.py", root)
    for folder in ("source", "translations", "release"):
        shutil.copytree(ROOT / folder, root / folder)
    return root


@pytest.fixture(scope="session")
def sandboxes():
    """Sandboxed grading needs bubblewrap: skip without it, but fail in CI, where make test installs it."""
    from attnkit_grader.isolation import bwrap as sandbox

    reason = sandbox.unavailable_reason()
    if reason:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(reason)


def processes_of(uid):
    """The ids of the processes on this machine owned by ``uid`` (a sandbox's), read from /proc."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except OSError:                                     # the process ended while being read
            continue
        if fields.get("Uid", "").split()[:1] == [str(uid)]:
            found.append(status.parent.name)
    return found


class Clock:
    """A clock the test moves by hand (``clock.now = 10.0``), for code that takes ``clock=time.monotonic``."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


@pytest.fixture(scope="session")
def student_wheel(tmp_path_factory):
    """The student package's wheel, built as environment.yml installs it (`pip wheel . --no-deps`) from a copy of
    what it is built from (pyproject.toml, README.md, lib/), so no build folder is left in the checkout."""
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("wheel")
    project = folder / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, project / name)
    shutil.copytree(ROOT / "lib", project / "lib", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(folder / "dist"), str(project)], check=True)
    (wheel,) = (folder / "dist").glob("attention_kit-*.whl")
    return wheel


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """A test whose ``privilege`` was run as another user (tests/test_warm_start.py) is not run again here."""
    if getattr(pyfuncitem.funcargs.get("privilege"), "delegated", False):
        return True
    return None

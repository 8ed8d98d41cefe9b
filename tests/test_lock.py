"""The locks (requirements/*.txt, attnkit_grader.locks): every install path takes every package from one, and
what is installed is the lock.

The hub's environment is checked where it exists, in the browser tests (tests_browser/test_hub_environment.py).
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from attnkit_grader import locks

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements"
LOCKS = ("kit", "site", "browser", "hub")
NPM = REQUIREMENTS / "npm"


def lock_text(name):
    return (REQUIREMENTS / f"{name}.txt").read_text()


@pytest.mark.parametrize("name", LOCKS)
def test_every_pin_is_exact_and_hashed_and_no_cuda_build_is_locked(name):
    text = lock_text(name)
    entries = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 2)[2] if text.startswith("#") else text)
    pins = locks.pins(text)
    assert len(pins) == sum(1 for entry in entries if entry.strip() and not entry.startswith("#"))
    for entry in entries:
        if entry.strip() and not entry.startswith("#"):
            assert locks.PIN.match(entry) and "--hash=sha256:" in entry, entry[:200]
    assert not [n for n in pins if n.startswith("nvidia-") or n in ("triton", "pytorch-triton")], name
    assert not locks.LOCAL & set(pins) and "-e " not in text and "file:" not in text
    if name in ("kit", "hub"):
        assert pins["torch"] == "2.13.0+cpu"
        assert {"pip", "setuptools"} <= set(pins)


def test_the_layers_and_the_hub_take_the_kits_versions():
    kit = locks.read(REQUIREMENTS / "kit.txt")
    for name in ("site", "browser", "hub"):
        other = locks.read(REQUIREMENTS / f"{name}.txt")
        assert {n: (v, kit[n]) for n, v in other.items() if n in kit and kit[n] != v} == {}, name
    hub = locks.read(REQUIREMENTS / "hub.txt")
    assert {"jupyterhub", "nbgrader", "jupyterlab", "numpy", "torch", "pyseccomp", "distributed"} <= set(hub)
    assert not {"pytest", "sphinx", "playwright"} & set(hub), "the course's environment holds no test tool"


def test_the_student_pins_are_the_hub_locks_versions_without_labels_or_hashes():
    pins = locks.pins((ROOT / "constraints.txt").read_text())
    hub = locks.read(REQUIREMENTS / "hub.txt")
    assert pins == {n: v.split("+")[0] for n, v in hub.items() if n not in locks.INSTALLERS}, \
        "constraints.txt lags requirements/hub.txt: run make lock"
    assert pins["torch"] == "2.13.0" and "--hash" not in (ROOT / "constraints.txt").read_text()


def test_this_environment_is_its_lock():
    """Everything the kit's environment imports from is in the kit's lock (or a layer's) at its version, and
    everything in the kit's lock is installed: no package floats in from anywhere else."""
    layers = [locks.read(REQUIREMENTS / f"{name}.txt") for name in ("site", "browser")]
    assert locks.differences(locks.read(REQUIREMENTS / "kit.txt"), locks.installed(), layers) == []
    assert (Path(sys.prefix) / locks.RECORD).read_text() == lock_text("kit"), "make setup records its lock"


def test_the_check_names_a_floating_package_another_version_and_a_missing_one():
    lock = {"numpy": "2.4.6", "torch": "2.13.0+cpu"}
    present = {"numpy": "2.5.0", "rich": "15.0.0", "attention-kit": "0.1.0"}
    assert locks.differences(lock, present) == ["numpy: 2.5.0 installed, the lock says 2.4.6",
                                                "rich==15.0.0 is installed but in no lock",
                                                "torch==2.13.0+cpu is in the lock but not installed"]
    check = subprocess.run([sys.executable, "-m", "attnkit_grader.locks", "check", str(REQUIREMENTS / "hub.txt")],
                           capture_output=True, text=True)
    assert check.returncode == 1 and "is installed but in no lock" in check.stderr   # pytest: not in the hub's


def test_the_grading_journal_keys_on_the_environment():
    found = locks.identity()
    assert found["torch"] == "2.13.0+cpu" and found["numpy"] == locks.read(REQUIREMENTS / "kit.txt")["numpy"]
    assert found["lock"] and found["packages"] and found["python"].startswith("3.11.")


@pytest.mark.parametrize("folder", sorted(p.name for p in NPM.iterdir()))
def test_each_npm_tree_is_locked_with_integrity_and_no_download_address(folder):
    package = json.loads((NPM / folder / "package.json").read_text())
    lock = json.loads((NPM / folder / "package-lock.json").read_text())
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", v) for v in package["dependencies"].values()), package
    assert lock["packages"][""]["dependencies"] == package["dependencies"]
    installed = {k: v for k, v in lock["packages"].items() if k}
    assert installed and all(v.get("integrity", "").startswith("sha512-") for v in installed.values())
    assert "resolved" not in json.dumps(lock)
    for name, version in package["dependencies"].items():
        assert installed[f"node_modules/{name}"]["version"] == version


def test_the_feedback_pages_mathjax_is_the_locked_one():
    installed = Path(sys.prefix) / "share" / "attnkit" / "node_modules" / "mathjax" / "package.json"
    if not installed.is_file():
        pytest.skip("no MathJax in this environment (make setup installs it where npm is)")
    locked = json.loads((NPM / "mathjax" / "package-lock.json").read_text())["packages"]["node_modules/mathjax"]
    assert json.loads(installed.read_text())["version"] == locked["version"]

"""The kit's dependency lists agree, torch is pinned for setup, and student installs carry no solutions."""

import ast
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def environment():
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def test_environment_yml_takes_python_and_pip_from_conda_and_the_rest_at_the_student_pins():
    """conda installs CPython 3.11 and pip, nothing else; pip the kit as a regular package (so the reference
    solutions, excluded from the wheel, never reach students) with the notebooks extra, at constraints.txt's pins."""
    dependencies = environment()["dependencies"]
    conda = [entry for entry in dependencies if not isinstance(entry, dict)]
    assert conda == ["python=3.11", "pip"], conda
    pip_sections = [entry["pip"] for entry in dependencies if isinstance(entry, dict)]
    assert pip_sections == [["-c constraints.txt", ".[notebooks]"]], pip_sections
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {"jupyterlab-language-pack-fr-FR", "jupyterlab-language-pack-zh-CN"} <= set(extras["notebooks"])


def test_the_package_ranges_stay_loose_and_the_lock_pins_torch():
    """The student package's own ranges stay loose (other systems resolve them); the exact versions are the
    lock's (tests/test_lock.py), which the Makefile installs."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert all("==" not in requirement for requirement in project["dependencies"]), project["dependencies"]
    assert "--require-hashes" in (ROOT / "Makefile").read_text() and "requirements/kit.txt" in (ROOT / "Makefile").read_text()


def test_ci_runs_the_readme_test_command():
    readme, ci = (ROOT / "README.md").read_text(), (ROOT / ".ci" / "run").read_text()
    assert "make test" in readme and re.search(r"^make test$", ci, re.M)


@pytest.mark.slow
def test_student_wheel_holds_the_student_package_only(student_wheel):
    """`pip wheel . --no-deps`, as environment.yml installs it: the student package and its metadata, no
    solution, no judge, no grader or sandbox module, no console script."""
    wheel = student_wheel
    archive = zipfile.ZipFile(wheel)
    names = archive.namelist()
    assert {"attnkit/__init__.py", "attnkit/attention.py", "attnkit/checking.py"} <= set(names), names
    assert {f"attnkit/locale/{code}/LC_MESSAGES/attnkit.mo" for code in ("fr", "zh")} <= set(names), names
    packages = {name.split("/")[0] for name in names}
    assert packages == {"attnkit", wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info"}, packages
    imported = set()
    for name in (n for n in names if n.endswith(".py")):
        for node in ast.walk(ast.parse(archive.read(name))):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level:
                imported.add(node.module.split(".")[0])
    assert not imported & {"attnkit_grader", "attnkit_assignments", "attnkit_sandbox", "nbgrader"}, imported
    # Nothing in it answers an exercise: no function or class named like a reference solution's public ones
    # (rotary_embedding, alibi_slopes, RelativeMultiHeadAttention, ...), wherever in the package it is defined.
    answers = set()
    for reference in (ROOT / "lib" / "grader" / "attnkit_assignments").glob("*/reference.py"):
        answers |= {node.name for node in ast.parse(reference.read_text()).body
                    if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_")}
    assert {"rotary_embedding", "alibi_slopes", "causal_alibi_attention", "LearnablePositionalEncoding"} <= answers
    defined = {node.name for name in names if name.endswith(".py") for node in ast.walk(ast.parse(archive.read(name)))
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    assert not defined & answers, sorted(defined & answers)
    entry_points = [name for name in names if name.endswith("entry_points.txt")]
    assert not entry_points or "console_scripts" not in archive.read(entry_points[0]).decode()


def test_importing_the_kit_and_measuring_memory_load_no_heavy_extras():
    """`import attnkit` leaves matplotlib for the first plot, and a memory measurement does not pull in
    torch._dynamo: each costs every graded kernel and every sandboxed run 0.4 s and 1.6 s of CPU."""
    code = ("import sys, torch, attnkit\n"
            "from attnkit.checking import largest_allocation\n"
            "largest_allocation(lambda x: x @ x, torch.ones(3, 3))\n"
            "print('matplotlib' in sys.modules, 'torch._dynamo' in sys.modules)\n"
            "attnkit.plot([0, 1], [[0, 1]])\n"
            "print('matplotlib' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env={"MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"})
    assert result.stdout.split() == ["False", "False", "True"]

"""The kit's dependency lists agree, torch is pinned for setup, and student installs carry no solutions."""

import ast
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CONDA_TO_PIP = {"pytorch": "torch"}
NOT_PACKAGES = {"python", "pip"}
STUDENT_ONLY = {"font-ttf-noto-cjk"}           # conda's CJK font for the Chinese figures: no PyPI counterpart
NOT_FOR_STUDENTS = {"site", "hub"}             # extras of the instructor's machine: the website, the hub
LANGUAGE_PACKS = ["jupyterlab-language-pack-fr-FR", "jupyterlab-language-pack-zh-CN"]


def _split(requirement):
    """'torch>=2.2' -> ('torch', '>=2.2'), names normalised as PEP 503 does."""
    match = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*(.*?)\s*", requirement)
    name = re.sub(r"[-_.]+", "-", match.group(1)).lower()
    return name, match.group(2).replace(" ", "")


def pyproject_requirements():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for name, extra in project["optional-dependencies"].items():
        if name not in NOT_FOR_STUDENTS:
            requirements += extra
    return dict(_split(r) for r in requirements)


def environment():
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def conda_requirements():
    """conda's packages and, from its pip section, the PyPI-only ones (JupyterLab's language packs)."""
    found = {}
    for entry in environment()["dependencies"]:
        for requirement in entry.get("pip", []) if isinstance(entry, dict) else [entry]:
            if requirement == ".":                  # the kit itself
                continue
            name, spec = _split(requirement)
            if name not in NOT_PACKAGES | STUDENT_ONLY:
                found[CONDA_TO_PIP.get(name, name)] = spec
    return found


def test_environment_yml_lists_the_same_dependencies_as_pyproject():
    conda, pip = conda_requirements(), pyproject_requirements()
    only_conda = {k: v for k, v in conda.items() if k not in pip}
    only_pip = {k: v for k, v in pip.items() if k not in conda}
    different = {k: (pip[k], conda[k]) for k in pip.keys() & conda.keys() if pip[k] != conda[k]}
    assert not only_conda and not only_pip and not different, (
        f"environment.yml and pyproject.toml disagree: only in environment.yml {only_conda}, "
        f"only in pyproject.toml {only_pip}, different ranges (pyproject, conda) {different}")


def test_environment_installs_the_kit_without_editable_mode():
    """pip installs the kit as a regular package, and besides it only JupyterLab's language packs."""
    pip_sections = [e["pip"] for e in environment()["dependencies"] if isinstance(e, dict)]
    assert pip_sections == [[".", *LANGUAGE_PACKS]], (
        "environment.yml must install the kit as a regular package ('- .' under pip:), so the reference "
        "solutions (excluded from the wheel) never reach students, and JupyterLab's French and Chinese "
        f"language packs, nothing else; got {pip_sections}")


def test_environment_names_a_cjk_font_for_the_chinese_figures():
    assert "font-ttf-noto-cjk" in environment()["dependencies"]


def test_torch_is_pinned_by_the_constraints_file_used_in_setup():
    pins = [line.strip() for line in (ROOT / "constraints.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")]
    assert "torch==2.13.0" in pins
    assert "-c constraints.txt" in (ROOT / "Makefile").read_text()
    torch_range = pyproject_requirements()["torch"]
    assert "==" not in torch_range, "the package's own torch range must stay loose"


def test_ci_runs_the_readme_test_command():
    readme, ci = (ROOT / "README.md").read_text(), (ROOT / ".ci" / "run").read_text()
    assert "make test" in readme and re.search(r"^make test$", ci, re.M)


@pytest.mark.slow
def test_student_wheel_holds_the_student_package_only(tmp_path):
    """`pip wheel . --no-deps`, as environment.yml installs it: the student package and its metadata, no
    solution, no judge, no grader or sandbox module, no console script."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, project / name)
    shutil.copytree(ROOT / "lib", project / "lib", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(tmp_path / "dist"), str(project)], check=True)
    (wheel,) = (tmp_path / "dist").glob("attention_kit-*.whl")
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

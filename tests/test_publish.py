"""The student edition (attnkit publish): what students receive holds no solution, no hidden test, no
source/ file and no instructor code, installs the student package only, and its lectures run from it."""

import json
import os
import tomllib
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from attnkit_grader.cli import main
from attnkit_grader.publish import INSTRUCTOR_EXTENSIONS, STUDENT_EXTENSIONS, student_edition

ROOT = Path(__file__).resolve().parents[1]
SECRETS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "attnkit_assignments",
           "attnkit_grader", "attnkit_sandbox", "attnkit.solutions")


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("edition") / "student"
    assert main(["publish", str(out)]) == 0
    return out


def test_the_edition_holds_the_lectures_the_releases_and_the_student_package(edition):
    names = {p.relative_to(edition).as_posix() for p in edition.rglob("*") if p.is_file()}
    lectures = {p.relative_to(ROOT).as_posix() for p in (ROOT / "course").glob("*.ipynb")}
    released = {p.relative_to(ROOT).as_posix() for p in (ROOT / "release").rglob("*") if p.is_file()}
    assert lectures | released <= names
    assert {"README.md", "environment.yml", "pyproject.toml", "constraints.txt", "postBuild",
            "lib/attnkit/__init__.py", "lib/attnkit/checking.py"} <= names
    assert {name.split("/")[0] for name in names} == {"README.md", "environment.yml", "pyproject.toml",
                                                      "constraints.txt", "postBuild", "course", "release", "lib"}
    assert {name.split("/")[1] for name in names if name.startswith("lib/")} == {"attnkit"}


def test_the_edition_offers_every_language_and_says_how_to_switch_jupyterlab(edition):
    readme, environment = (edition / "README.md").read_text(), (edition / "environment.yml").read_text()
    for language in ("fr", "zh"):
        lectures = {p.name for p in (edition / "course" / language).glob("*.ipynb")}
        assert lectures == {p.name for p in (ROOT / "course").glob("*.ipynb")}, language
        assert f"course/{language}/" in readme
    assert "Settings → Language" in readme
    assert "- .[notebooks]" in environment, "environment.yml (conda, Binder) does not install the notebooks extra"
    assert "- -c constraints.txt" in environment and (edition / "constraints.txt").is_file()
    for pack in ("jupyterlab-language-pack-fr-FR", "jupyterlab-language-pack-zh-CN"):
        assert '".[notebooks]"' in readme.split("pip install", 1)[1].splitlines()[0]
        assert f"{pack.lower()}==" in (edition / "constraints.txt").read_text().lower(), f"no student pin for {pack}"
        assert pack in tomllib.loads((edition / "pyproject.toml").read_text())["project"]["optional-dependencies"][
            "notebooks"], f"pip's notebooks extra (the pip install in README, the hub) does not install {pack}"


def test_nothing_an_instructor_keeps_is_inside(edition):
    for path in (p for p in edition.rglob("*") if p.is_file()):
        text = path.read_bytes().decode("utf-8", "replace")
        leaked = [secret for secret in SECRETS if secret in text]
        assert not leaked, f"{path.relative_to(edition)} holds {leaked}"
    assert not any(part in ("source", "translations", "grader", "tests", "submitted", "autograded", "feedback",
                            "grades")
                   for p in edition.rglob("*") for part in p.relative_to(edition).parts)
    assert not list(edition.rglob("gradebook.db")) and not list(edition.rglob("nbgrader_config.py"))
    for lecture in (edition / "course").glob("*.ipynb"):           # lectures send students to release/
        text = "".join("".join(c["source"]) for c in json.loads(lecture.read_text())["cells"])
        assert "source/" not in text and "release/ps" in text, lecture.name


def test_post_build_switches_off_the_instructors_extensions_only(edition):
    script = (edition / "postBuild").read_text()
    assert os.access(edition / "postBuild", os.X_OK)
    for name in INSTRUCTOR_EXTENSIONS["server"]:
        assert f"jupyter server extension disable --sys-prefix {name}" in script
    for name in INSTRUCTOR_EXTENSIONS["lab"]:
        assert f"jupyter labextension disable --level=sys_prefix {name}" in script
    for name in (*STUDENT_EXTENSIONS["server"], *STUDENT_EXTENSIONS["lab"]):
        assert f"disable --sys-prefix {name}" not in script and f"disable --level=sys_prefix {name}" not in script


def test_publish_refuses_to_overwrite_or_to_write_into_the_repository(tmp_path):
    out = tmp_path / "edition"
    out.mkdir()
    (out / "mine.txt").write_text("a student's file")
    with pytest.raises(FileExistsError, match="out: .* --force"):
        student_edition(ROOT, out)
    assert (out / "mine.txt").read_text() == "a student's file"
    for inside in (ROOT / "edition", ROOT / "release" / "edition", ROOT):
        with pytest.raises(ValueError, match="out: .* inside the kit's repository"):
            student_edition(ROOT, inside)
    assert main(["publish", str(out)]) == 2                        # the command says why, exit status 2


@pytest.mark.slow
def test_the_student_wheel_of_the_edition_holds_the_student_package_only(edition, tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(tmp_path), str(edition)], check=True)
    (wheel,) = tmp_path.glob("attention_kit-*.whl")
    import zipfile
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names if not name.startswith("attention_kit-")} == {"attnkit"}


@pytest.mark.slow
def test_a_lecture_runs_from_the_edition_with_its_own_package(edition):
    """Lecture 3 executed in the edition's course/, importing attnkit from the edition's lib/."""
    path = edition / "course" / "03_positional_encoding.ipynb"
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(
        "import attnkit\nprint(attnkit.__file__)"))
    env = {**os.environ, "PYTHONPATH": str(edition / "lib"), "MPLBACKEND": "Agg"}
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        NotebookClient(notebook, timeout=120, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    errors = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, json.dumps(errors[0])[:500]
    last = "".join(o.get("text", "") for o in notebook.cells[-1].outputs).split()
    assert last[0].startswith(str(edition / "lib" / "attnkit"))

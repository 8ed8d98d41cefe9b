"""The graded assignments: the committed release matches its source, the source passes its own tests,
the blank release fails them, nothing secret leaks into release/, and the example class is up to date.

nbgrader runs as a subprocess of this Python (``sys.executable -m nbgrader``), with its bin/ folder
first on PATH because nbgrader calls the ``alembic`` executable when it creates a gradebook.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from attnkit.checking import CellScoredZero
from conftest import example_class_generator

from attnkit_grader.editions import TRANSLATIONS, split
from attnkit_grader.files import content
from attnkit_grader import registry

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = registry.assignments()
SOURCE = [ROOT / "source" / a / f"{a}.ipynb" for a in ASSIGNMENTS]
RELEASE = [ROOT / "release" / a / f"{a}.ipynb" for a in ASSIGNMENTS]
# With the language editions (translations/ps1_learnable_pe_fr/ps1_learnable_pe.ipynb: the graded name)
FOLDERS = sorted(ASSIGNMENTS + [p.name for p in (ROOT / TRANSLATIONS).iterdir() if p.is_dir()])
EVERY_SOURCE = [ROOT / ("source" if f in ASSIGNMENTS else TRANSLATIONS) / f / f"{split(f, ASSIGNMENTS)[0]}.ipynb"
                for f in FOLDERS]
EVERY_RELEASE = [ROOT / "release" / f / f"{split(f, ASSIGNMENTS)[0]}.ipynb" for f in FOLDERS]
REGION = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS)\n(.*?)### END \1", re.S)
SECRETS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "attnkit.solutions", "attnkit_assignments",
           "hidden_checks", "Model answer", "Grading (")


def nbgrader(*args, cwd=ROOT):
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    result = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=600)
    return result.returncode, result.stdout + result.stderr


def test_every_registered_assignment_exists_in_every_language():
    """The registry's assignments are source/'s, each with its editions in translations/ and release/."""
    assert ASSIGNMENTS and ASSIGNMENTS == sorted(p.name for p in (ROOT / "source").iterdir() if p.is_dir())
    assert FOLDERS == sorted(f"{a}{suffix}" for a in ASSIGNMENTS for suffix in ("", "_fr", "_zh"))
    assert all(path.is_file() for path in EVERY_SOURCE + EVERY_RELEASE)
    assert sorted(p.name for p in (ROOT / "release").iterdir() if p.is_dir()) == FOLDERS


@pytest.mark.slow
def test_release_matches_a_fresh_generation(tmp_path):
    """Regenerate the student versions in a copy of the course (`attnkit release`: nbgrader
    generate_assignment, each language edition with its stubs); the committed release/ must equal them."""
    shutil.copy2(ROOT / "nbgrader_config.py", tmp_path)
    shutil.copytree(ROOT / "source", tmp_path / "source")
    shutil.copytree(ROOT / TRANSLATIONS, tmp_path / TRANSLATIONS)
    code = subprocess.run([sys.executable, "-m", "attnkit_grader", "--root", str(tmp_path), "-q", "release"],
                          capture_output=True, text=True, env=dict(os.environ, PATH=os.path.dirname(sys.executable)
                                                                    + os.pathsep + os.environ.get("PATH", "")))
    assert code.returncode == 0, code.stderr
    for folder, committed in zip(FOLDERS, EVERY_RELEASE):
        fresh = tmp_path / "release" / folder / committed.name
        assert content(committed.read_bytes(), committed.name) == content(fresh.read_bytes(), fresh.name), (
            f"release/{folder} is out of date: run `.venv/bin/attnkit release` from the repository root, then "
            f"`python examples/make_example_class.py`, and commit both")
        others = {p.name for p in committed.parent.iterdir()} ^ {p.name for p in fresh.parent.iterdir()}
        assert not others, f"release/{folder} and a fresh generation hold different files: {others}"


@pytest.mark.slow
@pytest.mark.parametrize("path", EVERY_SOURCE, ids=FOLDERS)
def test_source_passes_its_tests(path):
    """The instructor version, hidden tests included, earns full marks on every test cell."""
    code, log = nbgrader("validate", str(path))
    assert code == 0 and "Success! Your notebook passes all the tests." in log, log[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("path", EVERY_RELEASE, ids=FOLDERS)
def test_blank_release_fails_every_test(path):
    """The student version as handed out must not earn full marks on any test cell."""
    code, log = nbgrader("validate", "--invert", str(path))
    assert code == 0 and "Success! The notebook does not pass any tests." in log, log[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_validate_names_what_failed_in_a_cell_that_earned_nothing(assignment, tmp_path):
    """nbgrader validate on an unanswered notebook: no "partial credit" for cells that earned 0, but each
    cell's failing checks in words (Checks.score raises CellScoredZero; a number only gets the generic line)."""
    path = tmp_path / f"{assignment}.ipynb"
    shutil.copy(ROOT / "examples" / "example_class" / "blank" / assignment / f"{assignment}.ipynb", path)
    code, log = nbgrader("validate", str(path))
    tests = [c for c in nbformat.read(path, as_version=4).cells
             if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution")]
    assert "Partial credit" not in log, log[-3000:]
    assert log.count("CellScoredZero: this cell earned 0 of") == len(tests), log[-3000:]
    assert log.count("What failed:") == len(tests) and "not implemented yet" in log


@pytest.mark.parametrize("source, release", list(zip(EVERY_SOURCE, EVERY_RELEASE)), ids=FOLDERS)
def test_no_solution_or_hidden_test_leaks_into_the_release(source, release):
    text = release.read_text()
    for secret in SECRETS:
        assert secret not in text, f"{release.relative_to(ROOT)} contains {secret!r}"
    released = "\n".join(cell.source for cell in nbformat.read(release, as_version=4).cells)
    for cell in nbformat.read(source, as_version=4).cells:
        for _, region in REGION.findall(cell.source):
            for line in region.splitlines():
                line = line.strip()
                if len(line) >= 25 and not line.startswith("#"):
                    assert line not in released, f"{release.relative_to(ROOT)} shows a hidden line: {line}"


@pytest.mark.parametrize("path", EVERY_RELEASE, ids=FOLDERS)
def test_release_has_no_outputs_and_the_python3_kernel(path):
    notebook = nbformat.read(path, as_version=4)
    assert notebook.metadata.kernelspec.name == "python3"
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code")


def released_answers(assignment, namespace):
    """Run the release's answer cells in ``namespace``: the names the exercises fix, each raising
    NotImplementedError when called (a cell that raises at once, an experiment left as released, is skipped)."""
    for cell in nbformat.read(ROOT / "release" / assignment / f"{assignment}.ipynb", as_version=4).cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution"):
            try:
                exec(compile(cell.source, "/tmp/ipykernel_0/answers.py", "exec"), namespace)
            except NotImplementedError:
                pass


@pytest.mark.parametrize("path", SOURCE, ids=ASSIGNMENTS)
def test_test_cells_follow_the_house_rules(path, capsys):
    """Every autograded cell starts with a one-line docstring, ends in its score, and its checks, visible
    and hidden, add up to its points: run against answers that all raise, every check runs and fails."""
    cells = nbformat.read(path, as_version=4).cells
    setup = next(c.source for c in cells if c.metadata.get("nbgrader", {}).get("grade_id") == "setup")
    for cell in cells:
        meta = cell.metadata.get("nbgrader", {})
        if not meta.get("grade") or cell.cell_type != "code":
            continue
        lines = cell.source.splitlines()
        assert lines[0].startswith('"""') and lines[0].endswith('"""'), f"{meta['grade_id']}: docstring first"
        assert f"checks = Checks(points={meta['points']:g})" in cell.source, meta["grade_id"]
        assert lines[-1] == "checks.score()", f"{meta['grade_id']}: the last line must be checks.score()"
        assert "assert " not in cell.source, f"{meta['grade_id']}: explain failures instead of asserting"
        namespace = {"__name__": "__main__"}
        exec(compile(setup.replace("torch.set_num_threads(1)", ""), "/tmp/ipykernel_0/setup.py", "exec"), namespace)
        released_answers(path.parent.name, namespace)
        with pytest.raises(CellScoredZero, match=f"earned 0 of {meta['points']:g} points.\nWhat failed:"):
            exec(compile(cell.source, "/tmp/ipykernel_0/test.py", "exec"), namespace)     # ends with checks.score()
        checks = namespace["checks"]
        assert sum(points for _, points, _, _ in checks.results) == meta["points"], meta["grade_id"]
        assert all(message for _, _, message, _ in checks.results), meta["grade_id"]
        assert capsys.readouterr().err == ""


def test_example_class_is_up_to_date(tmp_path):
    """The committed submissions are what the generator makes from today's release/ and source/."""
    generator = example_class_generator()
    generator.write_class(tmp_path)
    committed = ROOT / "examples" / "example_class"
    mismatch = []
    for fresh in sorted(tmp_path.rglob("*")):
        if fresh.is_file():
            relative = fresh.relative_to(tmp_path)
            if not (committed / relative).is_file() or \
                    content(fresh.read_bytes(), fresh.name) != content((committed / relative).read_bytes(), fresh.name):
                mismatch.append(str(relative))
    extra = [str(p.relative_to(committed)) for p in committed.rglob("*.ipynb")
             if not (tmp_path / p.relative_to(committed)).is_file()]
    assert not mismatch and not extra, (
        f"run `python examples/make_example_class.py` and commit: differs {mismatch}, extra {extra}")


def test_expected_scores_cover_every_autograded_cell():
    generator = example_class_generator()
    expected = json.loads((ROOT / "examples" / "example_class" / "expected_scores.json").read_text())
    for assignment, source in zip(ASSIGNMENTS, SOURCE):
        cells = {c.metadata.nbgrader["grade_id"]: c.metadata.nbgrader["points"]
                 for c in nbformat.read(source, as_version=4).cells
                 if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"}
        for student, assignments in expected.items():
            if assignment not in assignments:
                continue
            scores = {k: v for k, v in assignments[assignment].items() if k != "reason"}
            assert set(scores) == set(cells), (student, assignment)
            assert all(0 <= scores[k] <= cells[k] for k in cells), (student, assignment)
    assert expected["ref_solution"] == {a: generator.full_marks(a) for a in ASSIGNMENTS}
    assert all(v == 0 for a in ASSIGNMENTS for k, v in expected["blank"][a].items() if k != "reason")

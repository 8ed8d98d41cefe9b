"""An assignment is one folder: `attnkit new-assignment NAME` scaffolds it, and the registry finds it alone.

The proof runs in a copy of the repository, the steps of the authors' guide: new-assignment, attnkit release NAME,
the worked case's numbers (catalogue --write-worked) and the example class; then pytest collects, the generic tests
and the catalogue's tests pass for the new assignment, its catalogued mistake loses points on every one of 200
seeds, and git lists only the new folder, its notebooks and what is generated from them (the release, the worked
case, the example class's submissions and expected scores). The templates are files the tools read, and an
installed (not editable) grader holds them. The registry reads only the grader's own assignment folders: a
package of the same name elsewhere on the path is refused, a manifest in a course folder is no assignment.
"""

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from attnkit_grader import scaffold
from attnkit_grader.files import content
from attnkit_grader import registry

ROOT = Path(__file__).resolve().parents[1]
NAME = "demo_assignment"
# The generic tests that run over every registered assignment, each parametrized by its name.
GENERIC = ["tests/test_judges.py", "tests/test_assignments.py", "tests/test_assignment_editions.py",
           "tests/test_bug_catalogue.py",
           "tests/test_sandbox.py::test_every_trusted_file_of_an_assignment_folder_stays_out"]
SEEDS = 200


def run(command, cwd, env, timeout=600):
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, command))} (exit {done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    """The repository's files (tracked and new, not ignored) in a fresh git repository, committed."""
    target = tmp_path_factory.mktemp("kit") / "kit"
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    git = ["git", "-c", "user.name=kit", "-c", "user.email=kit@example.org"]
    for command in (["git", "init", "-q"], ["git", "add", "-A"], [*git, "commit", "-q", "-m", "copy"]):
        subprocess.run(command, cwd=target, check=True, capture_output=True)
    return target


def rewritten_alike(copy, line):
    """True for a tracked file that a generator wrote again saying the same (another nbformat's layout, say)."""
    if line[:2] != " M":
        return False
    before = subprocess.run(["git", "show", f"HEAD:{line[3:]}"], cwd=copy, capture_output=True, check=True).stdout
    return content(before, line[3:]) == content((copy / line[3:]).read_bytes(), line[3:])


@pytest.mark.slow
def test_a_new_assignment_is_one_folder_that_every_generic_test_grades(copy):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(copy / "lib" / "grader"), str(copy / "lib")]),
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    env.pop("PYTEST_XDIST_WORKER", None)
    attnkit = [sys.executable, "-m", "attnkit_grader", "--root", str(copy)]
    written = run(attnkit + ["new-assignment", NAME, "--title", "Scaled scores"], copy, env)
    assert f"lib/grader/attnkit_assignments/{NAME}/assignment.py" in written
    run(attnkit + ["-q", "release", NAME], copy, env)
    catalogue = [sys.executable, "-m", "attnkit_grader.catalogue"]
    worked = run(catalogue + ["--write-worked", NAME], copy, env)            # the worked case, for expect_worked
    assert "unscaled" in worked and "false reassurance: 0 bugs; false alarms: 0" in worked, worked
    run([sys.executable, "examples/make_example_class.py"], copy, env)        # the example class hands it in too
    collected = run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests"],
                    copy, env)
    assert f"[{NAME}]" in collected
    # every generic test of the new assignment; nbgrader validate of its editions is left out (they are
    # copies of the English notebook until translated, and validating each costs 5 s)
    selected = f"{NAME} and not ((passes_its_tests or fails_every_test) and ({NAME}_fr or {NAME}_zh))"
    passed = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", selected, *GENERIC], copy, env)
    assert " passed" in passed and " failed" not in passed, passed
    assert f"test_a_known_bug_costs_the_checks_it_breaks_is_seen_by_the_student_and_named[{NAME}:unscaled]" in \
        run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-k", selected,
             "tests/test_bug_catalogue.py"], copy, env)               # the catalogue's tests bit on its mistake
    # the layout's rules (imports through the API alone, no cycle) and the docstrings' names over the new folder,
    # which the template only becomes here: -k selects none of these tests
    run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_layout.py",
         "tests/test_docstring_references.py"], copy, env)
    # the scaffold's catalogued mistake (forgetting / sqrt(d)) loses points at grading on every seed: the inputs
    # cannot hide it (d >= 2); printed, as the closing note's figure
    seeds = run(catalogue + ["--seeds", str(SEEDS), NAME], copy, env)
    print(seeds)
    assert seeds.strip() == f"{NAME} unscaled: loses points on {SEEDS} of {SEEDS} seeds", seeds
    status = [line for line in run(["git", "status", "--porcelain", "--untracked-files=all"], copy, env).splitlines()
              if not rewritten_alike(copy, line)]
    changed = sorted(line[3:] for line in status)
    allowed = (f"lib/grader/attnkit_assignments/{NAME}/", f"source/{NAME}/", f"translations/{NAME}_fr/",
               f"translations/{NAME}_zh/", f"release/{NAME}/", f"release/{NAME}_fr/", f"release/{NAME}_zh/",
               f"examples/example_class/ref_solution/{NAME}/", f"examples/example_class/blank/{NAME}/",
               f"lib/attnkit/worked/{NAME}.json")
    generated = ["examples/example_class/expected_scores.json"]          # the new assignment's points added
    assert changed and all(line.startswith(allowed) or line in generated for line in changed), changed
    assert all(line.startswith("??") or line[3:] in generated for line in status), f"an existing file changed: {status}"


def test_the_templates_are_python_and_a_notebook_that_the_tools_read_with_placeholders_in_strings_only(tmp_path):
    """Each template parses as it is, and again once rendered, to the same program but for its strings: a
    placeholder never sits where code is. The notebook template is a valid notebook, and so is what it renders."""
    sources = sorted((scaffold.TEMPLATE / "assignment").rglob("*.py"))
    assert {p.relative_to(scaffold.TEMPLATE).as_posix() for p in sources} >= {
        "assignment/assignment.py", "assignment/reference.py", "assignment/checks.py", "assignment/bugs.py",
        "assignment/mutation.py", "assignment/probes/__init__.py", "assignment/__init__.py"}

    def shape(text):
        return ast.dump(ast.parse(text)).replace("{{name}}", NAME).replace("{{title}}", "Scaled scores")

    for path in sources:
        text = path.read_text(encoding="utf-8")
        assert shape(text) == ast.dump(ast.parse(scaffold.rendered(path, NAME, "Scaled scores"))), path.name
    nbformat.validate(nbformat.read(scaffold.TEMPLATE / "notebook.ipynb", as_version=4))
    (tmp_path / "lib" / "grader" / "attnkit_assignments").mkdir(parents=True)
    (tmp_path / "source").mkdir()
    written = scaffold.new_assignment(tmp_path, NAME, "Scaled scores")
    assert not [p for p in written if "{{name}}" in p.read_text() or "{{title}}" in p.read_text()]
    assert not (tmp_path / "lib" / "grader" / "attnkit_assignments" / NAME / "hidden.py").exists()
    english = nbformat.read(tmp_path / "source" / NAME / f"{NAME}.ipynb", as_version=4)
    nbformat.validate(english)
    test_cell = next(c for c in english.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test_scores")
    assert f'expect_worked(scaled_scores(queries, keys), "{NAME}/scores"' in test_cell.source
    assert f'hidden.run(checks, "{NAME}", "test_scores", scaled_scores=scaled_scores)' in test_cell.source
    with pytest.raises(ValueError, match="title"):
        scaffold.new_assignment(tmp_path, "other_assignment", 'Say "hi"')


@pytest.mark.slow
def test_an_installed_grader_holds_the_templates_and_scaffolds(tmp_path):
    """`pip wheel lib/grader`, as the hub installs it (not editable): every template file is in the wheel, and
    the scaffold run from the unpacked wheel writes the folder an editable install writes."""
    project = tmp_path / "grader"
    shutil.copytree(ROOT / "lib" / "grader", project, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(tmp_path / "dist"), str(project)], check=True)
    (wheel,) = (tmp_path / "dist").glob("attention_kit_grader-*.whl")
    shutil.unpack_archive(wheel, tmp_path / "installed", format="zip")
    templates = {p.relative_to(ROOT / "lib" / "grader").as_posix() for p in scaffold.TEMPLATE.rglob("*")
                 if p.is_file() and "__pycache__" not in p.parts}
    assert templates and templates <= {p.relative_to(tmp_path / "installed").as_posix()
                                       for p in (tmp_path / "installed").rglob("*") if p.is_file()}
    for root in ("editable", "wheel"):
        (tmp_path / root / "lib" / "grader" / "attnkit_assignments").mkdir(parents=True)
        (tmp_path / root / "source").mkdir()
    scaffold.new_assignment(tmp_path / "editable", NAME)
    code = (f"from attnkit_grader import scaffold; assert 'installed' in str(scaffold.TEMPLATE); "
            f"scaffold.new_assignment({str(tmp_path / 'wheel')!r}, {NAME!r})")
    subprocess.run([sys.executable, "-c", code], check=True,
                   env=dict(os.environ, PYTHONPATH=str(tmp_path / "installed")), cwd=tmp_path)
    assert [p.read_bytes() for p in sorted((tmp_path / "editable").rglob("*")) if p.is_file()] == \
        [p.read_bytes() for p in sorted((tmp_path / "wheel").rglob("*")) if p.is_file()]


def test_the_scaffold_refuses_a_name_taken_odd_or_like_an_edition(tmp_path):
    for name, word in (("ps1_learnable_pe", "exists already"), ("Bad-Name", "lower-case"), ("demo_fr", "language edition")):
        root = tmp_path / name
        (root / "lib" / "grader" / "attnkit_assignments" / "ps1_learnable_pe").mkdir(parents=True)
        (root / "source").mkdir()
        with pytest.raises((ValueError, FileExistsError), match=word):
            scaffold.new_assignment(root, name)
    assert not list((tmp_path / "demo_fr" / "source").iterdir())


def test_the_editions_of_a_scaffold_are_the_english_notebook_marked_untranslated(tmp_path):
    (tmp_path / "lib" / "grader" / "attnkit_assignments").mkdir(parents=True)
    (tmp_path / "source").mkdir()
    scaffold.new_assignment(tmp_path, NAME)
    english = json.loads((tmp_path / "source" / NAME / f"{NAME}.ipynb").read_text())
    for language in ("fr", "zh"):
        edition = json.loads((tmp_path / "translations" / f"{NAME}_{language}" / f"{NAME}.ipynb").read_text())
        assert scaffold.untranslated(edition) and not scaffold.untranslated(english)
        assert edition["cells"] == english["cells"]


def test_the_registry_reads_the_graders_own_folders_only(tmp_path):
    """A package named attnkit_assignments first on the path (a course folder, the current folder) is not the
    grader's: the registry refuses it, and its manifest never runs."""
    planted = tmp_path / "attnkit_assignments" / "evil"
    planted.mkdir(parents=True)
    (tmp_path / "attnkit_assignments" / "__init__.py").write_text("")
    marker = tmp_path / "manifest-ran"
    (planted / "assignment.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    done = subprocess.run([sys.executable, "-c", "from attnkit_grader import registry; registry.get('evil')"],
                          cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(tmp_path)), capture_output=True, text=True)
    assert done.returncode != 0 and "is not the grader's own" in done.stderr, done.stderr
    assert not marker.exists()
    assert set(registry.assignments()) >= {"ps1_learnable_pe", "ps2_relative_pe"}
    assert all((registry.package_dir() / name / registry.MANIFEST).is_file() for name in registry.assignments())

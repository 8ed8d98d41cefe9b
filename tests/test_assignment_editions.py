"""The assignments' language editions (translations/ASSIGNMENT_fr/, _zh/) are the graded assignment, translated.

What a translation may change, and what the grader relies on (see attnkit_grader.editions for how the
editions map onto nbgrader):

* every cell the grader relies on is byte for byte the English cell: the read-only cells (setup, test
  cells with their hidden tests, the experiment's setup, the memory demo), and the nbgrader metadata of
  every graded or answer cell (grade_id, points, locked, solution; in the release, the checksums). nbgrader
  then grades a French or Chinese notebook as the English assignment: it puts the same test cells back from
  the one gradebook entry, with the same points;
* otherwise the translation is held to the lectures' drift rules (tests/test_translations.py): the same
  cells in the same order, every code cell the same program once comments and string text are set aside,
  the same formulas and heading levels in the markdown;
* the released edition says "your code here" in its own language (nbgrader's stubs, set per language by
  `attnkit release`), and nowhere in English.

When the English assignment changes, this test names each edition cell that no longer matches: the
translator redoes it in translations/ASSIGNMENT_LANG/, then `attnkit release` regenerates release/. The slow test
at the bottom builds the example class from each edition's release and grades it: the same scores as the
English class (examples/example_class/expected_scores.json).
"""

import copy
import json
import shutil
from pathlib import Path

import pytest
from nbgrader.utils import compute_checksum
import nbformat

from attnkit_grader.editions import LANGUAGES, TRANSLATIONS
from attnkit_grader import registry
from conftest import copy_course, example_class_generator
from test_translations import drift

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = registry.assignments()
# Left out of the editions' classes: its cell loops until the 30 s timeout, whatever the language (test_grading
# grades it; its message, like every other, is translated in the catalogs that test_catalogs checks).
SLOW = {"infinite_loop"}
EDITIONS = [(a, language) for a in ASSIGNMENTS for language in LANGUAGES]
ENGLISH_STUBS = ("YOUR CODE HERE", "YOUR ANSWER HERE")


def notebook(step, assignment, language=None):
    """The notebook of ``assignment`` at ``step`` ('source': the instructor's, translations/ for an edition;
    'release'), in English or in ``language``."""
    if language:
        folder = ROOT / (TRANSLATIONS if step == "source" else step) / f"{assignment}_{language}"
    else:
        folder = ROOT / step / assignment
    return json.loads((folder / f"{assignment}.ipynb").read_text(encoding="utf-8"))


def nbgrader_meta(cell):
    return cell.get("metadata", {}).get("nbgrader")


def checksum(cell):
    """nbgrader's checksum of a cell read from a notebook file (its source as one string, as nbgrader reads it)."""
    return compute_checksum(nbformat.from_dict({**cell, "source": "".join(cell["source"])}))


def comparable_metadata(cell):
    """The cell's metadata as they must be in every edition: all of them, but the checksum nbgrader records
    for an answer cell as released (its translated text). nbgrader reads a locked cell's checksum from the
    gradebook; an answer cell's only tells whether it was left unanswered."""
    metadata = copy.deepcopy(cell.get("metadata", {}))
    if not metadata.get("nbgrader", {}).get("locked"):
        metadata.get("nbgrader", {}).pop("checksum", None)
    return metadata


def grader_cells_problems(english, translation):
    """Sentences on every cell the grader relies on that differs from the English one."""
    problems = []
    en_cells, tr_cells = english["cells"], translation["cells"]
    en_ids = [(nbgrader_meta(c) or {}).get("grade_id") for c in en_cells]
    tr_ids = [(nbgrader_meta(c) or {}).get("grade_id") for c in tr_cells]
    if [g for g in en_ids if g] != [g for g in tr_ids if g]:
        problems.append(f"graded and answer cells {[g for g in tr_ids if g]} instead of {[g for g in en_ids if g]}")
        return problems
    for en, tr in zip((c for c in en_cells if nbgrader_meta(c)), (c for c in tr_cells if nbgrader_meta(c))):
        grade_id = nbgrader_meta(en)["grade_id"]
        if comparable_metadata(en) != comparable_metadata(tr):
            problems.append(f"cell '{grade_id}': its metadata differ from the English cell's (nbgrader's are the "
                            f"grader's: copy them unchanged): {comparable_metadata(tr)} instead of "
                            f"{comparable_metadata(en)}")
        if nbgrader_meta(en).get("locked"):
            if en["source"] != tr["source"] or en["cell_type"] != tr["cell_type"]:
                problems.append(f"cell '{grade_id}' is read-only: the grader runs the English one, so it must be "
                                "the English cell byte for byte (comments and docstrings included)")
            elif checksum(en) != checksum(tr):
                problems.append(f"cell '{grade_id}': nbgrader's checksum differs from the English cell's")
    return problems


def assert_edition_matches(english, translation, where):
    problems = drift(english, translation) + grader_cells_problems(english, translation)
    assert not problems, f"{where} has drifted from the English assignment (cells count from 0):\n  " + \
        "\n  ".join(problems)


@pytest.mark.parametrize("assignment, language", EDITIONS, ids=[f"{a}_{lang}" for a, lang in EDITIONS])
def test_source_edition_is_the_english_assignment_translated(assignment, language):
    assert_edition_matches(notebook("source", assignment), notebook("source", assignment, language),
                           f"{TRANSLATIONS}/{assignment}_{language}")


@pytest.mark.parametrize("assignment, language", EDITIONS, ids=[f"{a}_{lang}" for a, lang in EDITIONS])
def test_released_edition_has_the_english_grader_cells_and_its_own_stubs(assignment, language):
    english, translation = notebook("release", assignment), notebook("release", assignment, language)
    assert_edition_matches(english, translation, f"release/{assignment}_{language}")
    stubs = LANGUAGES[language]
    for en, tr in zip(english["cells"], translation["cells"]):
        meta = nbgrader_meta(en) or {}
        if not meta.get("solution"):
            continue
        en_source, tr_source = "".join(en["source"]), "".join(tr["source"])
        assert not any(stub in tr_source for stub in ENGLISH_STUBS), (meta["grade_id"], tr_source)
        if en["cell_type"] == "code" and "YOUR CODE HERE" in en_source:
            assert stubs.code_stub.splitlines()[0] in tr_source, (meta["grade_id"], tr_source)   # indented
        if en["cell_type"] == "markdown" and "YOUR ANSWER HERE" in en_source:
            assert stubs.text_stub in tr_source, (meta["grade_id"], tr_source)


def test_every_assignment_has_every_edition():
    for assignment, language in EDITIONS:
        for step in (TRANSLATIONS, "release"):
            path = ROOT / step / f"{assignment}_{language}" / f"{assignment}.ipynb"
            assert path.is_file(), f"{path.relative_to(ROOT)} is missing"


# --------------------------------------------------------------------------------- the checker can fail

ASSIGNMENT = "ps1_learnable_pe"


def cell(notebook_dict, grade_id):
    return next(c for c in notebook_dict["cells"] if (nbgrader_meta(c) or {}).get("grade_id") == grade_id)


def test_a_translated_test_cell_is_reported():
    english = notebook("source", ASSIGNMENT)
    translation = copy.deepcopy(english)
    test = cell(translation, "test_pe_table")
    test["source"] = ["# vérifie la table\n"] + test["source"]           # a comment: the program is the same
    problems = grader_cells_problems(english, translation)
    assert problems == ["cell 'test_pe_table' is read-only: the grader runs the English one, so it must be the "
                        "English cell byte for byte (comments and docstrings included)"]
    assert drift(english, translation) == []                            # the lectures' rules alone would miss it


def test_changed_points_or_a_lost_grade_id_are_reported():
    english = notebook("source", ASSIGNMENT)
    translation = copy.deepcopy(english)
    nbgrader_meta(cell(translation, "test_pe_forward"))["points"] = 5
    assert any("'test_pe_forward': its metadata differ" in p for p in grader_cells_problems(english, translation))
    translation = copy.deepcopy(english)
    del cell(translation, "pe_answer")["metadata"]["nbgrader"]
    assert grader_cells_problems(english, translation)[0].startswith("graded and answer cells ['setup', 'test_pe")


def test_changed_code_in_an_answer_cell_is_drift_but_translated_comments_are_not():
    english = notebook("source", ASSIGNMENT)
    translation = copy.deepcopy(english)
    answer = cell(translation, "pe_answer")
    answer["source"] = [line.replace("# ", "# commentaire traduit: ") for line in answer["source"]]
    assert drift(english, translation) + grader_cells_problems(english, translation) == []
    answer["source"] = [line.replace("max_len", "maximum_length") for line in answer["source"]]
    problems = drift(english, translation)
    assert len(problems) == 1 and "the code differs" in problems[0], problems


# ------------------------------------------------- every edition's class gets the English class's scores

@pytest.fixture(scope="module")
def editions_graded(tmp_path_factory, sandboxes):
    """The example class built from each edition's release and source (students STUDENT_fr, STUDENT_zh),
    graded in one `attnkit grade` run on a copy of the course: (run, expected scores)."""
    from attnkit_grader import Course, grade

    generator = example_class_generator()
    root = copy_course(tmp_path_factory.mktemp("editions"))
    submissions = root / "handed_in"
    for language in LANGUAGES:
        built = root / f"class_{language}"
        generator.write_class(built, language=language)
        for student in (p for p in built.iterdir() if p.is_dir() and p.name not in SLOW):
            shutil.copytree(student, submissions / f"{student.name}_{language}")
    expected = json.loads((ROOT / "examples" / "example_class" / "expected_scores.json").read_text())
    run = grade(Course(root), ASSIGNMENTS, submissions, progress=False, canary=False)   # its tests: test_canary.py
    return run, expected


@pytest.mark.slow
def test_every_editions_class_gets_the_english_classs_scores(editions_graded):
    run, expected = editions_graded
    wrong = {}
    for language in LANGUAGES:
        for student, assignments in expected.items():
            for assignment, cells in assignments.items():
                if student in SLOW:
                    continue
                scored = run.table.points[f"{student}_{language}", assignment]
                for grade_id, points in cells.items():
                    if grade_id != "reason" and scored.get(grade_id) != points:
                        wrong[student, language, assignment, grade_id] = (scored.get(grade_id), points)
    assert not wrong, f"(student, language, assignment, cell): (scored, expected as in English): {wrong}"


@pytest.mark.slow
def test_an_editions_blank_notebook_is_reported_unanswered(editions_graded):
    run, _ = editions_graded
    for language in LANGUAGES:
        for assignment in ASSIGNMENTS:
            issues = run.submissions[f"blank_{language}", assignment].issue_texts()
            assert any("no answer changed since the release" in issue for issue in issues), (language, issues)


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_chinese_edition_runs_with_nothing_on_stderr(assignment, tmp_path):
    """The Chinese edition's instructor notebook (its answers, visible and hidden tests, the experiment's
    figure labelled in Chinese) runs from a fresh kernel without writing to stderr: no missing-glyph
    warning from matplotlib, and the graded cells print nothing there for a right answer."""
    from nbclient import NotebookClient

    path = ROOT / TRANSLATIONS / f"{assignment}_zh" / f"{assignment}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    stderr = [(cell.metadata.get("nbgrader", {}).get("grade_id"), "".join(output.get("text", "")))
              for cell in notebook.cells if cell.cell_type == "code"
              for output in cell.outputs if output.get("name") == "stderr" or output.output_type == "error"]
    assert not stderr, stderr
    figures = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs
               if "image/png" in o.get("data", {})]
    assert figures or assignment != "ps1_learnable_pe", "the experiment's figure was not drawn"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_an_answer_left_as_any_edition_released_it_is_unanswered(assignment):
    """The sandboxed grader scores a written answer left as released 0 ("No response") and sends the others to
    the manual grader: an edition's own released text counts as left, in every language."""
    from attnkit_grader import Course
    from attnkit_grader.release_cells import Release

    release = Release.read(Course(ROOT), assignment)
    for language in (None, *LANGUAGES):
        blank = notebook("release", assignment, language)
        answered = release.answers(json.dumps(blank).encode())
        assert answered and not any(answered.values()), (language, answered)
        written = next(c for c in blank["cells"] if (nbgrader_meta(c) or {}).get("solution")
                       and c["cell_type"] == "markdown")
        written["source"] = "".join(written["source"]) + "\nMa réponse."
        answered = release.answers(json.dumps(blank).encode())
        assert [g for g, yes in answered.items() if yes] == [nbgrader_meta(written)["grade_id"]], language

"""The copy flag (attnkit_grader.copies): an answer cell as alike to any solution the course holds (the notebook's,
the grader's reference module, the catalogue's alternatives) as a pasted or lightly edited copy is, is flagged
by the pre-check, naming that solution; correct answers written apart are not; the thresholds committed per
cell are those the measurement gives today. Nothing here changes a score: tests/test_grading.py grades the
example class, flags and all, to its expected points."""

import dataclasses
import itertools
import json
import re
from pathlib import Path

import nbformat
import pytest

from attnkit_grader import catalogue, copies
from attnkit_grader.course import Course
from attnkit_grader import registry
from attnkit_grader.judging import variants
from attnkit_grader.precheck import check_submission

ROOT = Path(__file__).resolve().parents[1]
COURSE = Course(ROOT)
ASSIGNMENTS = registry.assignments()
WHOLE = "(the whole notebook)"
SOLUTION = re.compile(r"^[ \t]*### BEGIN SOLUTION\n(.*?)^[ \t]*### END SOLUTION\n?", re.S | re.M)


def hand_in(tmp_path, assignment, answers, name="student"):
    """The release of ``assignment`` with the answer cells in ``answers`` replaced; its folder."""
    notebook = nbformat.read(ROOT / "release" / assignment / f"{assignment}.ipynb", as_version=4)
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
    folder = tmp_path / name / assignment
    folder.mkdir(parents=True)
    nbformat.write(notebook, folder / f"{assignment}.ipynb")
    return folder


def flagged(folder, assignment):
    """{answer cell: the remark} of the pre-check's copy flags, with every solution and threshold as grading has."""
    issues = check_submission(folder, ROOT / "release" / assignment, ROOT / "source" / assignment,
                              known=copies.known(COURSE, assignment), limits=copies.thresholds(assignment))
    assert not any(issue.fatal for issue in issues)
    return {dict(issue.message.args).get("cell", WHOLE): issue.reason for issue in issues if issue.message is not None}


def test_the_known_solutions_are_the_notebooks_the_reference_split_by_cell_and_the_alternatives():
    solutions = {s.name: s for s in copies.known(COURSE, "ps2_relative_pe")}
    assert set(solutions) == {"notebook", "reference", "alternative:einsum_scores",
                              "alternative:minus_inf_then_nan_to_num", "alternative:gathered_skew"}
    reference = solutions["reference"].cells
    assert set(reference) == {"index_answer", "attention_answer", "skew_answer", "causal_answer"}
    assert reference["causal_answer"].count("def ") == 4      # both functions and the two helpers they call
    assert "def skew" not in reference["causal_answer"]       # skew belongs to its own cell
    assert set(solutions["alternative:gathered_skew"].cells) == {"skew_answer"}   # the cells it rewrites only


@pytest.mark.parametrize("source", ["reference", "alternative:functional_dropout"])
def test_a_pasted_copy_of_the_reference_or_an_alternative_is_flagged_naming_it(tmp_path, source):
    """A student holding the repository pastes the grader's reference class (or an alternative), renamed."""
    solution = next(s for s in copies.known(COURSE, "ps1_learnable_pe") if s.name == source)
    folder = hand_in(tmp_path, "ps1_learnable_pe", {"pe_answer": copies.disguised(solution.cells["pe_answer"])})
    remark = flagged(folder, "ps1_learnable_pe")["pe_answer"]
    assert "100% alike" in remark and str(solution.label) in remark and "the score is unchanged" in remark


def halves(module):
    """The text of ``module`` cut in two at a top-level definition near its middle."""
    lines = module.split("\n")
    starts = [n for n, line in enumerate(lines) if line.startswith(("def ", "class "))]
    cut = starts[len(starts) // 2]
    return "\n".join(lines[:cut]), "\n".join(lines[cut:])


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
@pytest.mark.parametrize("way", ["whole", "split", "edited"])
def test_a_leaked_reference_module_is_flagged_pasted_whole_split_across_cells_or_edited(tmp_path, assignment, way):
    """The grader's reference.py, as a student holding a leaked copy hands it in: pasted whole into the first answer
    cell (each cell compared with a cell missed it: a cell holding all of it resembles none of the parts), cut in
    two across the first two answer cells, or pasted whole with every name renamed and each line commented. The
    whole notebook is compared with the module whole, and the remark names it."""
    known = copies.known(COURSE, assignment)
    reference = next(s for s in known if s.name == "reference").whole
    released = copies.answer_cells(ROOT / "release" / assignment / f"{assignment}.ipynb")
    cells = list(released)
    answers = {"whole": {cells[0]: reference}, "edited": {cells[0]: copies.disguised(reference)},
               "split": dict(zip(cells[:2], halves(reference)))}[way]
    remarks = flagged(hand_in(tmp_path, assignment, answers), assignment)
    naming = [r for r in remarks.values() if f"attnkit_assignments/{assignment}/reference.py" in r]
    assert naming and all("score is unchanged" in r for r in naming), remarks
    if assignment == "ps2_relative_pe":          # the issue's case: no cell of PS2 alone resembles it as a copy
        assert "pasted whole or split across cells" in remarks[WHOLE] and "reference.py" in remarks[WHOLE], remarks


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_whole_notebooks_assembled_from_answers_written_apart_are_not_flagged(tmp_path, assignment):
    """Every notebook made of one independent answer per cell (all combinations): none reaches copies.WHOLE
    (benchmarks/copies.py prints their containment and the margin to the least alike copy)."""
    own = registry.get(assignment).independent_answers
    known = copies.known(COURSE, assignment)
    released = copies.answer_cells(ROOT / "release" / assignment / f"{assignment}.ipynb")
    cells = [cell for cell in released if own.get(cell)]
    for choice in itertools.product(*(own[cell] for cell in cells)):
        answers = {**released, **dict(zip(cells, choice))}
        found = copies.pasted(answers, released, known)
        assert found is None, (found[0], found[1].name)
    assert copies.pasted({**released, cells[0]: known[1].whole}, released, known)[1].name == "reference"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_answers_written_apart_are_never_flagged_and_earn_full_marks(tmp_path, assignment):
    """The independent answers the thresholds are measured on: correct (full marks from the trusted judge, no
    visible check fails) and never flagged, each handed in as a student would, one cell at a time."""
    manifest = registry.get(assignment)
    notebook = json.loads((ROOT / "source" / assignment / f"{assignment}.ipynb").read_text())
    cells = {}
    for cell in notebook["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if cell["cell_type"] == "code" and (meta.get("grade_id") == "setup" or meta.get("solution")):
            cells[meta["grade_id"]] = SOLUTION.sub(lambda m: m.group(1), "".join(cell["source"]))
    for cell, answers in manifest.independent_answers.items():
        for number, code in enumerate(answers):
            assert flagged(hand_in(tmp_path, assignment, {cell: code}, f"{cell}{number}"), assignment) == {}
            if cell.startswith("experiment"):
                continue                                       # trains two models: run by hand, not here
            namespace = {"__name__": f"independent_{cell}_{number}"}
            for grade_id, source in cells.items():
                if not grade_id.startswith("experiment"):
                    exec(compile(code if grade_id == cell else source, grade_id, "exec"), namespace)  # noqa: S102
            lost = {g: [c.text() for c in found if not c.passed]
                    for g, found in catalogue.graded(assignment, namespace).items() if not all(c.passed for c in found)}
            assert not lost, (cell, number, lost)
            alarms = {g: [what for what, _, message, _ in checks.results if message is not None]
                      for g, checks in catalogue.visible(assignment, namespace).items()}
            assert not any(alarms.values()), (cell, number, alarms)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_committed_thresholds_are_the_measured_ones_with_no_false_positive(assignment):
    """copies.py's THRESHOLDS are what `python -m attnkit_grader.copies` derives now (regenerate them when an
    answer, a solution or the release changes), none flags an independent answer, and every disguised copy of a
    known solution is flagged where the cell can be flagged at all."""
    assert registry.get(assignment).copy_thresholds == copies.table(COURSE, assignment)
    for cell, found in copies.measure(COURSE, assignment).items():
        assert found["false_positives"] == 0, cell
        if found["threshold"] is not copies.NEVER:
            assert all(alike >= found["threshold"] for _, alike in found["copies"]), cell


def test_a_threshold_follows_the_most_alike_innocent_answer():
    assert copies.derive([0.1, 0.2]) == copies.FLOOR
    assert copies.derive([0.51, 0.3]) == 0.7                 # 0.51 + 0.15, rounded up to a twentieth
    assert copies.derive([0.9]) is copies.NEVER               # innocent answers that alike: no flag at all
    assert copies.held_out([0.1, 0.2, 0.5]) == 0 and copies.held_out([0.1, 0.2, 0.61]) == 1


def test_a_cell_that_is_never_flagged_stays_silent(tmp_path):
    solution = next(s for s in copies.known(COURSE, "ps1_learnable_pe") if s.name == "reference")
    folder = hand_in(tmp_path, "ps1_learnable_pe", {"pe_answer": solution.cells["pe_answer"]})
    issues = check_submission(folder, ROOT / "release" / "ps1_learnable_pe", ROOT / "source" / "ps1_learnable_pe",
                              known=copies.known(COURSE, "ps1_learnable_pe"), limits={"pe_answer": copies.NEVER})
    assert not [issue for issue in issues if issue.message is not None and "cell" in dict(issue.message.args)]
    # the notebook as a whole is still compared with each solution whole (its own threshold, copies.WHOLE)
    assert [issue for issue in issues if issue.message is not None and "split across cells" in issue.reason]
    assert variants.source_of(registry.get("ps1_learnable_pe"))            # the reference itself is untouched


def test_the_measuring_command_names_an_unknown_assignment(capsys):
    with pytest.raises(SystemExit):
        copies.main(["ps9_nowhere"])
    assert "assignments: 'ps9_nowhere' not in the registry" in capsys.readouterr().err


@pytest.mark.parametrize("field, value, error, expected", [
    ("copy_thresholds", {"pe_answer": 1.5}, ValueError, "copy_thresholds: expected a resemblance in (0, 1]"),
    ("copy_thresholds", {"pe_answer": "0.6"}, ValueError, "for cell 'pe_answer'; got '0.6'"),
    ("independent_answers", {"pe_answer": "code"}, TypeError, "independent_answers: expected a tuple of code"),
])
def test_a_manifest_with_a_bad_copy_field_is_refused_naming_it(field, value, error, expected):
    with pytest.raises(error, match=re.escape(expected)):
        dataclasses.replace(registry.get("ps1_learnable_pe"), **{field: value})


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_solution_a_copy_is_alike_to_is_named_in_the_readers_language(assignment):
    """The feedback page and the insight report name what a flagged copy is alike to: an alternative's description
    is a sentence of the assignment's catalog, so a French or Chinese page gives it translated, not in English."""
    from attnkit_grader import catalogs
    from attnkit_grader.feedback import translations

    for solution in copies.known(COURSE, assignment):
        assert catalogs.untranslated(solution.label) == [], solution.name
        for language in ("fr", "zh"):
            text = solution.label.render(translations(language, assignment).gettext)
            says = dict(solution.label.args).get("says")
            assert says is None or says.template not in text, (language, text)

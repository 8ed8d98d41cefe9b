"""The known-bug catalogue holds the tests to the truth (issue 13).

For every catalogued bug of every assignment (``attnkit_assignments.<name>.bugs``), run in this process:
- at grading (the probes and the trusted judge, on fresh inputs) it keeps exactly the points of its row
  in the catalogue's EXPECTED table and fails the checks listed there;
- in every test cell where it loses points, at least one VISIBLE check failed (no false reassurance);
- the feedback names it (its explanation, or the words of the structural check that catches it), and so do, in
  every cell where it loses points, a failed check in the student's notebook and one on the feedback page; every
  check of the values it fails names it, in the notebook and on the feedback page;
while the reference, the notebook's own solution and the alternative correct styles earn full marks,
pass every visible check (no false alarm) and get no diagnosis. ``python -m attnkit_grader.catalogue``
prints the same figures.
"""

import json
import re
from pathlib import Path

import pytest
import torch

import attnkit.checking as checking
from attnkit_grader import catalogs, catalogue, teaching
from attnkit_grader.authoring import Bug
from attnkit_grader import registry
from attnkit_grader.judging import variants

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = [a for a in registry.assignments() if variants.bugs(registry.get(a))]
CASES = [(a, bug) for a in ASSIGNMENTS for bug in variants.bugs(registry.get(a))]
MINIMUM = {"ps1_learnable_pe": 12, "ps2_relative_pe": 25, "ps3_rope": 15}   # any other: at least one known mistake
SOLUTION = re.compile(r"^[ \t]*### BEGIN SOLUTION\n(.*?)^[ \t]*### END SOLUTION\n?", re.S | re.M)


def test_each_assignment_has_a_catalogue_of_the_size_the_course_needs():
    assert ASSIGNMENTS == sorted(registry.assignments()) and set(MINIMUM) <= set(ASSIGNMENTS)
    for assignment in ASSIGNMENTS:
        bugs = variants.bugs(registry.get(assignment))
        assert len(bugs) >= MINIMUM.get(assignment, 1), assignment
        assert len({bug.name for bug in bugs}) == len(bugs), "bug names must be unique"
        ids = {spec.id for spec in registry.specs(assignment)}
        for bug in bugs:
            assert bug.says and bug.says[0].islower() and not bug.says.endswith("."), bug.name
            assert set(bug.points) <= set(registry.max_points(assignment)), bug.name
            assert bug.fails and set(bug.fails) <= ids, (bug.name, set(bug.fails) - ids)
            variants.variant(registry.get(assignment), bug)                 # every variant compiles and imports


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_each_mistake_links_the_lecture_section_and_the_exercise_that_teach_the_right_thing(assignment):
    """Every catalogued bug's ``teaches`` names at least one lecture section and one heading of its own
    assignment's exercise, and each link resolves to a heading (as the website anchors it)."""
    for bug in variants.bugs(registry.get(assignment)):
        sections = [teaching.resolve(ROOT, link) for link in bug.teaches]
        unresolved = [link for link, section in zip(bug.teaches, sections) if section is None]
        assert not unresolved, (bug.name, unresolved)
        kinds = {section.kind for section in sections}
        assert kinds == {"lecture", "exercise"}, (bug.name, bug.teaches)
        assert all(s.notebook == f"release/{assignment}/{assignment}.ipynb" for s in sections if s.kind == "exercise")


def test_a_teaches_link_to_a_heading_that_is_not_there_does_not_resolve():
    assert teaching.resolve(ROOT, "lectures/01_self_attention#4-why-divide-by-sqrt-d").heading == \
        "4. Why divide by \\sqrt d?"
    assert teaching.resolve(ROOT, "lectures/01_self_attention#4-why-divide-by-d") is None
    assert teaching.resolve(ROOT, "lectures/05_no_such_lecture#summary") is None
    with pytest.raises(ValueError, match="teaches"):
        teaching.resolve(ROOT, "course/01_self_attention.ipynb")


def test_an_edit_that_does_not_match_exactly_once_is_refused():
    broken = Bug("broken", "never applies", (("text that is not in the reference", ""),))
    with pytest.raises(ValueError, match="broken.*occurs 0 times"):
        variants.source_of(registry.get("ps1_learnable_pe"), broken)


@pytest.mark.slow
@pytest.mark.parametrize("assignment,bug", CASES, ids=[f"{a}:{b.name}" for a, b in CASES])
def test_a_known_bug_costs_the_checks_it_breaks_is_seen_by_the_student_and_named(assignment, bug):
    result = catalogue.outcome(assignment, bug)
    expected = {g: float(result.maximum[g]) for g in result.maximum} | {g: float(p) for g, p in bug.points.items()}
    assert result.points == pytest.approx(expected), "the points at grading left the catalogue's row"
    failed = {check for ids in result.failed.values() for check in ids}
    assert failed == set(bug.fails), "the failed checks left the catalogue's row"
    assert not result.reassured, f"every visible check passed in {result.reassured}, yet points are lost there"
    assert result.named, f"no feedback message names the bug: {result.messages}"
    # in each cell where it loses points, the student's notebook and the feedback page both name it, and every
    # check of the values it fails says so (its numbers, exception or message are the bug's)
    for side in ("notebook", "feedback"):
        unnamed = [g for g, named in result.named_in(side).items() if not named]
        assert not unnamed, f"no failed check names the bug in the {side} in {unnamed}: {getattr(result, side)}"
    assert not result.unnamed, f"checks of the values fail with the bug's results without naming it: {result.unnamed}"
    # every word of the feedback can reach a French or Chinese student: each failed check's name and message
    # are messages of a catalog (the assignment's, the grader's or the student package's), no English is
    # handed in as a plain value
    untranslated = [(check.id, problem) for check in result.results for problem in catalogs.untranslated(check.message)
                    + ([] if check.name in catalogs.known_messages() else [f"its name {check.name!r}"])]
    assert not untranslated, untranslated
    assert catalogue.plain(assignment, bug) == result.points, "plain nbgrader and the sandboxed grader disagree"


def _notebook_solution(assignment):
    """The source notebook's solution (setup and answer cells), as a namespace of its own."""
    notebook = json.loads((ROOT / "source" / assignment / f"{assignment}.ipynb").read_text())
    namespace = {"__name__": f"notebook_solution_{assignment}"}
    for cell in notebook["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if cell["cell_type"] == "code" and (meta.get("grade_id") == "setup" or meta.get("solution")) \
                and not meta.get("grade_id", "").startswith("experiment"):
            source = SOLUTION.sub(lambda m: m.group(1), "".join(cell["source"]))
            exec(compile(source, meta["grade_id"], "exec"), namespace)      # noqa: S102 - the kit's notebook
    return namespace


def _correct(assignment):
    yield "reference", variants.variant(registry.get(assignment), None)
    yield "notebook solution", _notebook_solution(assignment)
    for alternative in variants.alternatives(registry.get(assignment)):
        yield alternative.name, variants.variant(registry.get(assignment), alternative)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_correct_answers_in_every_style_earn_full_marks_with_no_alarm_and_no_diagnosis(assignment):
    assert len(variants.alternatives(registry.get(assignment))) >= 2
    for name, namespace in _correct(assignment):
        verdicts = catalogue.graded(assignment, namespace)
        lost = {g: [c.text() for c in checks if not c.passed] for g, checks in verdicts.items()
                if any(not c.passed for c in checks)}
        assert not lost, (name, lost)
        alarms = {g: [what for what, _, message, _ in c.results if message is not None]
                  for g, c in catalogue.visible(assignment, namespace).items()}
        assert not any(alarms.values()), (name, alarms)
    assert catalogue.plain(assignment, None) == registry.max_points(assignment)


def test_diagnosis_names_bugs_that_agree_together_and_never_the_reference():
    """On the notebook's worked case, two index bugs give the same attention: both are named."""
    reversed_rows = next(b for b in variants.bugs(registry.get("ps2_relative_pe")) if b.name == "relative_rows_reversed")
    result = catalogue.outcome("ps2_relative_pe", reversed_rows)
    together = [m for m in result.messages if "each of these known mistakes" in m]
    assert together and all(reversed_rows.says in m for m in together)
    assert any("i - j (query minus key)" in m for m in together)
    reference = catalogue.outcome("ps2_relative_pe", None)
    assert not reference.messages


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_worked_cases_shipped_to_students_are_up_to_date(assignment, tmp_path, monkeypatch):
    """attnkit/worked/<assignment>.json holds what the reference and the catalogue give now (numbers only)."""
    shipped = json.loads((checking.WORKED and open(f"{checking.WORKED}/{assignment}.json").read()))
    monkeypatch.setattr(checking, "WORKED", str(tmp_path))
    fresh = json.loads(catalogue.write_worked(assignment).read_text())
    checking._worked.cache_clear()
    checking._failures.cache_clear()
    assert set(fresh["cases"]) == set(shipped["cases"])
    for case, entry in fresh["cases"].items():
        torch.testing.assert_close(torch.tensor(shipped["cases"][case]["expected"]), torch.tensor(entry["expected"]),
                                   rtol=0, atol=1e-5)
        assert [v["bugs"] for v in shipped["cases"][case]["variants"]] == [v["bugs"] for v in entry["variants"]], case
    assert {what: [g["bugs"] for g in groups] for what, groups in fresh["checks"].items()} == \
        {what: [g["bugs"] for g in groups] for what, groups in shipped["checks"].items()}
    text = json.dumps(shipped)
    assert not re.search(r"\b(def|import|return|lambda)\b", text), "code in the worked cases"


def test_a_visible_check_that_fails_as_a_known_mistake_fails_names_it_but_counts_no_work(capsys):
    """The same exception (type and first line, wherever it was raised) or the same message as a catalogued bug
    in the same check names the bug; an answer not written yet names nothing; neither is evidence of work."""
    groups = checking._failures()["the worked case (2 heads, max_distance = 1, valid_lens = [[4, 2, 3]]): output "
                                   "and weights"]
    group = next(g for g in groups if g["failure"].startswith("RuntimeError: index -1 is out of bounds"))
    checks = checking.Checks(points=2)
    with checks("the worked case (2 heads, max_distance = 1, valid_lens = [[4, 2, 3]]): output and weights", 1):
        raise RuntimeError(group["failure"].partition(": ")[2] + "\nmore lines of the traceback")
    with checks("shape", 1, kind="structure"):
        pass
    message = checks.results[0][2]
    assert "fails here exactly as" in message and group["says"].split("; or ")[0] in message
    assert not checks.matched                      # named, but no evidence: the shape alone still counts nothing
    with pytest.raises(checking.CellScoredZero):
        checks.score()
    stub = checking.Checks(points=1)
    with stub("the worked case (2 heads, max_distance = 1, valid_lens = [[4, 2, 3]]): output and weights", 1):
        raise NotImplementedError
    assert "known mistake" not in stub.results[0][2]
    other = checking.Checks(points=1)
    with other("the worked case (2 heads, max_distance = 1, valid_lens = [[4, 2, 3]]): output and weights", 1):
        raise RuntimeError("index 7 is out of bounds for dimension 3 with size 3")
    assert "known mistake" not in other.results[0][2]


def test_visible_checks_have_names_unique_across_the_course():
    """A visible check's name keys how the catalogue's bugs make it fail (attnkit/worked/): two checks of one name
    would mix their records, in one assignment or across two."""
    names = []
    for assignment in ASSIGNMENTS:
        for checks in catalogue.visible(assignment, variants.variant(registry.get(assignment), None)).values():
            names += [what for what, _, _, _ in checks.results]
    assert len(names) == len(set(names)), sorted(n for n in set(names) if names.count(n) > 1)


def test_a_visible_check_names_a_known_mistake_and_counts_it_as_real_work():
    """expect_worked: numbers of a known mistake fail the check, name it, and are evidence for the cell."""
    entry = checking._worked("ps2_relative_pe")["cases"]["worked_output"]
    variant = entry["variants"][0]
    checks = checking.Checks(points=2)
    with checks("values", 1):
        checking.expect_worked(torch.tensor(variant["values"]), "ps2_relative_pe/worked_output", "the output")
    with checks("shape", 1, kind="structure"):
        pass
    assert "known mistake" in checks.results[0][2] and variant["says"].split(";")[0] in checks.results[0][2]
    assert checks.score() == 1.0            # the structure check counts beside a named mistake
    wrong = checking.Checks(points=2)
    with wrong("values", 1):
        checking.expect_worked(torch.tensor(variant["values"]) + 1.0, "ps2_relative_pe/worked_output", "the output")
    with wrong("shape", 1, kind="structure"):
        pass
    assert "known mistake" not in wrong.results[0][2]
    with pytest.raises(checking.CellScoredZero):
        wrong.score()                        # unexplained wrong numbers: the shape alone earns nothing


# ---------------------------------------------------------------------------------------------------
# Mutation testing (python -m attnkit_grader.mutation runs every mutant; here a sample, so it cannot rot)

@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_a_sample_of_mutants_is_killed_or_proven_equivalent(assignment):
    from attnkit_grader import mutation
    every = mutation.mutants(assignment)
    assert len(every) > 10 and len({m.code for m in every}) == len(every)      # the scaffold's one line: 12
    known = mutation.survivors_table(assignment)
    sample = every[::max(1, len(every) // 12)]
    results = [mutation.run(assignment, mutant) for mutant in sample]
    unexplained = [r.mutant.change for r in results
                   if r.status == "survived" and (r.mutant.line, r.mutant.change) not in known]
    assert not unexplained, unexplained
    assert any(r.status == "killed" for r in results)


def test_the_proof_of_equivalence_tells_a_changed_behaviour_from_a_changed_message():
    from attnkit_grader import mutation
    reference = variants.variant(registry.get("ps1_learnable_pe"), None)
    assert mutation.equivalent("ps1_learnable_pe", reference)
    for bug in variants.bugs(registry.get("ps1_learnable_pe")):
        assert not mutation.equivalent("ps1_learnable_pe", variants.variant(registry.get("ps1_learnable_pe"), bug)), bug.name
    reworded = Bug("reworded", "a different error message only",
                            (("exceeds max_len=", "is longer than max_len="),))
    assert mutation.equivalent("ps1_learnable_pe", variants.variant(registry.get("ps1_learnable_pe"), reworded))


@pytest.mark.slow
def test_validate_tells_the_truth_on_a_sample_of_the_catalogue(tmp_path):
    """nbgrader validate (the Validate button) on notebooks with known bugs: a cell that earns nothing shows
    its failing checks and never "partial credit" (python -m attnkit_grader.catalogue --validate: all)."""
    sample = {"ps1_learnable_pe": ["table_buffer", "input_scaled"],
              "ps2_relative_pe": ["index_int32", "tables_num_hiddens_wide", "skew_pad_right"]}
    for assignment, names in sample.items():
        bugs = [None] + [bug for bug in variants.bugs(registry.get(assignment)) if bug.name in names]
        problems = catalogue.validate(assignment, bugs, tmp_path)
        assert problems == {name: [] for name in ["reference", *names]}, problems

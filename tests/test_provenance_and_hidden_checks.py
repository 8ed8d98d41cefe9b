"""attnkit_grader.judging.provenance and .in_kernel: only code written in the notebook earns points, and the
hidden part of each test cell is the registry's hidden checks, run in the kernel under plain nbgrader."""

import textwrap

import pytest

from attnkit.checking import (CellScoredZero, Checks)
from attnkit_assignments.ps2_relative_pe import hidden
from attnkit_grader import registry
from attnkit_grader.judging import in_kernel, provenance

REFERENCE = "attnkit_assignments.ps2_relative_pe.reference"
PS2 = registry.get("ps2_relative_pe")



# ---------------------------------------------------------------------------------------------------
# Provenance: only code written in the notebook earns points

def run_as_notebook(source):
    """Execute ``source`` the way a notebook cell runs: in __main__, compiled from an ipykernel file name."""
    namespace = {"__name__": "__main__"}
    exec(compile(textwrap.dedent(source), "/tmp/ipykernel_1/1234.py", "exec"), namespace)
    return namespace


OWN_SKEW = """
import torch
def skew(X):
    L = X.shape[-1]
    padded = torch.cat([X.new_zeros(*X.shape[:-1], 1), X], dim=-1)
    return padded.view(*X.shape[:-2], L + 1, L)[..., 1:, :]
"""


def test_own_code_passes_provenance():
    assert provenance.problem(run_as_notebook(OWN_SKEW)["skew"], "skew", PS2) is None


def test_imported_reference_is_caught():
    ns = run_as_notebook(f"from {REFERENCE} import skew, RelativeMultiHeadAttention")
    assert "reference solutions" in provenance.problem(ns["skew"], "skew", PS2)
    assert "reference solutions" in provenance.problem(ns["RelativeMultiHeadAttention"],
                                                       "RelativeMultiHeadAttention", PS2)


def test_wrappers_and_subclasses_of_the_reference_are_caught():
    ns = run_as_notebook(f"""
        import {REFERENCE}
        from {REFERENCE} import skew as _their_skew
        def skew(X):
            return _their_skew(X)
        def skew2(X):
            return {REFERENCE}.skew(X)
        class Attention({REFERENCE}.RelativeMultiHeadAttention):
            pass
    """)
    assert provenance.problem(ns["skew"], "skew", PS2) is not None
    assert provenance.problem(ns["skew2"], "skew2", PS2) is not None
    assert provenance.problem(ns["Attention"], "Attention", PS2) is not None


def test_indirect_imports_are_caught_and_innocent_names_are_not():
    ns = run_as_notebook(f"""
        import importlib
        def skew(X):
            return importlib.import_module("{REFERENCE}").skew(X)
        class Table:
            def __init__(self):
                self.solutions = []       # an attribute that happens to be called 'solutions'
    """)
    assert provenance.problem(ns["skew"], "skew", PS2) is not None
    assert provenance.problem(ns["Table"], "Table", PS2) is None


def test_exec_of_the_reference_source_text_is_caught():
    import importlib.util
    with open(importlib.util.find_spec(REFERENCE).origin, encoding="utf-8") as handle:
        ns = run_as_notebook(handle.read())
    reason = provenance.problem(ns["RelativeMultiHeadAttention"], "RelativeMultiHeadAttention", PS2)
    assert reason is not None and "copy of the reference" in reason


def test_hidden_checks_flag_a_copy_of_the_reference_and_zero_one_loaded_from_it(capsys):
    """A copy written out in the notebook is flagged and scored as any answer (the sandboxed grader cannot
    tell either); code loaded from the solutions' own file scores 0, as in the sandbox where it fails."""
    import importlib.util
    with open(importlib.util.find_spec(REFERENCE).origin, encoding="utf-8") as handle:
        text = handle.read()
    pasted = Checks(points=2)
    hidden.skew(pasted, run_as_notebook(text)["skew"])
    assert pasted.score() == 2
    assert "FLAGGED" in capsys.readouterr().out and "copy of the reference" in pasted.flags[0]
    loaded = run_as_notebook(f"""
        import importlib.util
        spec = importlib.util.find_spec("{REFERENCE}")
        with open(spec.origin, encoding="utf-8") as source_file:
            exec(source_file.read())
    """)
    checks = Checks(points=2)
    hidden.skew(checks, loaded["skew"])
    with pytest.raises(CellScoredZero, match=r"loaded from the\s+reference solutions"):
        checks.score()
    assert "NOT GRADED" in capsys.readouterr().out


def test_hidden_checks_give_an_independent_skew_full_marks_and_a_reversed_one_nothing():
    right = Checks(points=2)
    hidden.skew(right, run_as_notebook(OWN_SKEW)["skew"])
    assert right.score() == 2
    wrong = Checks(points=2)
    hidden.skew(wrong, run_as_notebook(OWN_SKEW.replace("X], dim=-1)", "X.flip(-1)], dim=-1)"))["skew"])
    with pytest.raises(CellScoredZero):  # the input left untouched passes, but alone counts for nothing
        wrong.score()


OWN_CAUSAL = """
import math
import torch

def causal_relative_attention_naive(queries, keys, values, rel_k):
    L, d = queries.shape[1], queries.shape[2]
    distance = torch.arange(L)[None, :] - torch.arange(L)[:, None]          # (L, L): j - i
    gathered = rel_k[distance.clamp(max=0) + L - 1]                          # (L, L, d)
    scores = queries @ keys.transpose(1, 2) + torch.einsum("bid,ijd->bij", queries, gathered)
    scores = scores.masked_fill(distance > 0, float("-inf")) / math.sqrt(d)
    weights = torch.softmax(scores, dim=-1)
    return weights @ values, weights
"""


def test_in_the_kernel_the_memory_check_measures_what_the_skewed_version_allocates(capsys):
    """No memory cap stops a gathering 'skewed' version under plain nbgrader: the largest tensor decides."""
    naive = run_as_notebook(OWN_CAUSAL)["causal_relative_attention_naive"]
    checks = Checks(points=2.5)
    hidden.causal(checks, naive, naive)
    printed = capsys.readouterr().out
    assert checks.score() == 1.5, printed                 # both parity checks pass, the memory check fails
    assert "the largest tensor created was 537 MB" in printed and "skew(queries @ rel_k.T)" in printed


@pytest.mark.parametrize("grade_id", ["test_pe_table", "test_pe_forward", "test_index", "test_rel_attention",
                                      "test_skew", "test_causal"])
def test_hidden_part_of_each_cell_is_the_judges_hidden_checks(grade_id):
    """The kernel's hidden checks are the judge's, one for one: names (memory aside), points and kinds."""
    assignment = next(name for name in registry.assignments() if grade_id in registry.max_points(name))
    specs = [spec for spec in registry.specs(assignment) if spec.grade_id == grade_id and spec.hidden]
    checks = Checks(points=sum(spec.points for spec in specs))
    in_kernel.run(checks, registry.get(assignment), grade_id, {})   # nothing defined: every hidden check fails
    assert [(points, kind) for _, points, _, kind in checks.results] == [(spec.points, spec.kind) for spec in specs]
    assert all(message for _, _, message, _ in checks.results)
    names = [what for what, *_ in checks.results if not what.startswith("memory")]
    assert names == [spec.name for spec in specs if spec.probe != "causal_memory"]

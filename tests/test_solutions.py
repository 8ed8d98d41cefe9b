"""Reference solutions of the graded assignments, the check helpers and the provenance guard.

The references are compared with loops written straight from the formulas, in float64, and with the
invariants the hidden tests rely on; known-wrong variants must be told apart from the right answer.
"""

import math
import textwrap

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attnkit
from attnkit.checking import (CellScoredZero, CheckFailed, Checks, expect_close, expect_equal, expect_raises,
                              largest_allocation, single_parameter, table_of)
from attnkit_assignments.ps1_learnable_pe.reference import LearnablePositionalEncoding
from attnkit_assignments.ps2_relative_pe import hidden
from attnkit_assignments.ps2_relative_pe.reference import (RelativeMultiHeadAttention, causal_relative_attention,
                                                           causal_relative_attention_naive, relative_position_index,
                                                           skew)
from attnkit_grader.judging import in_kernel, provenance, registry

REFERENCE = "attnkit_assignments.ps2_relative_pe.reference"

SMALL = settings(max_examples=40, deadline=None)


# ---------------------------------------------------------------------------------------------------
# Loops from the formulas (float64)

def index_loop(num_queries, num_keys, k):
    return torch.tensor([[min(max(j - i, -k), k) + k for j in range(num_keys)] for i in range(num_queries)],
                        dtype=torch.int64).reshape(num_queries, num_keys)


def relative_attention_loop(module, queries, keys, values, valid_lens=None):
    """Shaw et al. for every batch, head, query and key, one number at a time."""
    h, d, k = module.num_heads, module.head_dim, module.max_distance
    Q, K, V = module.W_q(queries), module.W_k(keys), module.W_v(values)
    batch, nq, nk = queries.shape[0], queries.shape[1], keys.shape[1]
    weights = torch.zeros(batch, h, nq, nk, dtype=queries.dtype)
    Z = torch.zeros(batch, nq, h * d, dtype=queries.dtype)
    for b in range(batch):
        for head in range(h):
            cols = slice(head * d, (head + 1) * d)
            for i in range(nq):
                if valid_lens is None:
                    allowed = nk
                else:
                    allowed = int(valid_lens[b] if valid_lens.dim() == 1 else valid_lens[b, i])
                q = Q[b, i, cols]
                e = []
                for j in range(allowed):
                    r = min(max(j - i, -k), k) + k
                    e.append(float(q @ (K[b, j, cols] + module.rel_k[r])) / math.sqrt(d))
                if not e:
                    continue
                top = max(e)
                p = [math.exp(x - top) for x in e]
                total = sum(p)
                for j in range(allowed):
                    r = min(max(j - i, -k), k) + k
                    alpha = p[j] / total
                    weights[b, head, i, j] = alpha
                    Z[b, i, cols] += alpha * (V[b, j, cols] + module.rel_v[r])
    return module.W_o(Z), weights


def random_module(num_hiddens, num_heads, max_distance, bias=False, seed=0):
    torch.manual_seed(seed)
    module = RelativeMultiHeadAttention(num_hiddens, num_heads, 0.0, max_distance, bias=bias).double()
    module.eval()
    if bias:
        with torch.no_grad():
            for name in ("W_q", "W_k", "W_v", "W_o"):
                getattr(module, name).bias.normal_()
    return module


def causal_loop(queries, keys, values, rel_k):
    """Causal attention with relative keys, E rows ascending (row L-1 = distance 0), one entry at a time."""
    batch, L, d = queries.shape
    out = torch.zeros(batch, L, values.shape[-1], dtype=queries.dtype)
    weights = torch.zeros(batch, L, L, dtype=queries.dtype)
    for b in range(batch):
        for i in range(L):
            e = [float(queries[b, i] @ (keys[b, j] + 0) + queries[b, i] @ rel_k[L - 1 + j - i]) / math.sqrt(d)
                 for j in range(i + 1)]
            top = max(e)
            p = [math.exp(x - top) for x in e]
            for j in range(i + 1):
                weights[b, i, j] = p[j] / sum(p)
                out[b, i] += weights[b, i, j] * values[b, j]
    return out, weights


# ---------------------------------------------------------------------------------------------------
# relative_position_index

@SMALL
@given(st.integers(0, 7), st.integers(0, 7), st.integers(0, 9))
def test_index_matches_loop(num_queries, num_keys, k):
    got = relative_position_index(num_queries, num_keys, k)
    assert got.dtype == torch.int64
    assert torch.equal(got, index_loop(num_queries, num_keys, k))


def test_index_small_case_from_the_exercise():
    expected = torch.tensor([[2, 3, 4, 4, 4, 4], [1, 2, 3, 4, 4, 4], [0, 1, 2, 3, 4, 4], [0, 0, 1, 2, 3, 4]])
    assert torch.equal(relative_position_index(4, 6, 2), expected)


@SMALL
@given(st.integers(1, 9), st.integers(1, 9), st.integers(0, 5))
def test_index_is_toeplitz_with_diagonal_k_and_saturates(num_queries, num_keys, k):
    index = relative_position_index(num_queries, num_keys, k)
    assert torch.equal(index[1:, 1:], index[:-1, :-1])
    assert bool((torch.diagonal(index) == k).all())
    distance = torch.arange(num_keys)[None, :] - torch.arange(num_queries)[:, None]
    assert bool((index[distance >= k] == 2 * k).all()) and bool((index[distance <= -k] == 0).all())
    assert int(index.min()) >= 0 and int(index.max()) <= 2 * k


def test_index_rejects_negative_sizes():
    with pytest.raises(ValueError, match="max_distance=-1"):
        relative_position_index(3, 3, -1)


# ---------------------------------------------------------------------------------------------------
# RelativeMultiHeadAttention

@pytest.mark.parametrize("num_queries, num_keys, lens", [
    (5, 5, None), (3, 7, None), (4, 6, [6, 2]), (3, 5, [[5, 1, 3], [2, 5, 4]]), (1, 1, None)])
@pytest.mark.parametrize("bias", [False, True])
def test_attention_matches_loops(num_queries, num_keys, lens, bias):
    module = random_module(12, 3, 2, bias=bias, seed=num_keys)
    g = torch.Generator().manual_seed(1)
    queries = torch.randn(2, num_queries, 12, generator=g, dtype=torch.float64)
    keys = torch.randn(2, num_keys, 12, generator=g, dtype=torch.float64)
    values = torch.randn(2, num_keys, 12, generator=g, dtype=torch.float64)
    valid_lens = None if lens is None else torch.tensor(lens)
    with torch.no_grad():
        got = module(queries, keys, values, valid_lens)
        want, want_weights = relative_attention_loop(module, queries, keys, values, valid_lens)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
    torch.testing.assert_close(module.attention_weights, want_weights, rtol=0, atol=1e-12)


def test_max_distance_zero_is_plain_attention_shifted_by_rel_v0():
    module = random_module(16, 4, 0, seed=3)
    plain = attnkit.MultiHeadAttention(16, 4).double()
    for name in ("W_q", "W_k", "W_v", "W_o"):
        getattr(plain, name).load_state_dict(getattr(module, name).state_dict())
    g = torch.Generator().manual_seed(2)
    queries = torch.randn(2, 4, 16, generator=g, dtype=torch.float64)
    keys = torch.randn(2, 6, 16, generator=g, dtype=torch.float64)
    valid_lens = torch.tensor([6, 2])
    with torch.no_grad():
        got = module(queries, keys, keys, valid_lens)
        want = plain(queries, keys, keys, valid_lens, need_weights=True) + module.W_o(module.rel_v[0].repeat(4))
    torch.testing.assert_close(module.attention_weights, plain.attention_weights)
    torch.testing.assert_close(got, want)


def test_relative_logits_are_invariant_to_shifting_the_context():
    module = random_module(16, 2, 3, seed=4)
    g = torch.Generator().manual_seed(3)
    X = torch.randn(1, 6, 16, generator=g, dtype=torch.float64)
    Y = torch.cat([torch.randn(1, 4, 16, generator=g, dtype=torch.float64), X], dim=1)
    with torch.no_grad():
        module(X, X, X)
        log_x = module.attention_weights.log()
        module(Y, Y, Y)
        log_y = module.attention_weights.log()[:, :, 4:, 4:]
    torch.testing.assert_close(log_y - log_y[..., :1], log_x - log_x[..., :1])


def test_absolute_positions_break_the_shift_invariance():
    """The invariant is not vacuous: adding absolute sinusoidal positions first breaks it."""
    module = random_module(16, 2, 3, seed=4)
    P = attnkit.sinusoidal_table(10, 16, dtype=torch.float64)
    g = torch.Generator().manual_seed(3)
    X = torch.randn(1, 6, 16, generator=g, dtype=torch.float64)
    Y = torch.cat([torch.randn(1, 4, 16, generator=g, dtype=torch.float64), X], dim=1)
    with torch.no_grad():
        module(X + P[:6], X + P[:6], X + P[:6])
        log_x = module.attention_weights.log()
        module(Y + P, Y + P, Y + P)
        log_y = module.attention_weights.log()[:, :, 4:, 4:]
    assert not torch.allclose(log_y - log_y[..., :1], log_x - log_x[..., :1], atol=1e-4)


def test_masked_keys_get_exactly_zero_and_fully_masked_rows_no_nan():
    module = random_module(8, 2, 1, seed=5)
    x = torch.randn(2, 4, 8, dtype=torch.float64)
    with torch.no_grad():
        out = module(x, x, x, torch.tensor([[0, 1, 4, 2], [3, 3, 3, 3]]))
    w = module.attention_weights
    assert bool((w[0, :, 0] == 0).all()) and bool((w[0, :, 1, 1:] == 0).all()) and bool((w[1, :, :, 3] == 0).all())
    assert bool(torch.isfinite(out).all())


def test_attention_validates_its_arguments():
    with pytest.raises(ValueError, match="divisible"):
        RelativeMultiHeadAttention(10, 3, 0.0, 2)
    module = RelativeMultiHeadAttention(8, 2, 0.0, 2)
    with pytest.raises(ValueError, match="valid_lens"):
        module(torch.zeros(2, 3, 8), torch.zeros(2, 3, 8), torch.zeros(2, 3, 8), torch.tensor([1, 2, 3]))


# ---------------------------------------------------------------------------------------------------
# LearnablePositionalEncoding

def test_learnable_pe_interface():
    pe = LearnablePositionalEncoding(16, 0.0, max_len=50)
    table = single_parameter(pe)
    assert table.shape == (50, 16) and table.requires_grad
    X = torch.randn(2, 7, 16)
    torch.testing.assert_close(pe(X), X + table[:7].detach())
    pe(X).sum().backward()
    assert bool((table.grad[:7] == 2).all()) and bool((table.grad[7:] == 0).all())
    with pytest.raises(ValueError, match="max_len=50"):
        pe(torch.zeros(1, 51, 16))
    assert pe(torch.zeros(1, 50, 16)).shape == (1, 50, 16)


def test_learnable_pe_dropout_only_in_training():
    pe = LearnablePositionalEncoding(32, 0.5, max_len=20)
    X = torch.randn(3, 20, 32)
    torch.manual_seed(0)
    out = pe(X)
    assert 0.35 < float((out == 0).float().mean()) < 0.65
    pe.eval()
    torch.testing.assert_close(pe(X), X + pe.P.detach()[:20])


# ---------------------------------------------------------------------------------------------------
# skew and the causal relative attention

@SMALL
@given(st.integers(1, 12), st.lists(st.integers(1, 3), max_size=2))
def test_skew_equals_the_gather_on_and_below_the_diagonal(L, leading):
    X = torch.randn(*leading, L, L)
    S = skew(X)
    assert S.shape == X.shape
    for i in range(L):
        for j in range(i + 1):
            assert torch.equal(S[..., i, j], X[..., i, L - 1 - i + j])


def test_skew_of_the_small_case_and_the_reversed_bug():
    X = torch.arange(16.0).reshape(4, 4)
    lower = torch.ones(4, 4, dtype=torch.bool).tril()
    expected = torch.tensor([[3.0, 0, 0, 0], [6, 7, 0, 0], [9, 10, 11, 0], [12, 13, 14, 15]])
    assert torch.equal(torch.where(lower, skew(X), 0.0), expected)
    # The classic bug, E in descending order, is caught by the same comparison.
    assert not torch.equal(torch.where(lower, skew(X.flip(-1)), 0.0), expected)


@SMALL
@given(st.integers(1, 9), st.integers(1, 3))
def test_causal_versions_match_the_loop(L, batch):
    g = torch.Generator().manual_seed(L)
    queries, keys, values = (torch.randn(batch, L, 4, generator=g, dtype=torch.float64) for _ in range(3))
    rel_k = torch.randn(L, 4, generator=g, dtype=torch.float64)
    want_out, want_w = causal_loop(queries, keys, values, rel_k)
    for function in (causal_relative_attention, causal_relative_attention_naive):
        out, w = function(queries, keys, values, rel_k)
        torch.testing.assert_close(w, want_w, rtol=0, atol=1e-12)
        torch.testing.assert_close(out, want_out, rtol=0, atol=1e-12)
        assert bool((w.triu(diagonal=1) == 0).all())


def test_skewed_memory_is_linear_in_d_not_quadratic():
    """The largest tensor of the skewed path is the (L, L + 1) padded logits; the naive one is L * L * d."""
    L, d = 512, 32
    inputs = [torch.randn(1, L, d) for _ in range(3)] + [torch.randn(L, d)]
    _, skewed = largest_allocation(causal_relative_attention, *inputs)
    _, naive = largest_allocation(causal_relative_attention_naive, *inputs)
    assert skewed <= 4 * L * (L + 1)
    assert naive >= 4 * L * L * d


@pytest.mark.slow
def test_profiler_agrees_on_the_memory_of_both_paths():
    """torch.profiler (profile_memory) sees the same: at L = 2048 no allocation of the skewed path comes
    near L * L * d floats, while the naive path allocates exactly that tensor (shown at L = 1024)."""
    from torch.profiler import ProfilerActivity, profile

    def largest_by_profiler(function, L, d=32):
        inputs = [torch.randn(1, L, d) for _ in range(3)] + [torch.randn(L, d)]
        with torch.no_grad(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            function(*inputs)
        return max(event.self_cpu_memory_usage for event in prof.events())

    assert largest_by_profiler(causal_relative_attention, 2048) < 4 * 2048 * 2048 * 32 // 8
    assert largest_by_profiler(causal_relative_attention_naive, 1024) >= 4 * 1024 * 1024 * 32


# ---------------------------------------------------------------------------------------------------
# attnkit.checking

def test_checks_give_partial_credit_as_a_plain_float(capsys):
    checks = Checks(points=3)
    with checks("passes", 1):
        pass
    with checks("fails with a message", 1.5):
        raise CheckFailed("scores should be scaled by sqrt(head_dim)=8, got 64")
    with checks("student code crashes", 0.5):
        raise NotImplementedError
    score = checks.score()
    assert type(score) is float and score == 1.0
    out = capsys.readouterr()
    assert "sqrt(head_dim)=8, got 64" in out.out and "NotImplementedError" in out.out and out.err == ""


def test_checks_send_stderr_and_warnings_to_stdout(capsys):
    import sys
    import warnings
    checks = Checks(points=1)
    with checks("noisy but right", 1):
        print("to stderr", file=sys.stderr)
        warnings.warn("careful")
    assert checks.score() == 1.0
    out = capsys.readouterr()
    assert out.err == "" and "to stderr" in out.out and "careful" in out.out


def test_checks_scale_to_the_checks_that_ran_and_disqualify():
    visible_only = Checks(points=4)
    with visible_only("one visible check", 1):
        pass
    assert visible_only.score() == 4.0        # the student version: hidden checks are absent
    cheated = Checks(points=2)
    with cheated("passes", 2):
        pass
    cheated.disqualify("copied")
    with pytest.raises(CellScoredZero, match="earned 0 of 2 points.\nNot graded: copied"):
        cheated.score()
    with pytest.raises(CellScoredZero, match="no check ran"):
        Checks(points=2).score()
    free = Checks(points=0)                        # a cell worth nothing has nothing to fail
    with free("shown", 0):
        raise CheckFailed("wrong")
    assert free.score() == 0.0


def test_structure_checks_count_only_beside_a_passing_check_of_the_values(capsys):
    def cell(values_pass):
        checks = Checks(points=2)
        with checks("the output has the input's shape", 0.5, kind="structure"):
            pass
        with checks("shown, not scored", 0):
            pass
        with checks("the values equal the reference", 1.5):
            if not values_pass:
                raise CheckFailed("wrong values")
        return checks.score()

    assert cell(values_pass=True) == 2.0
    with pytest.raises(CellScoredZero, match="What failed:\n- the values equal the reference: wrong values"):
        cell(values_pass=False)
    out = capsys.readouterr().out
    assert "[not scored] shown, not scored" in out and "count once a comparison with the expected values" in out
    visible_only = Checks(points=4)                # the student version: no evidence rule on a partial run
    with visible_only("shape", 0.5, kind="structure"):
        pass
    assert visible_only.score() == 4.0
    masks = Checks(points=1)                       # a property alone counts for nothing either
    with masks("masked keys get weight 0", 0.5, kind="property"):
        pass
    with masks("the weights equal the reference", 0.5):
        raise CheckFailed("wrong weights")
    with pytest.raises(CellScoredZero, match="wrong weights"):
        masks.score()
    alone = Checks(points=1)                       # every check passed, but a property alone proves nothing
    with alone("masked keys get weight 0", 1, kind="property"):
        pass
    with pytest.raises(CellScoredZero, match=r"count\s+only\s+beside\s+a\s+passing\s+check"):
        alone.score()
    with pytest.raises(ValueError, match="kind"):
        Checks(points=1)("typo", 1, kind="shape")


def test_keyboard_interrupt_is_not_swallowed():
    checks = Checks(points=1)
    with pytest.raises(KeyboardInterrupt):
        with checks("a timeout interrupts", 1):
            raise KeyboardInterrupt


def test_expectations_explain_what_is_wrong():
    with pytest.raises(CheckFailed, match=r"index \(1,\)"):
        expect_equal(torch.tensor([1, 5]), torch.tensor([1, 2]), "x")
    with pytest.raises(CheckFailed, match="tolerance"):
        expect_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5]), "y", atol=1e-3)
    with pytest.raises(CheckFailed, match="expected ValueError, got IndexError"):
        expect_raises(ValueError, lambda: [][1], "z")
    with pytest.raises(CheckFailed, match="found 0"):
        single_parameter(torch.nn.Identity())
    assert table_of(torch.nn.Embedding(3, 2), "t").shape == (3, 2)


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
    assert provenance.problem(run_as_notebook(OWN_SKEW)["skew"], "skew") is None


def test_imported_reference_is_caught():
    ns = run_as_notebook(f"from {REFERENCE} import skew, RelativeMultiHeadAttention")
    assert "reference solutions" in provenance.problem(ns["skew"], "skew")
    assert "reference solutions" in provenance.problem(ns["RelativeMultiHeadAttention"], "RelativeMultiHeadAttention")


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
    assert provenance.problem(ns["skew"], "skew") is not None
    assert provenance.problem(ns["skew2"], "skew2") is not None
    assert provenance.problem(ns["Attention"], "Attention") is not None


def test_indirect_imports_are_caught_and_innocent_names_are_not():
    ns = run_as_notebook(f"""
        import importlib
        def skew(X):
            return importlib.import_module("{REFERENCE}").skew(X)
        class Table:
            def __init__(self):
                self.solutions = []       # an attribute that happens to be called 'solutions'
    """)
    assert provenance.problem(ns["skew"], "skew") is not None
    assert provenance.problem(ns["Table"], "Table") is None


def test_exec_of_the_reference_source_text_is_caught():
    import importlib.util
    with open(importlib.util.find_spec(REFERENCE).origin, encoding="utf-8") as handle:
        ns = run_as_notebook(handle.read())
    reason = provenance.problem(ns["RelativeMultiHeadAttention"], "RelativeMultiHeadAttention")
    assert reason is not None and "copy of the reference" in reason


def test_hidden_checks_score_the_reference_copy_zero(capsys):
    import importlib.util
    with open(importlib.util.find_spec(REFERENCE).origin, encoding="utf-8") as handle:
        ns = run_as_notebook(handle.read())
    checks = Checks(points=2.5)
    hidden.skew(checks, ns["skew"])
    with pytest.raises(CellScoredZero, match="copy of the reference"):
        checks.score()
    assert "NOT GRADED" in capsys.readouterr().out


def test_hidden_checks_give_an_independent_skew_full_marks_and_a_reversed_one_nothing():
    right = Checks(points=2.5)
    hidden.skew(right, run_as_notebook(OWN_SKEW)["skew"])
    assert right.score() == 2.5
    wrong = Checks(points=2.5)
    hidden.skew(wrong, run_as_notebook(OWN_SKEW.replace("X], dim=-1)", "X.flip(-1)], dim=-1)"))["skew"])
    with pytest.raises(CellScoredZero):  # shape, dtype and input untouched pass, but alone count for nothing
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
    checks = Checks(points=3)
    hidden.causal(checks, naive, naive)
    printed = capsys.readouterr().out
    assert checks.score() == 2.0, printed                 # both parity checks pass, the memory check fails
    assert "the largest tensor created was 537 MB" in printed and "skew(queries @ rel_k.T)" in printed


@pytest.mark.parametrize("grade_id", ["test_pe_table", "test_pe_forward", "test_index", "test_rel_attention",
                                      "test_skew", "test_causal"])
def test_hidden_part_of_each_cell_is_the_judges_hidden_checks(grade_id):
    """The kernel's hidden checks are the judge's, one for one: names (memory aside), points and kinds."""
    assignment = next(name for name in registry.assignments() if grade_id in registry.max_points(name))
    specs = [spec for spec in registry.specs(assignment) if spec.grade_id == grade_id and spec.hidden]
    checks = Checks(points=sum(spec.points for spec in specs))
    in_kernel.run(checks, assignment, grade_id, {})          # nothing defined: every hidden check fails
    assert [(points, kind) for _, points, _, kind in checks.results] == [(spec.points, spec.kind) for spec in specs]
    assert all(message for _, _, message, _ in checks.results)
    names = [what for what, *_ in checks.results if not what.startswith("memory")]
    assert names == [spec.name for spec in specs if spec.probe != "causal_memory"]

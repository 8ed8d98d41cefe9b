"""The assignments' reference solutions (attnkit_assignments/*/reference.py) against the formulas.

The references are compared with loops written straight from the formulas, in float64, and with the
invariants the hidden tests rely on; known-wrong variants must be told apart from the right answer.
"""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attnkit
from attnkit.checking import (largest_allocation, single_parameter)
from attnkit_assignments.ps1_learnable_pe.reference import LearnablePositionalEncoding
from attnkit_assignments.ps2_relative_pe.reference import (RelativeMultiHeadAttention, causal_relative_attention,
                                                           causal_relative_attention_naive, relative_position_index,
                                                           skew)


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



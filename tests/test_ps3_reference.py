"""PS3's reference (RoPE, ALiBi) against float64 loops written here, independently of reference.py."""

import math

import pytest
import torch

from attnkit_assignments.ps3_rope import reference as ref


def _rope_loop(x, positions, base=10000.0, interleaved=True):
    """float64 RoPE, one pair at a time: interleaved (x_2i, x_2i+1) or split halves (x_i, x_{i+d/2})."""
    x = x.double()
    n, d = x.shape[-2], x.shape[-1]
    out = torch.empty_like(x)
    for m in range(n):
        for i in range(d // 2):
            angle = float(positions[m]) * base ** (-2.0 * i / d)
            a, b = (2 * i, 2 * i + 1) if interleaved else (i, i + d // 2)
            c, s = math.cos(angle), math.sin(angle)
            out[..., m, a] = x[..., m, a] * c - x[..., m, b] * s
            out[..., m, b] = x[..., m, a] * s + x[..., m, b] * c
    return out


def test_rope_matches_the_loop():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 5, 8, dtype=torch.float64)
    positions = torch.tensor([0, 1, 4, 7, 30])
    torch.testing.assert_close(ref.rotary_embedding(x, positions), _rope_loop(x, positions))
    torch.testing.assert_close(ref.rotary_embedding(x, positions, base=100), _rope_loop(x, positions, 100.0))


def test_rope_position_zero_is_the_identity_and_norms_are_kept():
    x = torch.randn(4, 6, dtype=torch.float64)
    torch.testing.assert_close(ref.rotary_embedding(x, torch.zeros(4, dtype=torch.long)), x)
    turned = ref.rotary_embedding(x, torch.arange(4) * 11)
    torch.testing.assert_close(turned.norm(dim=-1), x.norm(dim=-1))


def test_rope_scores_depend_on_m_minus_n_only():
    torch.manual_seed(1)
    q, k = torch.randn(1, 16, dtype=torch.float64), torch.randn(1, 16, dtype=torch.float64)
    for m, n in [(0, 0), (3, 1), (10, 2), (2, 9)]:
        base_score = ref.rotary_embedding(q, torch.tensor([m])) @ ref.rotary_embedding(k, torch.tensor([n])).T
        for shift in (1, 17, 1000):
            shifted = (ref.rotary_embedding(q, torch.tensor([m + shift]))
                       @ ref.rotary_embedding(k, torch.tensor([n + shift])).T)
            torch.testing.assert_close(shifted, base_score)


def test_conventions_agree_up_to_a_permutation_of_features():
    torch.manual_seed(2)
    d = 8
    x = torch.randn(5, d, dtype=torch.float64)
    positions = torch.arange(5) + 3
    # interleaved index 2i <- halves index i, 2i+1 <- i + d/2
    perm = torch.tensor([j for i in range(d // 2) for j in (i, i + d // 2)])
    halves = _rope_loop(x, positions, interleaved=False)
    torch.testing.assert_close(ref.rotary_embedding(x[:, perm], positions), halves[:, perm])
    assert not torch.allclose(ref.rotary_embedding(x, positions), halves)


def test_rope_odd_dimension_names_x():
    with pytest.raises(ValueError, match="x's last dimension"):
        ref.rotary_embedding(torch.randn(3, 5), torch.arange(3))
    with pytest.raises(ValueError, match="positions"):
        ref.rotary_embedding(torch.randn(3, 4), torch.arange(4))


def _rotary_mha_loop(mha, queries, keys, values, valid_lens=None, causal=False, offset=0):
    """float64 loop over batch, heads and queries with the module's weights."""
    W = {name: getattr(mha, name).weight.double() for name in ("W_q", "W_k", "W_v", "W_o")}
    h, hd = mha.num_heads, mha.head_dim
    batch, nq, nk = queries.shape[0], queries.shape[1], keys.shape[1]
    out = torch.zeros(batch, nq, mha.num_hiddens, dtype=torch.float64)
    for b in range(batch):
        Q, K, V = queries[b].double() @ W["W_q"].T, keys[b].double() @ W["W_k"].T, values[b].double() @ W["W_v"].T
        heads = []
        for head in range(h):
            cols = slice(head * hd, (head + 1) * hd)
            q = _rope_loop(Q[:, cols], [offset + i for i in range(nq)])
            k = _rope_loop(K[:, cols], list(range(nk)))
            z = torch.zeros(nq, hd, dtype=torch.float64)
            for i in range(nq):
                allowed = [j for j in range(nk)
                           if (valid_lens is None or j < int(valid_lens[b])) and (not causal or j <= offset + i)]
                if not allowed:
                    continue
                s = torch.stack([q[i] @ k[j] / math.sqrt(hd) for j in allowed])
                w = torch.softmax(s, dim=0)
                z[i] = sum(w[t] * V[j, cols] for t, j in enumerate(allowed))
            heads.append(z)
        out[b] = torch.cat(heads, dim=1) @ W["W_o"].T
    return out


@pytest.mark.parametrize("case", [
    dict(nq=5, nk=5),
    dict(nq=5, nk=5, causal=True),
    dict(nq=3, nk=6, valid_lens=torch.tensor([6, 2])),
    dict(nq=2, nk=7, causal=True, offset=5),           # decoding with a cache of 5 past keys
    dict(nq=4, nk=4, causal=True, valid_lens=torch.tensor([3, 0])),
])
def test_rotary_attention_matches_the_loop(case):
    torch.manual_seed(3)
    mha = ref.RotaryMultiHeadAttention(12, 3, 0.0, bias=False).eval()
    queries = torch.randn(2, case["nq"], 12)
    keys, values = torch.randn(2, case["nk"], 12), torch.randn(2, case["nk"], 12)
    got = mha(queries, keys, values, case.get("valid_lens"), causal=case.get("causal", False),
              position_offset=case.get("offset", 0))
    want = _rotary_mha_loop(mha, queries, keys, values, case.get("valid_lens"), case.get("causal", False),
                            case.get("offset", 0))
    torch.testing.assert_close(got.double(), want, atol=1e-5, rtol=1e-5)


def test_rotary_attention_cache_step_equals_the_full_pass():
    torch.manual_seed(4)
    mha = ref.RotaryMultiHeadAttention(8, 2, 0.0).eval()
    X = torch.randn(1, 6, 8)
    full = mha(X, X, X, causal=True)
    last = mha(X[:, 5:], X, X, causal=True, position_offset=5)
    torch.testing.assert_close(last, full[:, 5:], atol=1e-6, rtol=1e-5)


def test_rotary_attention_never_rotates_values():
    torch.manual_seed(5)
    mha = ref.RotaryMultiHeadAttention(8, 2, 0.0).eval()
    X = torch.randn(1, 1, 8)        # one key: weights are 1, the output is W_o W_v x whatever the rotation
    out = mha(X, X, X, position_offset=9)
    torch.testing.assert_close(out, mha.W_o(mha.W_v(X)))


def test_rotary_attention_odd_head_dim_is_refused():
    with pytest.raises(ValueError, match="head_dim"):
        ref.RotaryMultiHeadAttention(6, 2, 0.0)


@pytest.mark.parametrize("num_heads, exponents", [
    (8, [1, 2, 3, 4, 5, 6, 7, 8]),
    (6, [2, 4, 6, 8, 1, 3]),                        # p = 4: 2^-2 .. 2^-8, then 2^-1, 2^-3 from 8 heads
    (12, [1, 2, 3, 4, 5, 6, 7, 8, 0.5, 1.5, 2.5, 3.5]),
    (1, [8]),
    (2, [4, 8]),
])
def test_alibi_slopes_are_the_papers(num_heads, exponents):
    want = torch.tensor([2.0 ** -e for e in exponents], dtype=torch.float32)
    got = ref.alibi_slopes(num_heads)
    assert got.shape == (num_heads,)
    torch.testing.assert_close(got, want, atol=0, rtol=1e-6)


def test_alibi_slopes_refuse_no_heads():
    with pytest.raises(ValueError, match="num_heads"):
        ref.alibi_slopes(0)


def test_alibi_bias_is_toeplitz_and_non_positive_on_the_causal_side():
    slopes = ref.alibi_slopes(4).double()
    for nq, nk in [(5, 5), (2, 6), (1, 4)]:
        bias = ref.alibi_bias(nq, nk, slopes)
        assert bias.shape == (4, nq, nk)
        for h in range(4):
            for i in range(nq):
                position = nk - nq + i
                for j in range(nk):
                    assert bias[h, i, j].item() == pytest.approx(slopes[h].item() * (j - position))
                    if j <= position:
                        assert bias[h, i, j] <= 0
        # Toeplitz: each diagonal constant
        torch.testing.assert_close(bias[:, 1:, 1:], bias[:, :-1, :-1])


def test_alibi_bias_refuses_more_queries_than_keys():
    with pytest.raises(ValueError, match="num_queries=3, num_keys=2"):
        ref.alibi_bias(3, 2, ref.alibi_slopes(2))


def _alibi_loop(q, k, v, slopes):
    """float64 causal ALiBi attention, one score at a time; query i at position nk - nq + i."""
    q, k, v = q.double(), k.double(), v.double()
    batch, h, nq, d = q.shape
    nk = k.shape[2]
    out = torch.zeros(batch, h, nq, v.shape[-1], dtype=torch.float64)
    for b in range(batch):
        for head in range(h):
            for i in range(nq):
                position = nk - nq + i
                s = torch.stack([q[b, head, i] @ k[b, head, j] / math.sqrt(d) + float(slopes[head]) * (j - position)
                                 for j in range(position + 1)])
                w = torch.softmax(s, dim=0)
                out[b, head, i] = sum(w[j] * v[b, head, j] for j in range(position + 1))
    return out


@pytest.mark.parametrize("nq, nk", [(5, 5), (2, 7), (1, 3)])
def test_causal_alibi_attention_matches_the_loop(nq, nk):
    torch.manual_seed(6)
    h, d = 6, 4
    q, k, v = torch.randn(2, h, nq, d), torch.randn(2, h, nk, d), torch.randn(2, h, nk, 3)
    slopes = ref.alibi_slopes(h)
    got = ref.causal_alibi_attention(q, k, v, slopes)
    torch.testing.assert_close(got.double(), _alibi_loop(q, k, v, slopes), atol=1e-5, rtol=1e-5)
    got64 = ref.causal_alibi_attention(q.double(), k.double(), v.double(), slopes)
    torch.testing.assert_close(got64, _alibi_loop(q, k, v, slopes))


def test_a_constant_per_row_changes_nothing():
    """m_h * j (key position alone) gives the same causal attention as m_h * (j - i)."""
    torch.manual_seed(7)
    q, k, v = torch.randn(1, 2, 4, 4), torch.randn(1, 2, 4, 4), torch.randn(1, 2, 4, 4)
    slopes = ref.alibi_slopes(2)
    j = torch.arange(4.0)
    key_only = (slopes[:, None, None] * j).expand(2, 4, 4)
    future = torch.ones(4, 4, dtype=torch.bool).triu(1)
    mask = key_only.masked_fill(future, float("-inf"))[None]
    other = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(ref.causal_alibi_attention(q, k, v, slopes), other, atol=1e-6, rtol=1e-5)


def test_forward_makes_no_cpu_tensor_on_meta():
    """On the meta device any tensor made on the CPU inside forward would meet a meta one and fail."""
    with torch.device("meta"):
        mha = ref.RotaryMultiHeadAttention(8, 2, 0.0)
        X = torch.empty(2, 5, 8)
        q, k, v = torch.empty(2, 4, 3, 6), torch.empty(2, 4, 5, 6), torch.empty(2, 4, 5, 6)
        x = torch.empty(3, 5, 8)
    assert mha(X, X, X, causal=True, position_offset=2).device.type == "meta"
    assert ref.rotary_embedding(x, torch.arange(5, device="meta")).device.type == "meta"
    slopes = ref.alibi_slopes(4).to("meta")
    assert ref.alibi_bias(3, 5, slopes).device.type == "meta"
    assert ref.causal_alibi_attention(q, k, v, slopes).shape == (2, 4, 3, 6)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_on_cuda_equals_cpu():
    torch.manual_seed(8)
    mha = ref.RotaryMultiHeadAttention(8, 2, 0.0).eval()
    X = torch.randn(2, 5, 8)
    want = mha(X, X, X, valid_lens=torch.tensor([5, 3]), causal=True)
    got = mha.cuda()(X.cuda(), X.cuda(), X.cuda(), valid_lens=torch.tensor([5, 3]).cuda(), causal=True)
    torch.testing.assert_close(got.cpu(), want, atol=1e-5, rtol=1e-5)
    q, k, v = torch.randn(1, 4, 3, 8), torch.randn(1, 4, 6, 8), torch.randn(1, 4, 6, 8)
    slopes = ref.alibi_slopes(4)
    torch.testing.assert_close(ref.causal_alibi_attention(q.cuda(), k.cuda(), v.cuda(), slopes).cpu(),
                               ref.causal_alibi_attention(q, k, v, slopes), atol=1e-5, rtol=1e-5)


def _differs_from_the_loops(module):
    """True when any of the float64 loops above sees the module compute something else than PS3 asks."""
    torch.manual_seed(9)
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    positions = torch.tensor([0, 1, 4, 7, 30])
    if not torch.allclose(module.rotary_embedding(x, positions), _rope_loop(x, positions)):
        return True
    mha = module.RotaryMultiHeadAttention(12, 3, 0.0).eval()
    for nq, nk, causal, offset in [(5, 5, True, 0), (3, 6, False, 0), (2, 7, True, 5), (4, 4, False, 3)]:
        queries, keys, values = torch.randn(2, nq, 12), torch.randn(2, nk, 12), torch.randn(2, nk, 12)
        got = mha(queries, keys, values, causal=causal, position_offset=offset).double()
        if not torch.allclose(got, _rotary_mha_loop(mha, queries, keys, values, None, causal, offset), atol=1e-5):
            return True
    for num_heads, exponents in [(8, range(1, 9)), (6, [2, 4, 6, 8, 1, 3]),
                                 (12, [1, 2, 3, 4, 5, 6, 7, 8, 0.5, 1.5, 2.5, 3.5])]:
        if not torch.allclose(module.alibi_slopes(num_heads), torch.tensor([2.0 ** -e for e in exponents])):
            return True
    slopes = module.alibi_slopes(6)
    for nq, nk in [(5, 5), (2, 7)]:
        q, k, v = torch.randn(2, 6, nq, 4), torch.randn(2, 6, nk, 4), torch.randn(2, 6, nk, 3)
        if not torch.allclose(module.causal_alibi_attention(q, k, v, slopes).double(),
                              _alibi_loop(q, k, v, torch.tensor([2.0 ** -e for e in [2, 4, 6, 8, 1, 3]])),
                              atol=1e-5):
            return True
        bias = module.alibi_bias(nq, nk, slopes)
        want = slopes[:, None, None] * (torch.arange(nk)[None, :] - (torch.arange(nq) + nk - nq)[:, None])
        if bias.shape != want.shape or not torch.allclose(bias, want):
            return True
    return False


def _module_from(source, name):
    import types
    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


def test_the_reference_passes_the_battery():
    assert not _differs_from_the_loops(ref)


def test_each_catalogued_bug_is_an_edit_the_loops_catch():
    from pathlib import Path

    from attnkit_assignments.ps3_rope import bugs
    source = Path(ref.__file__).read_text()
    names = [bug.name for bug in bugs.BUGS]
    assert len(names) == len(set(names)) >= 15
    for bug in bugs.BUGS:
        edited = source
        for old, new in bug.edits:
            assert edited.count(old) == 1, f"{bug.name}: {old!r} is not exactly once in reference.py"
            edited = edited.replace(old, new)
        assert _differs_from_the_loops(_module_from(edited, bug.name)), f"{bug.name} computes what PS3 asks"

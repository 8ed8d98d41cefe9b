"""Hidden checks of the graded notebooks, one function per grade cell; never shipped to students.

Each function receives the cell's ``Checks`` and the student's objects, first checks where the
objects came from (``provenance``), then runs independent checks, each worth its own points.
Numerical checks load identical weights into the student's module and the reference, run the
student's in float32 and compare with the reference in float64; the tolerance is derived from the
reference's own float32 error on the same input (8 times it, plus 1e-6 of the output's scale).
"""

import math

import torch

import attnkit
from attnkit.checking import (CheckFailed, expect, expect_close, expect_equal, expect_shape, human_bytes,
                              largest_allocation, load_table, single_parameter, table_of)
from attnkit.solutions import provenance
from attnkit.solutions.learnable_pe import LearnablePositionalEncoding as ReferencePE
from attnkit.solutions.relative import RelativeMultiHeadAttention as ReferenceAttention
from attnkit.solutions.relative import relative_position_index as reference_index
from attnkit.solutions.skew import causal_relative_attention_naive as reference_causal


def tolerance(ref32, ref64):
    """Allowed |student - ref64|: 8x the reference's own float32 error plus 1e-6 of the output's scale."""
    own_error = float((ref32.detach().double() - ref64.detach()).abs().max()) if ref64.numel() else 0.0
    scale = max(1.0, float(ref64.detach().abs().max())) if ref64.numel() else 1.0
    return 8.0 * own_error + 1e-6 * scale


def _build(cls, what, *args, **kwargs):
    """Instantiate the student's class; a failure becomes a readable CheckFailed."""
    try:
        return cls(*args, **kwargs)
    except NotImplementedError:
        raise CheckFailed(f"{what}(...) is not implemented yet (it raises NotImplementedError)") from None
    except Exception as exc:   # noqa: BLE001 - report any construction error as the reason
        raise CheckFailed(f"{what}{args} raised {type(exc).__name__}: {exc}") from None


# ---------------------------------------------------------------------------------------------------
# Problem set 1: LearnablePositionalEncoding

def _pe_pair(cls, num_hiddens, max_len, dropout=0.0, seed=0):
    """Student module (float32) and reference (float64) holding the same random table."""
    student = _build(cls, "LearnablePositionalEncoding", num_hiddens, dropout, max_len=max_len)
    table = torch.randn(max_len, num_hiddens, generator=torch.Generator().manual_seed(seed),
                        dtype=torch.float64)
    load_table(single_parameter(student), table)
    reference = ReferencePE(num_hiddens, dropout, max_len=max_len).double()
    load_table(reference.P, table)
    return student, reference, table


def pe_table(checks, cls):
    """Hidden part of the table cell: the gradient of the output reaches rows 0..n-1 and only those."""
    if not provenance.check(checks, cls, "LearnablePositionalEncoding"):
        return
    with checks("the gradient reaches exactly the rows 0..n-1 of the table (n = 6 of max_len = 20)", 1):
        student, _, _ = _pe_pair(cls, num_hiddens=8, max_len=20)
        student.train()
        X = torch.randn(3, 6, 8, generator=torch.Generator().manual_seed(1))
        student(X).sum().backward()
        table = single_parameter(student)
        expect(table.grad is not None,
               "no gradient reached the table: is it an nn.Parameter with requires_grad=True, and is it "
               "used in forward (not a detached copy)?")
        grad = table.grad.to_dense() if table.grad.is_sparse else table.grad
        expect_close(grad[:6], torch.full((6, 8), 3.0), "gradient of out.sum() for rows 0..5 (batch 3)", 1e-5)
        expect(bool((grad[6:] == 0).all()),
               "rows 6..19 were not used by a length-6 input but received a gradient")


def pe_forward(checks, cls):
    """Hidden part of the forward cell: parity with the reference, and dropout in train/eval mode."""
    if not provenance.check(checks, cls, "LearnablePositionalEncoding"):
        return
    with checks("same output as the reference for several shapes (n = max_len, n = 1, odd num_hiddens)", 1):
        for batch, n, num_hiddens, max_len in [(2, 7, 16, 50), (1, 50, 9, 50), (3, 1, 4, 1), (2, 13, 33, 40)]:
            student, reference, _ = _pe_pair(cls, num_hiddens, max_len, seed=n)
            student.eval()
            reference.eval()
            X64 = torch.randn(batch, n, num_hiddens, generator=torch.Generator().manual_seed(7),
                              dtype=torch.float64)
            with torch.no_grad():
                got = student(X64.float())
                want64 = reference(X64)
                want32 = reference.float()(X64.float())
            expect_close(got, want64, f"output for X of shape {(batch, n, num_hiddens)}, max_len={max_len}",
                         tolerance(want32, want64))
    with checks("dropout: in train mode about half the entries are zeroed and the rest scaled by 2 (p=0.5); "
                "none in eval mode", 1):
        student, _, table = _pe_pair(cls, num_hiddens=64, max_len=100, dropout=0.5)
        X = torch.randn(4, 50, 64, generator=torch.Generator().manual_seed(3))
        expected = X + table[:50].float()
        student.train()
        torch.manual_seed(0)
        with torch.no_grad():
            out = student(X)
        expect_shape(out, (4, 50, 64), "output in train mode")
        dropped = float((out == 0).float().mean())
        expect(0.4 < dropped < 0.6, f"with dropout=0.5 in train mode about half the outputs should be 0, "
                                    f"got a fraction of {dropped:.3f}: apply nn.Dropout after adding the table")
        kept = out != 0
        expect_close(out[kept], 2.0 * expected[kept], "kept entries in train mode (should be 2 (X + P))", 1e-4)
        student.eval()
        with torch.no_grad():
            expect_close(student(X), expected, "output in eval mode (dropout must be off)", 1e-5)


# ---------------------------------------------------------------------------------------------------
# Problem set 2: relative_position_index

_INDEX_CASES = [(1, 1, 0), (5, 5, 2), (3, 8, 1), (8, 3, 4), (6, 6, 0), (4, 9, 20), (12, 10, 3)]


def index(checks, fn):
    """Hidden part of the index cell: Toeplitz with diagonal k, saturation, and parity on many shapes."""
    if not provenance.check(checks, fn, "relative_position_index"):
        return
    with checks("Toeplitz: constant along every diagonal, and equal to k on the main diagonal", 0.5,
                kind="property"):
        for q, n, k in _INDEX_CASES:
            got = fn(q, n, k)
            expect_shape(got, (q, n), f"relative_position_index({q}, {n}, {k})")
            expect(bool((got[1:, 1:] == got[:-1, :-1]).all()),
                   f"relative_position_index({q}, {n}, {k}) is not constant along diagonals: entry [i, j] "
                   f"must depend on j - i only")
            diagonal = torch.diagonal(got)
            expect(bool((diagonal == k).all()),
                   f"relative_position_index({q}, {n}, {k}) has {diagonal.tolist()} on the diagonal, "
                   f"expected {k} (i = j is distance 0, shifted by k)")
    with checks("saturation: 0 where j - i <= -k and 2k where j - i >= k", 0.5, kind="property"):
        for q, n, k in _INDEX_CASES:
            got = fn(q, n, k)
            distance = torch.arange(n)[None, :] - torch.arange(q)[:, None]          # (q, n): j - i
            expect(bool((got[distance >= k] == 2 * k).all()),
                   f"relative_position_index({q}, {n}, {k}): entries with j - i >= {k} should all be "
                   f"{2 * k} (clip at +k, then add k); check the sign of j - i and the clipping")
            expect(bool((got[distance <= -k] == 0).all()),
                   f"relative_position_index({q}, {n}, {k}): entries with j - i <= -{k} should all be 0")
    with checks("every entry equals clip(j - i, -k, k) + k, as int64, for square and rectangular shapes", 0.5):
        for q, n, k in _INDEX_CASES:
            got = fn(q, n, k)
            expect(isinstance(got, torch.Tensor) and got.dtype == torch.int64,
                   f"relative_position_index must return an int64 (Long) tensor, got "
                   f"{getattr(got, 'dtype', type(got).__name__)}")
            expect_equal(got, reference_index(q, n, k), f"relative_position_index({q}, {n}, {k})")


# ---------------------------------------------------------------------------------------------------
# Problem set 2: RelativeMultiHeadAttention

def _attention_weights(num_hiddens, num_heads, max_distance, bias, seed):
    """Random float64 weights in a dict: W_q, W_k, W_v, W_o (weight, bias), rel_k, rel_v."""
    g = torch.Generator().manual_seed(seed)
    head_dim = num_hiddens // num_heads
    weights = {}
    for name in ("W_q", "W_k", "W_v", "W_o"):
        weights[name] = (torch.randn(num_hiddens, num_hiddens, generator=g, dtype=torch.float64)
                         / math.sqrt(num_hiddens),
                         0.1 * torch.randn(num_hiddens, generator=g, dtype=torch.float64) if bias else None)
    for name in ("rel_k", "rel_v"):
        weights[name] = torch.randn(2 * max_distance + 1, head_dim, generator=g, dtype=torch.float64)
    return weights


def _load_attention(module, weights):
    """Copy the dict from ``_attention_weights`` into a module with the fixed public API."""
    for name in ("W_q", "W_k", "W_v", "W_o"):
        linear = getattr(module, name, None)
        expect(linear is not None and hasattr(linear, "weight"),
               f"the module needs an nn.Linear attribute {name}")
        load_table(linear.weight, weights[name][0])
        if weights[name][1] is not None:
            expect(getattr(linear, "bias", None) is not None,
                   f"{name} has no bias although the module was built with bias=True")
            load_table(linear.bias, weights[name][1])
    for name in ("rel_k", "rel_v"):
        expect(hasattr(module, name), f"the module needs an attribute {name} (nn.Embedding or nn.Parameter)")
        load_table(table_of(getattr(module, name), name), weights[name])


def _attention_pair(cls, num_hiddens, num_heads, max_distance, bias=False, seed=0):
    """Student module (float32) and reference modules (float32, float64) with the same weights, eval mode."""
    weights = _attention_weights(num_hiddens, num_heads, max_distance, bias, seed)
    student = _build(cls, "RelativeMultiHeadAttention", num_hiddens, num_heads, 0.0, max_distance, bias=bias)
    _load_attention(student, weights)
    ref32 = ReferenceAttention(num_hiddens, num_heads, 0.0, max_distance, bias=bias)
    _load_attention(ref32, weights)
    ref64 = ReferenceAttention(num_hiddens, num_heads, 0.0, max_distance, bias=bias).double()
    _load_attention(ref64, weights)
    for module in (student, ref32, ref64):
        module.eval()
    return student, ref32, ref64


def _compare(student, ref32, ref64, inputs64, valid_lens, what):
    """Run the three modules on the same inputs; compare outputs and attention weights."""
    with torch.no_grad():
        got = student(*[x.float() for x in inputs64], valid_lens)
        want64 = ref64(*inputs64, valid_lens)
        want32 = ref32(*[x.float() for x in inputs64], valid_lens)
    expect_close(got, want64, f"{what}: output", tolerance(want32, want64))
    weights = getattr(student, "attention_weights", None)
    expect(weights is not None, "the module must keep its attention weights in .attention_weights")
    expect_close(weights, ref64.attention_weights, f"{what}: attention_weights",
                 tolerance(ref32.attention_weights, ref64.attention_weights))


def attention(checks, cls):
    """Hidden part of the attention cell: parity with the reference and three invariants."""
    if not provenance.check(checks, cls, "RelativeMultiHeadAttention"):
        return
    g = torch.Generator().manual_seed(11)

    with checks("self-attention equals the reference with the same weights (4 heads, k = 3, length 9)", 1.5):
        student, ref32, ref64 = _attention_pair(cls, 32, 4, 3, seed=1)
        X = torch.randn(2, 9, 32, generator=g, dtype=torch.float64)
        _compare(student, ref32, ref64, (X, X, X), None, "self-attention")

    with checks("cross-attention (5 queries, 11 keys, bias=True) with valid_lens of shape (batch, q) "
                "equals the reference", 1.5):
        student, ref32, ref64 = _attention_pair(cls, 24, 3, 2, bias=True, seed=2)
        queries = torch.randn(2, 5, 24, generator=g, dtype=torch.float64)
        keys = torch.randn(2, 11, 24, generator=g, dtype=torch.float64)
        values = torch.randn(2, 11, 24, generator=g, dtype=torch.float64)
        valid_lens = torch.tensor([[11, 3, 7, 1, 5], [2, 11, 4, 9, 6]])
        _compare(student, ref32, ref64, (queries, keys, values), valid_lens, "cross-attention")

    with checks("max_distance = 0 is plain multi-head attention, outputs shifted by W_o applied to rel_v[0]", 1):
        num_hiddens, num_heads = 16, 4
        student, _, _ = _attention_pair(cls, num_hiddens, num_heads, 0, seed=3)
        plain = attnkit.MultiHeadAttention(num_hiddens, num_heads, 0.0)
        for name in ("W_q", "W_k", "W_v", "W_o"):
            load_table(getattr(plain, name).weight, getattr(student, name).weight.detach())
        plain.eval()
        queries = torch.randn(2, 4, num_hiddens, generator=g)
        keys = torch.randn(2, 6, num_hiddens, generator=g)
        valid_lens = torch.tensor([6, 2])
        with torch.no_grad():
            got = student(queries, keys, keys, valid_lens)
            want = plain(queries, keys, keys, valid_lens, need_weights=True)
            rel_v0 = table_of(student.rel_v, "rel_v")[0].detach()
            want = want + student.W_o(rel_v0.repeat(num_heads))      # every head's z_i moves by rel_v[0]
        expect_close(student.attention_weights, plain.attention_weights,
                     "attention weights with max_distance=0 (the a^K term is constant per query)", 1e-5)
        expect_close(got, want, "output with max_distance=0 (plain attention + W_o(rel_v[0] per head))", 1e-4)

    with checks("relative logits do not change when the whole context is shifted by 4 positions", 1,
                kind="property"):
        student, _, _ = _attention_pair(cls, 16, 2, 3, seed=4)
        X = torch.randn(1, 6, 16, generator=g)
        Y = torch.cat([torch.randn(1, 4, 16, generator=g), X], dim=1)      # X now starts at position 4
        with torch.no_grad():
            student(X, X, X)
            logits_X = student.attention_weights.log()                       # (1, heads, 6, 6)
            student(Y, Y, Y)
            logits_Y = student.attention_weights.log()[:, :, 4:, 4:]        # the same tokens, shifted
        # Softmax removes a per-row constant: compare logits relative to the first key of X.
        expect_close(logits_Y - logits_Y[..., :1], logits_X - logits_X[..., :1],
                     "log-weight differences between tokens of X, before and after shifting X", 1e-4)

    with checks("keys beyond valid_lens of shape (batch, q) get weight exactly 0", 0.5, kind="property"):
        student, _, _ = _attention_pair(cls, 16, 4, 2, seed=5)
        queries = torch.randn(2, 3, 16, generator=g)
        keys = torch.randn(2, 8, 16, generator=g)
        valid_lens = torch.tensor([[1, 8, 4], [5, 2, 7]])
        with torch.no_grad():
            student(queries, keys, keys, valid_lens)
        weights = student.attention_weights
        expect_shape(weights, (2, 4, 3, 8), "attention_weights")
        masked = torch.arange(8)[None, None, :] >= valid_lens[:, :, None]      # (batch, q, k)
        leaked = weights.detach()[masked.unsqueeze(1).expand_as(weights)]
        expect(bool((leaked == 0).all()),
               f"masked keys got weights up to {float(leaked.abs().max()):.3g}; they must be exactly 0 "
               f"(fill the scores with -inf, or use attnkit.masked_softmax)")


# ---------------------------------------------------------------------------------------------------
# Problem set 2: skew and causal relative attention

def _skew_by_gather(X):
    """S[..., i, j] = X[..., i, L-1-i+j] for j <= i, zero above the diagonal (test oracle)."""
    L = X.shape[-1]
    i = torch.arange(L)[:, None]
    j = torch.arange(L)[None, :]
    column = (L - 1 - i + j).clamp(max=L - 1)                       # (L, L)
    gathered = X.gather(-1, column.expand(X.shape).contiguous())
    return torch.where(j <= i, gathered, torch.zeros((), dtype=X.dtype))


def skew(checks, fn):
    """Hidden part of the skew cell: exact equality with the gather, and input/dtype handling."""
    if not provenance.check(checks, fn, "skew"):
        return
    g = torch.Generator().manual_seed(21)
    lower = {}
    with checks("equals the gather X[..., i, L-1-i+j] exactly for every j <= i (L = 1, 2, 7, 32)", 1.5):
        for L in (1, 2, 7, 32):
            X = torch.randn(3, L, L, generator=g)
            lower[L] = torch.ones(L, L, dtype=torch.bool).tril()
            got = fn(X.clone())
            expect_shape(got, (3, L, L), f"skew of a (3, {L}, {L}) tensor")
            on_and_below = torch.where(lower[L], got, torch.zeros((), dtype=got.dtype))   # j > i is garbage
            expect_equal(on_and_below, _skew_by_gather(X), f"skew(X) on and below the diagonal, L = {L}")
    with checks("leaves its input unchanged", 0.5, kind="structure"):
        X = torch.randn(2, 6, 6, generator=g)
        before = X.clone()
        fn(X)
        expect_equal(X, before, "X after calling skew(X)")
    with checks("keeps the dtype and all leading dimensions: float64 (batch, heads, L, L)", 0.5, kind="structure"):
        X = torch.randn(2, 3, 5, 5, generator=g, dtype=torch.float64)
        got = fn(X)
        expect_shape(got, (2, 3, 5, 5), "skew of a (2, 3, 5, 5) tensor")
        expect(got.dtype == torch.float64, f"skew of a float64 tensor should be float64, got {got.dtype}")


def _causal_inputs(batch, L, d, seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*shape, generator=g, dtype=torch.float64)
            for shape in ((batch, L, d), (batch, L, d), (batch, L, d), (L, d))]


def _expect_causal_parity(fn, name, L, seed):
    inputs = _causal_inputs(2, L, 8, seed)
    with torch.no_grad():
        got_output, got_weights = fn(*[x.float() for x in inputs])
        out64, w64 = reference_causal(*inputs)
        out32, w32 = reference_causal(*[x.float() for x in inputs])
    expect_close(got_weights, w64, f"{name}: weights, L = {L}", tolerance(w32, w64))
    expect_close(got_output, out64, f"{name}: output, L = {L}", tolerance(out32, out64))


def causal(checks, naive_fn, skewed_fn):
    """Hidden part of the causal cell: both versions against the float64 reference, memory at L = 2048."""
    ok_naive = provenance.check(checks, naive_fn, "causal_relative_attention_naive")
    if not (ok_naive and provenance.check(checks, skewed_fn, "causal_relative_attention")):
        return
    with checks("causal_relative_attention_naive equals the float64 reference (L = 1, 6, 17)", 1):
        for L in (1, 6, 17):
            _expect_causal_parity(naive_fn, "causal_relative_attention_naive", L, seed=L)
    with checks("causal_relative_attention (skewed) equals the float64 reference (L = 1, 6, 17)", 1):
        for L in (1, 6, 17):
            _expect_causal_parity(skewed_fn, "causal_relative_attention", L, seed=100 + L)
    with checks("memory at L = 2048, head_dim = 32: no tensor anywhere near L * L * head_dim elements", 1):
        L, d = 2048, 32
        g = torch.Generator().manual_seed(5)
        inputs = [0.1 * torch.randn(*shape, generator=g) for shape in ((1, L, d), (1, L, d), (1, L, d), (L, d))]
        (output, _), largest = largest_allocation(skewed_fn, *inputs)
        expect_shape(output, (1, L, d), "output at L = 2048")
        element = inputs[0].element_size()
        limit = L * L * d * element // 8
        expect(largest < limit,
               f"the largest tensor created was {human_bytes(largest)}; the (L, L, head_dim) tensor of "
               f"gathered embeddings would be {human_bytes(L * L * d * element)} and the L x L logits "
               f"{human_bytes(L * L * element)}. Use skew(queries @ rel_k.T) instead of gathering rows of rel_k")

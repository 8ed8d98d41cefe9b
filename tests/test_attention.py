"""attnkit.attention: parity with PyTorch, float64 references, properties over shapes, bad input."""

import copy
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from attnkit import DotProductAttention, MultiHeadAttention, attention_mask, masked_softmax
from attnkit.attention import transpose_output, transpose_qkv

TOL = dict(atol=1e-5, rtol=1e-5)


def torch_mha_like(model, bias):
    """torch.nn.MultiheadAttention holding the same weights as attnkit's ``model``."""
    ref = nn.MultiheadAttention(model.num_hiddens, model.num_heads, bias=bias, batch_first=True).eval()
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([model.W_q.weight, model.W_k.weight, model.W_v.weight]))
        ref.out_proj.weight.copy_(model.W_o.weight)
        if bias:
            ref.in_proj_bias.copy_(torch.cat([model.W_q.bias, model.W_k.bias, model.W_v.bias]))
            ref.out_proj.bias.copy_(model.W_o.bias)
    return ref


CASES = {  # name: (num_queries, num_keys, valid_lens, causal)
    "self": (5, 5, None, False),
    "padding": (5, 5, [3, 5], False),
    "padding-per-query": (4, 6, [[1, 2, 3, 6], [6, 5, 4, 1]], False),
    "causal": (6, 6, None, True),
    "causal+padding": (6, 6, [4, 6], True),
    "cross": (3, 7, None, False),
    "cross+padding": (3, 7, [7, 2], False),
}


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_multihead_equals_torch_multihead_with_copied_weights(case, bias, need_weights):
    num_queries, num_keys, valid_lens, causal = CASES[case]
    torch.manual_seed(0)
    num_hiddens, num_heads, batch_size = 24, 4, 2
    model = MultiHeadAttention(num_hiddens, num_heads, bias=bias).eval()
    ref = torch_mha_like(model, bias)
    queries = torch.randn(batch_size, num_queries, num_hiddens)
    keys = queries if num_keys == num_queries else torch.randn(batch_size, num_keys, num_hiddens)
    values = torch.randn(batch_size, num_keys, num_hiddens)
    lens = None if valid_lens is None else torch.tensor(valid_lens)
    blocked = ~attention_mask(num_queries, num_keys, lens, causal) if (lens is not None or causal) else None
    if blocked is not None:  # nn.MultiheadAttention: True = blocked, one mask per (batch, head)
        blocked = blocked.expand(batch_size, -1, -1).repeat_interleave(num_heads, dim=0)
    expected, expected_weights = ref(queries, keys, values, attn_mask=blocked, average_attn_weights=False)
    output = model(queries, keys, values, lens, causal=causal, need_weights=need_weights)
    torch.testing.assert_close(output, expected, **TOL)
    if need_weights:
        assert model.attention_weights.shape == (batch_size, num_heads, num_queries, num_keys)
        torch.testing.assert_close(model.attention_weights, expected_weights, **TOL)
    else:
        assert model.attention_weights is None


def test_multihead_key_padding_mask_matches_torch():
    """valid_lens (batch,) is what nn.MultiheadAttention calls key_padding_mask."""
    torch.manual_seed(1)
    model = MultiHeadAttention(100, 5).eval()
    ref = torch_mha_like(model, bias=False)
    queries, keys = torch.randn(2, 4, 100), torch.randn(2, 6, 100)
    valid_lens = torch.tensor([3, 2])
    key_padding_mask = torch.arange(6)[None, :] >= valid_lens[:, None]
    expected, _ = ref(queries, keys, keys, key_padding_mask=key_padding_mask)
    output = model(queries, keys, keys, valid_lens)
    assert output.shape == (2, 4, 100)
    torch.testing.assert_close(output, expected, **TOL)


def sdpa_weights(scores, mask):
    """The weights F.scaled_dot_product_attention uses: feed it identity values and scale 1."""
    batch_size, num_queries, num_keys = scores.shape
    eye = torch.eye(num_keys, dtype=scores.dtype).expand(batch_size, -1, -1)
    # q k^T with q = scores, k = identity reproduces the scores themselves.
    return F.scaled_dot_product_attention(scores, eye, eye, attn_mask=mask, scale=1.0)


@pytest.mark.parametrize("case", CASES)
def test_masked_softmax_equals_sdpa_weights(case):
    num_queries, num_keys, valid_lens, causal = CASES[case]
    torch.manual_seed(2)
    scores = torch.randn(2, num_queries, num_keys)
    lens = None if valid_lens is None else torch.tensor(valid_lens)
    mask = attention_mask(num_queries, num_keys, lens, causal)
    torch.testing.assert_close(masked_softmax(scores, lens, causal), sdpa_weights(scores, mask), **TOL)


@pytest.mark.parametrize("case", CASES)
def test_dot_product_attention_equals_sdpa(case):
    num_queries, num_keys, valid_lens, causal = CASES[case]
    torch.manual_seed(3)
    queries, keys, values = (torch.randn(2, num_queries, 8), torch.randn(2, num_keys, 8),
                             torch.randn(2, num_keys, 3))
    lens = None if valid_lens is None else torch.tensor(valid_lens)
    mask = attention_mask(num_queries, num_keys, lens, causal)
    expected = F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask)
    attention = DotProductAttention().eval()
    torch.testing.assert_close(attention(queries, keys, values, lens, causal), expected, **TOL)


def test_dot_product_attention_matches_float64_loops():
    torch.manual_seed(4)
    queries, keys, values = torch.randn(2, 3, 5), torch.randn(2, 4, 5), torch.randn(2, 4, 2)
    valid_lens = torch.tensor([2, 4])
    output = DotProductAttention()(queries, keys, values, valid_lens)
    q, k, v = queries.double(), keys.double(), values.double()
    for b in range(2):
        n = int(valid_lens[b])
        for i in range(3):
            scores = [float(q[b, i] @ k[b, j]) / math.sqrt(5) for j in range(n)]
            top = max(scores)
            weights = [math.exp(s - top) for s in scores]
            expected = sum(w * v[b, j] for j, w in enumerate(weights)) / sum(weights)
            torch.testing.assert_close(output[b, i].double(), expected, atol=1e-6, rtol=1e-6)


def sdpa_before_torch_2_5(real_sdpa):
    """F.scaled_dot_product_attention as torch < 2.5 behaved: NaN for a query whose keys are all masked."""
    def sdpa(q, k, v, attn_mask=None, **kwargs):
        output = real_sdpa(q, k, v, attn_mask=attn_mask, **kwargs)
        if attn_mask is None:
            return output
        return output.masked_fill(~attn_mask.any(dim=-1, keepdim=True), float("nan"))
    return sdpa


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("old_torch", [False, True], ids=["this torch", "torch<2.5 sdpa"])
def test_fully_masked_rows_are_zero_on_both_paths_whatever_sdpa_returns(monkeypatch, need_weights, old_torch):
    if old_torch:
        monkeypatch.setattr(F, "scaled_dot_product_attention", sdpa_before_torch_2_5(F.scaled_dot_product_attention))
    torch.manual_seed(0)
    model = MultiHeadAttention(8, 2).eval()
    queries, keys = torch.randn(3, 4, 8), torch.randn(3, 5, 8)
    lens = torch.tensor([[0, 2, 0, 5], [3, 3, 3, 3], [0, 0, 0, 0]])     # (batch, num_queries)
    output = model(queries, keys, keys, lens, need_weights=need_weights)
    empty = lens == 0
    assert torch.equal(output[empty], torch.zeros(int(empty.sum()), 8)), "a query with no key must output zeros"
    reference = MultiHeadAttention(8, 2).eval()
    reference.load_state_dict(model.state_dict())
    expected = reference(queries, keys, keys, lens.clamp(min=1), need_weights=True)
    torch.testing.assert_close(output[~empty], expected[~empty], **TOL)
    causal_lens = torch.tensor([0, 4, 1])                          # with causal: row 0 of batch 0 still sees nothing
    output = model(queries, queries, queries, causal_lens, causal=True, need_weights=need_weights)
    assert torch.isfinite(output).all() and torch.equal(output[0], torch.zeros(4, 8))


def test_the_old_sdpa_emulation_really_returns_nan():
    """Guard for the test above: the emulated torch < 2.5 kernel does produce NaN on an empty row."""
    mask = torch.tensor([[[False, False], [True, False]]])
    output = sdpa_before_torch_2_5(F.scaled_dot_product_attention)(
        torch.randn(1, 2, 3), torch.randn(1, 2, 3), torch.randn(1, 2, 3), attn_mask=mask)
    assert torch.isnan(output[0, 0]).all() and torch.isfinite(output[0, 1]).all()


def test_fully_masked_row_gives_zero_weights_zero_output_and_finite_gradients():
    scores = torch.randn(2, 3, 4, requires_grad=True)
    weights = masked_softmax(scores, torch.tensor([0, 2]))
    assert torch.equal(weights[0], torch.zeros(3, 4))
    (weights * torch.randn_like(weights)).sum().backward()
    assert torch.isfinite(scores.grad).all()
    model = MultiHeadAttention(8, 2).eval()
    X = torch.randn(2, 3, 8)
    for need_weights in (False, True):
        output = model(X, X, X, torch.tensor([0, 3]), need_weights=need_weights)
        assert torch.equal(output[0], torch.zeros(3, 8)), "no bias: a fully masked row outputs zeros"


@st.composite
def masked_scores(draw):
    batch_size = draw(st.integers(1, 3))
    num_queries, num_keys = draw(st.integers(1, 7)), draw(st.integers(1, 7))
    per_query = draw(st.booleans())
    shape = (batch_size, num_queries) if per_query else (batch_size,)
    lens = torch.tensor(draw(st.lists(st.integers(0, num_keys), min_size=math.prod(shape),
                                      max_size=math.prod(shape)))).reshape(shape)
    seed = draw(st.integers(0, 2**16))
    scale = draw(st.sampled_from([1e-3, 1.0, 30.0]))
    scores = torch.randn(batch_size, num_queries, num_keys, generator=torch.Generator().manual_seed(seed))
    return scores * scale, lens


@settings(max_examples=60, deadline=None)
@given(masked_scores(), st.booleans())
def test_masked_softmax_properties(data, causal):
    scores, valid_lens = data
    num_queries, num_keys = scores.shape[1:]
    if causal and num_queries != num_keys:
        causal = False
    weights = masked_softmax(scores, valid_lens, causal)
    keep = attention_mask(num_queries, num_keys, valid_lens, causal).expand_as(weights)
    assert (weights >= 0).all()
    assert (weights[~keep] == 0).all(), "masked keys must get exactly zero weight"
    sums = weights.sum(-1)
    any_valid = keep.any(-1)
    torch.testing.assert_close(sums[any_valid], torch.ones_like(sums[any_valid]))
    assert (sums[~any_valid] == 0).all(), "fully masked rows must be all zeros"


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 3), st.integers(1, 6), st.sampled_from([(6, 1), (6, 3), (9, 3), (5, 5), (7, 1)]),
       st.booleans(), st.integers(0, 2**16))
def test_self_attention_is_permutation_equivariant(batch_size, n, dims, need_weights, seed):
    num_hiddens, num_heads = dims
    torch.manual_seed(seed)
    model = MultiHeadAttention(num_hiddens, num_heads, bias=True).eval()
    X = torch.randn(batch_size, n, num_hiddens)
    perm = torch.randperm(n)
    output = model(X, X, X, need_weights=need_weights)
    permuted = model(X[:, perm], X[:, perm], X[:, perm], need_weights=need_weights)
    torch.testing.assert_close(permuted, output[:, perm], **TOL)


@pytest.mark.parametrize("need_weights", [False, True])
def test_gradients_reach_every_parameter(need_weights):
    torch.manual_seed(5)
    model = MultiHeadAttention(12, 3, dropout=0.1, bias=True)
    queries, keys = torch.randn(2, 4, 12), torch.randn(2, 5, 12)
    model(queries, keys, keys, torch.tensor([5, 3]), need_weights=need_weights).square().sum().backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


def test_dropout_is_active_in_training_only():
    torch.manual_seed(6)
    model = MultiHeadAttention(16, 4, dropout=0.5)
    X = torch.randn(2, 5, 16)
    assert not torch.allclose(model(X, X, X), model(X, X, X))
    model.eval()
    torch.testing.assert_close(model(X, X, X), model(X, X, X, need_weights=True))


def test_transpose_qkv_round_trip_and_head_layout():
    X = torch.arange(2 * 3 * 8, dtype=torch.float32).reshape(2, 3, 8)
    heads = transpose_qkv(X, 4)
    assert heads.shape == (8, 3, 2)
    torch.testing.assert_close(heads[1], X[0, :, 2:4])   # batch 0, head 1 = columns 2..3
    torch.testing.assert_close(heads[4], X[1, :, 0:2])   # batch 1, head 0
    torch.testing.assert_close(transpose_output(heads, 4), X)


def test_float64_modules_work():
    model = MultiHeadAttention(8, 2).double()
    X = torch.randn(1, 3, 8, dtype=torch.float64)
    assert model(X, X, X, need_weights=True).dtype == torch.float64


def reference_multihead(model, queries, keys, values, valid_lens=None, causal=False):
    """The definition as a loop over batch, query and head (use float64): no kernel, no mask tensor."""
    def linear(W, X):
        return X @ W.weight.T + (0 if W.bias is None else W.bias)
    Q, K, V = linear(model.W_q, queries), linear(model.W_k, keys), linear(model.W_v, values)
    (batch_size, num_queries, num_hiddens), num_keys = Q.shape, K.shape[1]
    head_dim = num_hiddens // model.num_heads
    rows = []
    for b in range(batch_size):
        for i in range(num_queries):
            n = num_keys if valid_lens is None else int(valid_lens[b] if valid_lens.dim() == 1 else valid_lens[b, i])
            n = min(n, i + 1) if causal else n             # query i sees keys 0 .. n-1
            for h in range(model.num_heads):
                cols = slice(h * head_dim, (h + 1) * head_dim)
                if n == 0:                                 # no visible key: zeros, by the kit's convention
                    rows.append(Q.new_zeros(head_dim))
                    continue
                weights = torch.softmax(K[b, :n, cols] @ Q[b, i, cols] / math.sqrt(head_dim), dim=0)
                rows.append(weights @ V[b, :n, cols])
    return linear(model.W_o, torch.cat(rows).reshape(batch_size, num_queries, num_hiddens))


def explicit_causal_sdpa(real_sdpa):
    """F.scaled_dot_product_attention with ``is_causal=True`` replaced by the explicit lower-triangular mask."""
    def sdpa(q, k, v, attn_mask=None, is_causal=False, **kwargs):
        if is_causal:
            attn_mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        return real_sdpa(q, k, v, attn_mask=attn_mask, **kwargs)
    return sdpa


def output_and_gradients(model, queries, keys, values, forward):
    """forward(queries, keys, values) and the gradients of a fixed random projection of it."""
    inputs = [X.detach().requires_grad_() for X in (queries, keys, values)]
    output = forward(*inputs)
    probe = torch.randn(output.shape, generator=torch.Generator().manual_seed(9), dtype=torch.float64).to(output)
    grads = torch.autograd.grad((output * probe).sum(), [*inputs, *model.parameters()])
    return output, grads


CAUSAL_CASES = {  # name: (num_queries, num_keys, valid_lens, causal)
    "causal": (7, 7, None, True),
    "causal+full lengths": (7, 7, [7, 7], True),
    "causal+padding": (7, 7, [4, 7], True),
    "causal+per-query with empty rows": (5, 5, [[0, 2, 5, 1, 5], [5, 0, 0, 3, 4]], True),
    "self": (7, 7, None, False),
    "cross": (3, 8, None, False),
    "cross+padding": (3, 8, [0, 5], False),
    "cross+per-query with empty rows": (3, 8, [[8, 0, 2], [1, 8, 0]], False),
}


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("case", CAUSAL_CASES)
def test_multihead_matches_float64_loop_forward_and_gradients(case, need_weights):
    num_queries, num_keys, valid_lens, causal = CAUSAL_CASES[case]
    torch.manual_seed(10)
    model = MultiHeadAttention(12, 3, bias=True).double().eval()
    queries = torch.randn(2, num_queries, 12, dtype=torch.float64)
    keys = queries if causal else torch.randn(2, num_keys, 12, dtype=torch.float64)
    values = torch.randn(2, num_keys, 12, dtype=torch.float64)
    lens = None if valid_lens is None else torch.tensor(valid_lens)
    output, grads = output_and_gradients(model, queries, keys, values,
                                         lambda *X: model(*X, lens, causal=causal, need_weights=need_weights))
    expected, expected_grads = output_and_gradients(model, queries, keys, values,
                                                    lambda *X: reference_multihead(model, *X, lens, causal))
    torch.testing.assert_close(output, expected, atol=1e-12, rtol=1e-10)
    for grad, expected_grad in zip(grads, expected_grads):
        torch.testing.assert_close(grad, expected_grad, atol=1e-12, rtol=1e-10)
    if lens is not None:   # a query with no visible key outputs the output bias alone
        empty = (lens if lens.dim() == 2 else lens[:, None].expand(-1, num_queries)) == 0
        torch.testing.assert_close(output[empty], model.W_o.bias.expand(int(empty.sum()), -1), atol=0, rtol=0)


@pytest.mark.parametrize("valid_lens", [None, [9, 9], [[9] * 9, [9] * 9]], ids=["none", "full", "full per query"])
def test_fast_causal_path_equals_explicit_mask_path(monkeypatch, valid_lens):
    torch.manual_seed(11)
    model = MultiHeadAttention(16, 4, bias=True).double().eval()   # float64: the same figures on any kernel
    X = torch.randn(2, 9, 16, dtype=torch.float64)
    lens = None if valid_lens is None else torch.tensor(valid_lens)
    fast = output_and_gradients(model, X, X, X, lambda *X: model(*X, lens, causal=True))
    monkeypatch.setattr(F, "scaled_dot_product_attention", explicit_causal_sdpa(F.scaled_dot_product_attention))
    explicit = output_and_gradients(model, X, X, X, lambda *X: model(*X, lens, causal=True))
    for got, expected in zip([fast[0], *fast[1]], [explicit[0], *explicit[1]]):
        torch.testing.assert_close(got, expected, **TOL)


def test_the_explicit_causal_stand_in_really_masks():
    """Guard for the test above: its stand-in for is_causal=True does hide the future keys."""
    sdpa = explicit_causal_sdpa(F.scaled_dot_product_attention)
    q, k, v = torch.randn(1, 1, 4, 3), torch.randn(1, 1, 4, 3), torch.randn(1, 1, 4, 3)
    torch.testing.assert_close(sdpa(q, k, v, is_causal=True)[..., 0, :], v[..., 0, :])
    assert not torch.allclose(sdpa(q, k, v, is_causal=True), sdpa(q, k, v))


SDPA_CALLS = {  # name: (num_queries, num_keys, valid_lens, causal, is_causal expected, mask expected)
    "plain causal": (6, 6, None, True, True, False),
    "causal, lengths mask nothing": (6, 6, [6, 6], True, True, False),
    "causal, per-query lengths mask nothing": (6, 6, [[6] * 6, [6] * 6], True, True, False),
    "causal+padding": (6, 6, [4, 6], True, False, True),
    "self": (6, 6, None, False, False, False),
    "self, lengths mask nothing": (6, 6, [6, 6], False, False, False),
    "padding": (6, 6, [3, 6], False, False, True),
    "cross": (3, 7, None, False, False, False),
    "cross+padding": (3, 7, [7, 2], False, False, True),
}


@pytest.mark.parametrize("case", SDPA_CALLS)
def test_fused_path_gives_sdpa_is_causal_or_the_mask_it_needs(monkeypatch, case):
    num_queries, num_keys, valid_lens, causal, is_causal, masked = SDPA_CALLS[case]
    calls, real_sdpa = [], F.scaled_dot_product_attention

    def spy(q, k, v, attn_mask=None, is_causal=False, **kwargs):
        calls.append((attn_mask, is_causal))
        return real_sdpa(q, k, v, attn_mask=attn_mask, is_causal=is_causal, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    model = MultiHeadAttention(8, 2).eval()
    queries, keys = torch.randn(2, num_queries, 8), torch.randn(2, num_keys, 8)
    lens = None if valid_lens is None else torch.tensor(valid_lens)
    model(queries, queries if causal else keys, queries if causal else keys, lens, causal=causal)
    [(attn_mask, got_is_causal)] = calls
    assert got_is_causal is is_causal
    if masked:
        expected = attention_mask(num_queries, num_keys, lens, causal)
        assert torch.equal(attn_mask, expected.unsqueeze(1)), "(batch, 1, q, k): one mask for every head"
    else:
        assert attn_mask is None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_multihead_on_gpu_matches_cpu():
    torch.manual_seed(7)
    model = MultiHeadAttention(16, 4).eval()
    X, lens = torch.randn(2, 5, 16), torch.tensor([2, 5])
    expected = model(X, X, X, lens, causal=True)
    cuda = model.to("cuda")
    for need_weights in (False, True):
        output = cuda(X.cuda(), X.cuda(), X.cuda(), lens.cuda(), causal=True, need_weights=need_weights)
        torch.testing.assert_close(output.cpu(), expected, **TOL)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-4), (torch.bfloat16, 5e-2)], ids=["fp32", "bf16"])
def test_fast_causal_path_on_gpu_matches_float64_cpu(dtype, tol):
    """GPU causal kernels (is_causal=True), forward and gradients, against the float64 explicit softmax on CPU."""
    torch.manual_seed(12)
    model = MultiHeadAttention(64, 4).double().eval()   # no key bias: its gradient is zero
    X = torch.randn(2, 300, 64, dtype=torch.float64)
    expected = output_and_gradients(model, X, X, X, lambda *X: model(*X, causal=True, need_weights=True))
    cuda = copy.deepcopy(model).to("cuda", dtype)
    X = X.to("cuda", dtype)
    got = output_and_gradients(cuda, X, X, X, lambda *X: cuda(*X, causal=True))
    for got, expected in zip([got[0], *got[1]], [expected[0], *expected[1]]):
        scale = float(expected.detach().abs().max())
        torch.testing.assert_close(got.double().cpu(), expected, atol=tol * scale, rtol=tol)


BAD_INPUT = {
    "num_hiddens not divisible": (lambda: MultiHeadAttention(10, 3), "num_hiddens"),
    "negative dropout (mha)": (lambda: MultiHeadAttention(8, 2, dropout=-0.1), "dropout"),
    "dropout above 1": (lambda: DotProductAttention(1.5), "dropout"),
    "queries of rank 2": (lambda: MultiHeadAttention(8, 2)(torch.randn(3, 8), torch.randn(1, 3, 8),
                                                           torch.randn(1, 3, 8)), "queries"),
    "wrong last dimension": (lambda: MultiHeadAttention(8, 2)(torch.randn(1, 3, 8), torch.randn(1, 3, 7),
                                                              torch.randn(1, 3, 8)), "keys"),
    "keys and values of different length": (
        lambda: MultiHeadAttention(8, 2)(torch.randn(1, 3, 8), torch.randn(1, 4, 8), torch.randn(1, 5, 8)),
        "values"),
    "batch sizes differ": (lambda: DotProductAttention()(torch.randn(2, 3, 4), torch.randn(1, 3, 4),
                                                         torch.randn(1, 3, 4)), "keys"),
    "valid_lens of the wrong shape": (lambda: masked_softmax(torch.randn(2, 3, 4), torch.tensor([1, 2, 3])),
                                      "valid_lens"),
    "valid_lens larger than num_keys": (lambda: masked_softmax(torch.randn(2, 3, 4), torch.tensor([1, 5])),
                                        "valid_lens"),
    "negative valid_lens": (lambda: masked_softmax(torch.randn(2, 3, 4), torch.tensor([-1, 2])), "valid_lens"),
    "scores of rank 2": (lambda: masked_softmax(torch.randn(3, 4)), "X"),
    "causal with different lengths": (lambda: masked_softmax(torch.randn(1, 3, 4), causal=True), "causal"),
    "causal cross-attention (fused)": (lambda: MultiHeadAttention(8, 2)(torch.randn(1, 3, 8), torch.randn(1, 4, 8),
                                                                        torch.randn(1, 4, 8), causal=True), "causal"),
}


@pytest.mark.parametrize("case", BAD_INPUT)
def test_bad_input_raises_value_error_naming_the_argument(case):
    make, argument = BAD_INPUT[case]
    with pytest.raises(ValueError, match=argument):
        make()


def test_float_valid_lens_is_a_type_error():
    with pytest.raises(TypeError, match="valid_lens"):
        masked_softmax(torch.randn(2, 3, 4), torch.tensor([1.0, 2.0]))


def test_kept_weights_are_detached_so_the_module_can_be_copied():
    model = MultiHeadAttention(8, 2)
    X = torch.randn(1, 3, 8, requires_grad=True)
    model(X, X, X, need_weights=True).sum().backward()
    assert not model.attention_weights.requires_grad
    clone = copy.deepcopy(model)
    torch.testing.assert_close(clone(X, X, X), model(X, X, X))

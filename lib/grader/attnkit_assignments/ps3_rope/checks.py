"""Checks of problem set 3 (rotary embeddings and ALiBi), decided by the trusted grader (never staged into a
sandbox).

``CHECKS`` declares every check once: its test cell, the probe whose outputs it reads, what it checks (the text
students see), its points, its kind and whether it is hidden (absent from the released notebook); each visible
one mirrors a check of the notebook's test cell, worth the same points, on fresh inputs of the same kind.
``make_inputs`` draws the probes' inputs, fresh for every submission.
"""

import numpy as np
import torch

from attnkit_grader.authoring import (N_, Spec, as_tensor, close, copy_linears, expect, scaled, sentence, shape_text,
                                       tolerance)

from .reference import RotaryMultiHeadAttention as ReferenceAttention
from .reference import alibi_bias, alibi_slopes, causal_alibi_attention, rotary_embedding


def _both(compute):
    """``compute(dtype)`` in float64 and float32, as float64 arrays: (ref64, ref32)."""
    return tuple(compute(dtype).detach().double().numpy() for dtype in (torch.float64, torch.float32))


def _close_to_reference(actual, refs, what):
    ref64, ref32 = refs
    close(actual, ref64, max(tolerance(ref32, ref64), scaled(ref64, 1e-6)), what)


def _outcome_is_value_error(got, what):
    """The probe's outcome: 1 = ValueError (required), 0 = returned, 2 = another exception."""
    outcome = got.integer("outcome", sentence("what happened with {what}", what=what))
    expect(outcome != 0, "{what}: expected ValueError, but it returned a result", what=what)
    expect(outcome == 1, "{what}: expected ValueError, got another exception (check the size yourself and raise "
                         "ValueError naming the argument)", what=what)


# ---------------------------------------------------------------------------------------------------
# rotary_embedding

def _rope_what(x, edge=None):
    if edge is None:
        return sentence("rotary_embedding(x, positions) for x of shape {shape}", shape=shape_text(x.shape))
    return sentence("rotary_embedding(x, positions) for x of shape {shape} (an edge case: {edge})",
                    shape=shape_text(x.shape), edge=sentence(edge))


def _rope_reference(x, positions, base=10000):
    return _both(lambda dtype: rotary_embedding(as_tensor(x, dtype), torch.from_numpy(positions), base))


def _check_rope_shape(case, got):
    x = case["arrays"]["x"]
    what = _rope_what(x)
    value = got.native("output", x.shape, what)
    expect(value.dtype == np.float64, "{what} should keep x's dtype, float64, got {dtype}", what=what,
           dtype=str(value.dtype))


def _check_rope_cases(case, got):
    a = case["arrays"]
    for index in range(case["params"]["cases"]):
        x, positions = a[f"x_{index}"], a[f"positions_{index}"]
        edges = case["params"].get("edges")
        what = _rope_what(x, edges[index] if edges else None)
        output = got.floats(f"output_{index}", x.shape, what)
        _close_to_reference(output, _rope_reference(x, positions), what)


def _check_rope_relative(case, got):
    a = case["arrays"]
    n = a["q"].shape[0]
    shift = int(a["shifted"][0] - a["positions"][0])
    scores = got.floats("scores_positions", (n, n), "the scores (R_m q) . (R_n k)")
    shifted = got.floats("scores_shifted", (n, n), sentence("the same scores with every position shifted by {shift}",
                                                            shift=shift))
    close(shifted, scores, scaled(scores, 1e-4),
          sentence("the scores (R_m q) . (R_n k) after shifting every position by {shift}, against before (they "
                   "must depend on m - n only)", shift=shift))


def _check_rope_odd(case, got):
    x = case["arrays"]["x"]
    _outcome_is_value_error(got, sentence("rotary_embedding(x, positions) with d = {d}", d=x.shape[-1]))


def _check_rope_random(case, got):
    a, base = case["arrays"], case["params"]["base"]
    refs = _rope_reference(a["x"], a["positions"], base)
    for bits in (32, 64):
        what = sentence("rotary_embedding(x, positions, base={base}) for x of shape {shape} in float{bits}", base=base,
                        shape=shape_text(a["x"].shape), bits=bits)
        output = got.floats(f"output{bits}", a["x"].shape, what)
        if bits == 32:
            _close_to_reference(output, refs, what)
        else:        # float64 in, float64 out: the angles too are computed in float64
            close(output, refs[0], scaled(refs[0], 1e-9), what)


# ---------------------------------------------------------------------------------------------------
# RotaryMultiHeadAttention

_LINEARS = ("W_q", "W_k", "W_v", "W_o")


def _reference_attention(params, arrays, dtype):
    """The reference module with the probe's weights, in ``dtype``, eval mode."""
    module = ReferenceAttention(params["num_hiddens"], params["num_heads"], 0.0, params.get("base", 10000),
                                bias=params.get("bias", False)).to(dtype).eval()
    with torch.no_grad():
        copy_linears(module, arrays, _LINEARS, dtype)
    return module


def _run_reference(params, arrays, queries="queries", **options):
    """((output64, output32), (weights64, weights32)) of the reference on the case's inputs."""
    outputs, weights = [], []
    for dtype in (torch.float64, torch.float32):
        module = _reference_attention(params, arrays, dtype)
        lens = arrays.get("valid_lens")
        lens = None if lens is None else torch.from_numpy(np.asarray(lens, dtype=np.int64))
        with torch.no_grad():
            out = module(as_tensor(arrays[queries], dtype), as_tensor(arrays["keys"], dtype),
                         as_tensor(arrays["values"], dtype), lens, **options)
        outputs.append(out.double().numpy())
        weights.append(module.attention_weights.double().numpy())
    return tuple(outputs), tuple(weights)


def _attention_shapes(params, arrays, queries="queries"):
    batch, q = arrays[queries].shape[:2]
    k = arrays["keys"].shape[1]
    return (batch, q, params["num_hiddens"]), (batch, params["num_heads"], q, k)


def _check_attention_shapes(case, got):
    output_shape, weights_shape = _attention_shapes(case["params"], case["arrays"])
    got.floats("output", output_shape, sentence("the output of attention with {queries} queries and {keys} keys",
                                                queries=output_shape[1], keys=weights_shape[-1]))
    got.floats("attention_weights", weights_shape, "attention_weights")


def _check_attention_parity(case, got):
    """The output and the attention weights equal the reference's with the same weights and options."""
    p, a = case["params"], case["arrays"]
    what = sentence(case["what"])
    output_shape, weights_shape = _attention_shapes(p, a)
    outputs, weights = _run_reference(p, a, causal=p.get("causal", False), position_offset=p.get("position_offset", 0))
    output = got.floats("output", output_shape, sentence("{what}: output", what=what))
    _close_to_reference(output, outputs, sentence("{what}: output", what=what))
    found = got.floats("attention_weights", weights_shape, sentence("{what}: attention_weights", what=what))
    _close_to_reference(found, weights, sentence("{what}: attention_weights", what=what))


def _check_cached(case, got):
    p, a = case["params"], case["arrays"]
    full_shape, _ = _attention_shapes(p, a)
    step_shape, _ = _attention_shapes(p, a, "step_queries")
    full_refs, _ = _run_reference(p, a, causal=True)
    what = sentence("the full causal pass over {n} positions", n=full_shape[1])
    _close_to_reference(got.floats("full", full_shape, what), full_refs, what)
    offset = p["position_offset"]
    step_refs, _ = _run_reference(p, a, "step_queries", causal=True, position_offset=offset)
    what = sentence("{q} new queries at position_offset = {offset} over {k} cached keys, causal (they must give "
                    "the last {q} rows of the full causal pass)", q=step_shape[1], offset=offset, k=full_shape[1])
    _close_to_reference(got.floats("step", step_shape, what), step_refs, what)


def _check_masked_zero(case, got):
    p, a = case["params"], case["arrays"]
    _, weights_shape = _attention_shapes(p, a)
    weights = got.floats("attention_weights", weights_shape, "attention_weights")
    lens = np.asarray(a["valid_lens"], dtype=np.int64)                                 # (batch,)
    masked = np.arange(weights_shape[-1])[None, :] >= lens[:, None]                     # (batch, k)
    masked = np.broadcast_to(masked[:, None, None, :], weights_shape)
    leaked = np.abs(weights[masked])
    expect(leaked.size == 0 or leaked.max() == 0,
           "with valid_lens = {lens}, masked keys got weights up to {leaked:.3g}; they must be exactly 0 (fill their "
           "scores with -inf before the softmax)", lens=lens.tolist(), leaked=leaked.max() if leaked.size else 0)
    close(weights.sum(axis=-1), np.ones(weights_shape[:-1]), 1e-5,
          sentence("with valid_lens = {lens}, the row sums of attention_weights (the valid keys share all the weight)",
                   lens=lens.tolist()))


def _check_attention_odd(case, got):
    p = case["params"]
    _outcome_is_value_error(got, sentence("RotaryMultiHeadAttention({num_hiddens}, {num_heads}, 0.0) (head_dim "
                                          "{head_dim} is odd)", num_hiddens=p["num_hiddens"], num_heads=p["num_heads"],
                                          head_dim=p["num_hiddens"] // p["num_heads"]))


# ---------------------------------------------------------------------------------------------------
# alibi_slopes, alibi_bias

def _check_slopes(case, got):
    edges = case["params"].get("edges")
    for index, n in enumerate(case["params"]["counts"]):
        what = sentence("alibi_slopes({n})", n=n) if not edges else \
            sentence("alibi_slopes({n}) (an edge case: {edge})", n=n, edge=sentence(edges[index]))
        slopes = got.floats(f"slopes_{n}", (n,), what)
        expected = alibi_slopes(n).double().numpy()
        close(slopes, expected, scaled(expected, 1e-6), what)


def _bias_what(q, n, edge=None):
    if edge is None:
        return sentence("alibi_bias({q}, {n}, slopes)", q=q, n=n)
    return sentence("alibi_bias({q}, {n}, slopes) (an edge case: {edge})", q=q, n=n, edge=sentence(edge))


def _check_bias(case, got):
    p, a = case["params"], case["arrays"]
    edges = p.get("edges")
    for index, (q, n) in enumerate(p["cases"]):
        slopes = a[f"slopes_{index}"]
        what = _bias_what(q, n, edges[index] if edges else None)
        bias = got.floats(f"bias_{index}", (slopes.shape[0], q, n), what)
        refs = _both(lambda dtype: alibi_bias(q, n, as_tensor(slopes, dtype)))
        _close_to_reference(bias, refs, what)
        if p.get("toeplitz") and q > 1 and n > 1:
            expect(bool(np.allclose(bias[:, 1:, 1:], bias[:, :-1, :-1], rtol=0, atol=scaled(bias, 1e-6))),
                   "{what} is not constant along diagonals: entry [h, i, j] must depend on j - i only", what=what)
        if p.get("toeplitz"):
            seen = np.arange(n)[None, :] <= np.arange(n - q, n)[:, None]                # (q, n): j <= query's position
            expect(bool((bias[:, seen] <= 0).all()), "{what} is positive where a query sees a key: the bias must "
                                                     "be m_h (j - i) <= 0 there, falling with the distance", what=what)


def _check_bias_too_many(case, got):
    q, n = case["params"]["sizes"]
    _outcome_is_value_error(got, sentence("alibi_bias({q}, {n}, slopes) (more queries than keys)", q=q, n=n))


# ---------------------------------------------------------------------------------------------------
# causal_alibi_attention

def _alibi_what(queries, keys, dtype=None):
    if dtype is None:
        return sentence("causal_alibi_attention with {heads} heads, {q} queries and {k} keys", heads=queries.shape[1],
                        q=queries.shape[2], k=keys.shape[2])
    return sentence("causal_alibi_attention with {heads} heads, {q} queries and {k} keys in {dtype}",
                    heads=queries.shape[1], q=queries.shape[2], k=keys.shape[2], dtype=dtype)


def _check_alibi_shape(case, got):
    a = case["arrays"]
    queries, keys, values = a["queries_0"], a["keys_0"], a["values_0"]
    got.floats("output_0", queries.shape[:3] + values.shape[3:], _alibi_what(queries, keys))


def _check_alibi_attention(case, got):
    p, a = case["params"], case["arrays"]
    for index in range(p["cases"]):
        queries, keys, values, slopes = (a[f"{name}_{index}"] for name in ("queries", "keys", "values", "slopes"))
        what = _alibi_what(queries, keys, "float64" if index in p.get("float64", ()) else None)
        output = got.floats(f"output_{index}", queries.shape[:3] + values.shape[3:], what)
        tensors = (queries, keys, values, slopes)
        refs = _both(lambda dtype: causal_alibi_attention(*(as_tensor(t, dtype) for t in tensors)))
        _close_to_reference(output, refs, what)


CHECKS = [
    Spec("test_rope", "rope_shape", "keeps the shape and dtype: x of shape (2, 3, 5, 8) in float64", 0.5,
         _check_rope_shape, kind="structure"),
    Spec("test_rope", "rope_example", "the worked case: x = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]] at "
                                      "positions 0, 1, 2 (d = 4)", 1, _check_rope_cases),
    Spec("test_rope", "rope_edge", "edge cases: one pair (d = 2), one position, positions that do not start at 0",
         0.5, _check_rope_cases),
    Spec("test_rope", "rope_relative", "relative: (R_m q) . (R_n k) depends on m - n only (all positions shifted by "
                                       "100)", 0.5, _check_rope_relative, kind="property"),
    Spec("test_rope", "rope_odd", "an odd last dimension (d = 5) raises ValueError", 0.5, _check_rope_odd,
         kind="property"),
    Spec("test_rope", "rope_random", "equals the reference on random x, positions and base, in float32 and float64", 1,
         _check_rope_random,
         hidden=True),
    Spec("test_rotary_attention", "attn_shape", "the output is (batch, q, num_hiddens) and attention_weights (batch, "
                                                "num_heads, q, k)", 0.5, _check_attention_shapes, kind="structure"),
    Spec("test_rotary_attention", "attn_worked", "the worked case: identity weights, 2 heads of 4 features, 3 "
                                                 "positions: output and attention weights", 1,
         _check_attention_parity, (("what", N_("self-attention with the given weights")),)),
    Spec("test_rotary_attention", "attn_cached", "decoding with a cache: 2 new queries at position_offset = 4 over 6 "
                                                 "keys, causal", 1, _check_cached),
    Spec("test_rotary_attention", "attn_masked", "valid_lens: keys beyond each sequence's valid length get weight "
                                                 "exactly 0", 0.5, _check_masked_zero, kind="property"),
    Spec("test_rotary_attention", "attn_odd", "an odd head_dim (num_hiddens = 6, num_heads = 2) raises ValueError",
         0.5, _check_attention_odd, kind="property"),
    Spec("test_rotary_attention", "attn_causal_parity", "causal self-attention with valid_lens (4 heads, bias=True) "
                                                        "equals the reference with the same weights", 0.75,
         _check_attention_parity, (("what", N_("causal self-attention with valid_lens")),), hidden=True),
    Spec("test_rotary_attention", "attn_cross_parity", "cross-attention with valid_lens and a position_offset equals "
                                                       "the reference", 0.75,
         _check_attention_parity, (("what", N_("cross-attention with valid_lens and a position_offset")),),
         hidden=True),
    Spec("test_slopes", "slopes_power", "8 heads: 2^-1, 2^-2, ..., 2^-8", 0.5, _check_slopes),
    Spec("test_slopes", "slopes_other", "12 heads (not a power of two): 2^-1 ... 2^-8, then 2^-0.5, 2^-1.5, 2^-2.5, "
                                        "2^-3.5", 0.5, _check_slopes),
    Spec("test_slopes", "slopes_edge", "edge cases: 1 head (2^-8), 2 heads (2^-4, 2^-8), 3 heads (2^-4, 2^-8, 2^-2)",
         0.5, _check_slopes),
    Spec("test_slopes", "slopes_random", "6 heads and a random head count equal the paper's rule", 0.5,
         _check_slopes, hidden=True),
    Spec("test_bias", "bias_square", "the worked case: 4 queries, 4 keys, slopes (0.5, 0.25)", 0.75, _check_bias),
    Spec("test_bias", "bias_cache", "with a cache: 2 queries over 5 keys sit at positions 3 and 4", 0.5,
         _check_bias),
    Spec("test_bias", "bias_edge", "edge cases: one query, no query", 0.25, _check_bias),
    Spec("test_bias", "bias_too_many", "more queries than keys (5 over 3) raises ValueError", 0.25,
         _check_bias_too_many, kind="property"),
    Spec("test_bias", "bias_random", "random sizes and slopes: Toeplitz, m_h (j - i) with the queries last, <= 0 on "
                                     "the causal side", 0.25, _check_bias, hidden=True),
    Spec("test_alibi_attention", "alibi_shape", "the output is (batch, num_heads, q, value_dim)", 0.5,
         _check_alibi_shape, kind="structure"),
    Spec("test_alibi_attention", "alibi_worked", "the worked case: 2 heads, 4 positions, slopes (0.5, 0.25)", 1,
         _check_alibi_attention),
    Spec("test_alibi_attention", "alibi_cache", "with a cache: 2 queries over 5 keys", 0.5, _check_alibi_attention),
    Spec("test_alibi_attention", "alibi_random", "random sizes, head counts and slopes equal the reference (float64 "
                                                 "too)", 1, _check_alibi_attention, hidden=True),
]

# The edge cases' words, one per case of the probes rope_edge, slopes_edge and bias_edge.
_ROPE_EDGES = (N_("one pair, d = 2"), N_("one position"), N_("positions that do not start at 0"))
_SLOPE_EDGES = (N_("one head"), N_("two heads"), N_("three heads: two, then one from 2p"))
_BIAS_EDGES = (N_("one query"), N_("no query"))


def make_inputs(rng, **_sizes):
    """Fresh inputs for every probe. Sizes are drawn where every catalogued mistake shows: head_dim >= 4 for
    the pairing convention and the frequencies (at d = 2 there is one pair), two heads or more where the scale
    is checked (with one, sqrt(num_hiddens) = sqrt(head_dim)), positions beyond 0, non-power-of-two head
    counts for the slopes, two queries or more over the cache (the last query alone sees every key anyway)."""
    def integer(low, high):
        return int(rng.integers(low, high + 1))

    def normal(*shape, scale=1.0):
        return scale * rng.standard_normal(shape)

    def positions(n, start=0):
        return np.arange(start, start + n, dtype=np.int64)

    def weights(num_hiddens, bias=False):
        arrays = {f"{name}.weight": normal(num_hiddens, num_hiddens, scale=0.4) for name in _LINEARS}
        if bias:
            arrays.update({f"{name}.bias": normal(num_hiddens, scale=0.1) for name in _LINEARS})
        return arrays

    def slopes(h):
        return np.sort(rng.uniform(0.05, 1.0, h))[::-1].copy()

    inputs = {}
    d = 2 * integer(2, 6)
    inputs["rope_shape"] = {"arrays": {"x": normal(2, 3, 5, d), "positions": positions(5)}, "params": {}}
    n, d = integer(3, 6), 2 * integer(2, 6)
    inputs["rope_example"] = {"arrays": {"x_0": normal(n, d), "positions_0": positions(n)}, "params": {"cases": 1}}
    n, d = integer(2, 5), 2 * integer(2, 6)
    inputs["rope_edge"] = {
        "arrays": {"x_0": normal(n, 2), "positions_0": positions(n, integer(1, 20)),
                   "x_1": normal(1, d), "positions_1": positions(1, integer(1, 50)),
                   "x_2": normal(n, d), "positions_2": positions(n, integer(5, 60))},
        "params": {"cases": 3, "edges": list(_ROPE_EDGES)}}
    n, d, start, shift = integer(3, 7), 8, integer(0, 10), 100                  # the notebook's d and shift
    inputs["rope_relative"] = {"arrays": {"q": normal(n, d), "k": normal(n, d), "positions": positions(n, start),
                                          "shifted": positions(n, start + shift)}, "params": {}}
    n = integer(2, 5)
    inputs["rope_odd"] = {"arrays": {"x": normal(n, 2 * integer(1, 4) + 1), "positions": positions(n)}, "params": {}}
    n, d = integer(2, 12), 2 * integer(2, 16)
    inputs["rope_random"] = {
        "arrays": {"x": normal(integer(1, 3), integer(1, 4), n, d),
                   "positions": rng.permutation(integer(n, 300))[:n].astype(np.int64)},
        "params": {"base": [100, 10000, 500000][integer(0, 2)]}}

    def attention_case(num_heads, head_dim, q, k, batch=1, bias=False, cross=False, **params):
        """Self-attention (queries = keys = values = X, q = k) unless ``cross``."""
        num_hiddens = num_heads * head_dim
        arrays = weights(num_hiddens, bias)
        if cross:
            arrays.update(queries=normal(batch, q, num_hiddens), keys=normal(batch, k, num_hiddens),
                          values=normal(batch, k, num_hiddens))
        else:
            X = normal(batch, k, num_hiddens)
            arrays.update(queries=X, keys=X, values=X)
        return {"arrays": arrays, "params": {"num_hiddens": num_hiddens, "num_heads": num_heads, "bias": bias,
                                             **params}}

    inputs["attn_shape"] = attention_case(integer(1, 3), 2 * integer(1, 3), integer(1, 4), integer(2, 6),
                                          batch=integer(1, 3), cross=True)
    inputs["attn_worked"] = attention_case(2, 4, 3, 3)                              # the notebook's sizes
    n, new = integer(4, 8), integer(1, 3)
    case = attention_case(integer(2, 3), 2 * integer(2, 3), n, n, position_offset=n - new)
    case["arrays"]["step_queries"] = case["arrays"]["queries"][:, n - new:].copy()
    inputs["attn_cached"] = case
    batch = 2
    case = attention_case(integer(1, 3), 2 * integer(1, 3), integer(1, 4), integer(3, 7), batch=batch, cross=True)
    k = case["arrays"]["keys"].shape[1]
    case["arrays"]["valid_lens"] = np.array([integer(1, k - 1), integer(1, k)], dtype=np.int64)
    inputs["attn_masked"] = case
    heads = integer(1, 4)
    inputs["attn_odd"] = {"arrays": {}, "params": {"num_hiddens": heads * (2 * integer(1, 3) + 1), "num_heads": heads}}
    n = integer(3, 9)
    case = attention_case(4, 2 * integer(2, 4), n, n, batch=2, bias=True, causal=True,
                          base=[1000, 10000][integer(0, 1)])
    case["arrays"]["valid_lens"] = np.array([n, integer(1, n - 1)], dtype=np.int64)     # (batch,): one sequence padded
    inputs["attn_causal_parity"] = case
    q, k = integer(1, 4), integer(3, 9)
    case = attention_case(integer(2, 3), 2 * integer(2, 4), q, k, batch=2, cross=True, position_offset=integer(1, 20))
    case["arrays"]["valid_lens"] = np.array([integer(1, k), k], dtype=np.int64)
    inputs["attn_cross_parity"] = case

    power = 2 ** integer(2, 5)
    other = [c for c in range(5, 49) if c & (c - 1)][integer(0, 37)]           # 5 .. 48, not a power of two
    inputs["slopes_power"] = {"arrays": {}, "params": {"counts": [power]}}
    inputs["slopes_other"] = {"arrays": {}, "params": {"counts": [other]}}
    inputs["slopes_edge"] = {"arrays": {}, "params": {"counts": [1, 2, 3], "edges": list(_SLOPE_EDGES)}}
    inputs["slopes_random"] = {"arrays": {}, "params": {"counts": sorted({6, integer(1, 64)})}}

    def bias_case(cases, **params):
        arrays = {f"slopes_{index}": slopes(integer(1, 4)) for index in range(len(cases))}
        return {"arrays": arrays, "params": {"cases": cases, **params}}

    n = integer(3, 7)
    inputs["bias_square"] = bias_case([[n, n]])
    k = integer(4, 8)
    inputs["bias_cache"] = bias_case([[integer(1, k - 2), k]])
    inputs["bias_edge"] = bias_case([[1, integer(2, 6)], [0, integer(1, 5)]],   # one query sees a nonzero bias
                                    edges=list(_BIAS_EDGES))
    k = integer(1, 5)
    inputs["bias_too_many"] = {"arrays": {"slopes": slopes(integer(1, 3))}, "params": {"sizes": [k + integer(1, 3), k]}}
    k = integer(2, 12)
    inputs["bias_random"] = bias_case([[k, k], [integer(1, k - 1), k]], toeplitz=True)

    def alibi_case(shapes, **params):
        arrays = {}
        for index, (batch, heads, q, k, d, dv) in enumerate(shapes):
            arrays.update({f"queries_{index}": normal(batch, heads, q, d), f"keys_{index}": normal(batch, heads, k, d),
                           f"values_{index}": normal(batch, heads, k, dv), f"slopes_{index}": slopes(heads)})
        return {"arrays": arrays, "params": {"cases": len(shapes), **params}}

    n = integer(2, 5)
    inputs["alibi_shape"] = alibi_case([[integer(1, 3), integer(1, 3), n, n, integer(2, 5), integer(2, 6)]])
    n = integer(3, 6)
    inputs["alibi_worked"] = alibi_case([[1, integer(2, 3), n, n, integer(2, 6), integer(2, 6)]])
    k = integer(4, 8)
    inputs["alibi_cache"] = alibi_case([[1, integer(1, 3), integer(2, k - 2), k, integer(2, 6), integer(2, 6)]])
    k = integer(2, 10)
    square = [integer(1, 3), integer(1, 6), k, k, integer(2, 8), integer(2, 8)]
    cache = [integer(1, 2), integer(1, 6), integer(1, k), k, integer(2, 8), integer(2, 8)]
    inputs["alibi_random"] = alibi_case([square, cache], float64=[1])
    return inputs

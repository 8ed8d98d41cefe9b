"""Checks of problem set 2, decided by the trusted grader (never staged into a sandbox).

``CHECKS`` declares every check of the assignment once (see problem set 1's ``checks.py`` for the fields);
the inputs are drawn by ``inputs.make_inputs``.
"""

import math

import numpy as np
import torch

from attnkit_grader.judging.compare import as32, as_tensor, close, equal, expect, fmt, scaled, shape_text, tolerance
from attnkit_grader.judging.registry import Spec

from .inputs import MEMORY_HEAD_DIM, MEMORY_LENGTH, make_inputs
from .reference import RelativeMultiHeadAttention as ReferenceAttention
from .reference import causal_relative_attention_naive as reference_causal
from .reference import relative_position_index as reference_index
from .reference import skew as reference_skew

__all__ = ["CHECKS", "MEMORY_HEAD_DIM", "MEMORY_LENGTH", "make_inputs"]


# ---------------------------------------------------------------------------------------------------
# Problem set 2: relative_position_index

def _index_case(got, index, q, n, k, integer=False):
    what = f"relative_position_index({q}, {n}, {k})"
    got_index = got.native(f"index_{index}", (q, n), what)
    if integer:
        expect(got_index.dtype.kind in "iu", f"{what} should hold integers, got dtype {got_index.dtype}")
    return what, got_index.astype(np.float64) if got_index.dtype.kind == "f" else got_index


def _reference_index(q, n, k):
    return reference_index(q, n, k).numpy()


def _check_index_dtype(case, got):
    q, n, k = case["params"]["cases"][0]
    what = f"relative_position_index({q}, {n}, {k})"
    value = got.native("index_0", (q, n), what)
    expect(value.dtype == np.int64, f"the index must be int64 (it selects table rows), got {value.dtype}")


def _check_index_values(case, got):
    for index, (q, n, k) in enumerate(case["params"]["cases"]):
        what, value = _index_case(got, index, q, n, k, integer=True)
        equal(value, _reference_index(q, n, k), what)


def _check_toeplitz(case, got):
    for index, (q, n, k) in enumerate(case["params"]["cases"]):
        what, value = _index_case(got, index, q, n, k)
        expect(bool((value[1:, 1:] == value[:-1, :-1]).all()),
                f"{what} is not constant along diagonals: entry [i, j] must depend on j - i only")
        diagonal = np.diagonal(value)
        expect(bool((diagonal == k).all()),
                f"{what} has {[fmt(x) for x in diagonal]} on the diagonal, expected {k} "
                f"(i = j is distance 0, shifted by k)")
        expect(np.unique(value).size > 1 or np.unique(_reference_index(q, n, k)).size == 1,
                f"{what} holds the same number everywhere; entries off the diagonal belong to other distances")


def _check_saturation(case, got):
    for index, (q, n, k) in enumerate(case["params"]["cases"]):
        what, value = _index_case(got, index, q, n, k)
        distance = np.arange(n)[None, :] - np.arange(q)[:, None]           # (q, n): j - i
        expect(bool((value[distance >= k] == 2 * k).all()),
                f"{what}: entries with j - i >= {k} should all be {2 * k} (clip at +k, then add k); "
                f"check the sign of j - i and the clipping")
        expect(bool((value[distance <= -k] == 0).all()),
                f"{what}: entries with j - i <= -{k} should all be 0")


def _check_index_int64(case, got):
    for index, (q, n, k) in enumerate(case["params"]["cases"]):
        what = f"relative_position_index({q}, {n}, {k})"
        value = got.native(f"index_{index}", (q, n), what)
        expect(value.dtype == np.int64, f"relative_position_index must return an int64 (Long) tensor, "
                                         f"got {value.dtype}")
        equal(value, _reference_index(q, n, k), what)


# ---------------------------------------------------------------------------------------------------
# Problem set 2: RelativeMultiHeadAttention

_LINEARS = ("W_q", "W_k", "W_v", "W_o")


def _reference_attention(params, arrays, dtype):
    """The reference module with the probe's weights, in ``dtype``, eval mode."""
    module = ReferenceAttention(params["num_hiddens"], params["num_heads"], 0.0, params["max_distance"],
                                bias=params.get("bias", False)).to(dtype).eval()
    with torch.no_grad():
        for name in _LINEARS:
            linear = getattr(module, name)
            linear.weight.copy_(as_tensor(arrays[f"{name}.weight"], dtype))
            if f"{name}.bias" in arrays:
                linear.bias.copy_(as_tensor(arrays[f"{name}.bias"], dtype))
        module.rel_k.copy_(as_tensor(arrays["rel_k"], dtype))
        module.rel_v.copy_(as_tensor(arrays["rel_v"], dtype))
    return module


def _run_reference(params, arrays, queries, keys, values, valid_lens=None):
    """((out64, weights64), (out32, weights32)) of the reference on the given inputs."""
    results = []
    for dtype in (torch.float64, torch.float32):
        module = _reference_attention(params, arrays, dtype)
        lens = None if valid_lens is None else torch.from_numpy(np.asarray(valid_lens, dtype=np.int64))
        with torch.no_grad():
            out = module(as_tensor(queries, dtype), as_tensor(keys, dtype), as_tensor(values, dtype), lens)
        results.append((out.double().numpy(), module.attention_weights.double().numpy()))
    return results


def _attention_shapes(case):
    p, a = case["params"], case["arrays"]
    batch, q = a["queries"].shape[:2]
    k = a["keys"].shape[1]
    return (batch, q, p["num_hiddens"]), (batch, p["num_heads"], q, k)


def _check_tables(case, got):
    p, a = case["params"], case["arrays"]
    for name in ("rel_k", "rel_v"):
        shape = a[name].shape
        found = got.native(f"{name}_shape", None, f"the shape of {name}")
        found = tuple(int(s) for s in found.reshape(-1)) if found.dtype.kind in "iu" and found.ndim == 1 else None
        expect(found == tuple(shape),
                f"{name} should hold 2 * max_distance + 1 = {shape[0]} rows of head_dim = {shape[1]} values "
                f"(max_distance={p['max_distance']}, num_hiddens={p['num_hiddens']}, num_heads={p['num_heads']}), "
                f"got shape {shape_text(found) if found is not None else 'unknown'}")
        table = got.floats(name, shape, f"{name} read back after loading values into it")
        close(table, a[name], scaled(a[name], 1e-6), f"{name} read back after loading values into it")


def _check_output_shape(case, got):
    output_shape, _ = _attention_shapes(case)
    a = case["arrays"]
    kind = "self-attention" if a["queries"].shape == a["keys"].shape and (a["queries"] == a["keys"]).all() \
        else "cross-attention"
    got.floats("output", output_shape, f"the output of {kind} with {a['queries'].shape[1]} queries and "
                                       f"{a['keys'].shape[1]} keys")


def _check_weights_rows(case, got):
    _, weights_shape = _attention_shapes(case)
    weights = got.floats("attention_weights", weights_shape, "attention_weights")
    close(weights.sum(axis=-1), np.ones(weights_shape[:-1]), 1e-5, "the row sums of attention_weights")


def _check_masked_zero(case, got):
    a = case["arrays"]
    _, weights_shape = _attention_shapes(case)
    weights = got.floats("attention_weights", weights_shape, "attention_weights")
    lens = np.asarray(a["valid_lens"], dtype=np.int64)
    lens = lens[:, None] if lens.ndim == 1 else lens                       # (batch, 1 or q)
    masked = np.arange(weights_shape[-1])[None, None, :] >= lens[:, :, None]   # (batch, 1 or q, k)
    masked = np.broadcast_to(masked[:, None], weights_shape)
    leaked = np.abs(weights[masked])
    shown = lens.squeeze(-1).tolist() if lens.shape[1] == 1 else lens.tolist()
    expect(leaked.size == 0 or leaked.max() == 0,
            f"with valid_lens = {shown}, masked keys got weights up to {leaked.max() if leaked.size else 0:.3g}; "
            f"they must be exactly 0 (fill their scores with -inf before the softmax, or use attnkit.masked_softmax)")
    # Evidence that the mask is applied to a softmax, not to nothing: the valid keys' weights sum to 1.
    close(weights.sum(axis=-1), np.ones(weights_shape[:-1]), 1e-5,
           f"with valid_lens = {shown}, the row sums of attention_weights (the valid keys share all the weight)")


def _check_attention_parity(case, got):
    """The output and the attention weights equal the reference's; only one of them when the case says
    ``compare`` "output" or "weights" (the weights alone earn credit for logits and softmax done right
    even when the values are combined wrongly afterwards)."""
    p, a = case["params"], case["arrays"]
    what, compare = case["what"], case.get("compare", "both")
    output_shape, weights_shape = _attention_shapes(case)
    (out64, w64), (out32, w32) = _run_reference(p, a, a["queries"], a["keys"], a["values"], a.get("valid_lens"))
    if compare != "weights":
        out = got.floats("output", output_shape, f"{what}: output")
        close(out, out64, tolerance(out32, out64), f"{what}: output")
    if compare != "output":
        weights = got.floats("attention_weights", weights_shape, f"{what}: attention_weights")
        close(weights, w64, tolerance(w32, w64), f"{what}: attention_weights")


def _log_differences(weights, shift):
    """log w_ij - log w_i0 over the last n x n block of (1, heads, shift + n, shift + n) weights."""
    block = weights[..., shift:, shift:]
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(block)
        return logs - logs[..., :1]


def _check_shift(case, got):
    p, a = case["params"], case["arrays"]
    n, shift, heads = a["X"].shape[1], a["prefix"].shape[1], p["num_heads"]
    weights_X = got.floats("weights_X", (1, heads, n, n), "attention_weights for X")
    weights_Y = got.floats("weights_Y", (1, heads, shift + n, shift + n),
                           f"attention_weights for X after {shift} other tokens")
    expect(bool((weights_X > 0).all()) and bool((weights_Y > 0).all()),
            "with no mask every attention weight should be positive (a softmax over all keys)")
    expect(float(np.ptp(weights_X, axis=-1).max()) > 1e-4,
            "the attention weights for X are the same for every key: they should depend on the tokens")
    moved = _log_differences(weights_Y, shift)
    still = _log_differences(weights_X, 0)
    # Tolerance from the reference's own float32 error on the same statistic (at least 1e-4).
    Y = np.concatenate([a["prefix"], a["X"]], axis=1)
    own = 0.0
    for dtype in (torch.float32,):
        module = _reference_attention(p, a, dtype)
        with torch.no_grad():
            module(as_tensor(a["X"], dtype), as_tensor(a["X"], dtype), as_tensor(a["X"], dtype))
            ref_X = module.attention_weights.double().numpy()
            module(as_tensor(Y, dtype), as_tensor(Y, dtype), as_tensor(Y, dtype))
            ref_Y = module.attention_weights.double().numpy()
        own = float(np.abs(_log_differences(ref_Y, shift) - _log_differences(ref_X, 0)).max())
    close(moved, still, max(1e-4, 8.0 * own),
           f"log-weight differences between tokens of X, before and after shifting X by {shift} positions "
           f"(relative logits must depend on j - i only)")


# ---------------------------------------------------------------------------------------------------
# Problem set 2: skew

def _lower(L):
    return np.tril(np.ones((L, L), dtype=bool))


def _skew_output(got, key, X, what):
    """skew's result of X's shape, finite on and below the diagonal (above it anything goes)."""
    out = got.floats(key, X.shape, what, finite=False)
    expect(bool(np.isfinite(out[..., _lower(X.shape[-1])]).all()), f"{what} contains NaN or inf")
    return out


def _check_skew_shape(case, got):
    X = case["arrays"]["X"]
    _skew_output(got, "output_X", X, f"skew(X) for X of shape {shape_text(X.shape)}")


def _check_skew_values(case, got):
    for key, X in sorted(case["arrays"].items()):
        L = X.shape[-1]
        what = f"skew(X) on and below the diagonal, X of shape {shape_text(X.shape)}" + \
            (" (the exercise's example)" if key == "example" else "")
        out = _skew_output(got, f"output_{key}", X, what)
        want = reference_skew(as_tensor(as32(X))).numpy()
        lower = np.broadcast_to(_lower(L), X.shape)
        equal(np.where(lower, out, 0.0), np.where(lower, want, 0.0), what)


def _check_skew_unchanged(case, got):
    X = case["arrays"]["X"]
    _skew_output(got, "output", X, f"skew(X) for X of shape {shape_text(X.shape)}")
    after = got.floats("input_after", X.shape, "X after calling skew(X)", finite=False)
    equal(after, as32(X), "X after calling skew(X) (skew must not modify its input)")


def _check_skew_float64(case, got):
    X = case["arrays"]["X"]
    what = f"skew of a float64 tensor of shape {shape_text(X.shape)}"
    out = got.native("output_X", X.shape, what)
    expect(out.dtype == np.float64, f"skew of a float64 tensor should be float64, got {out.dtype}")
    _skew_output(got, "output_X", X, what)


# ---------------------------------------------------------------------------------------------------
# Problem set 2: causal relative attention, naive and skewed

_NAMES = {"naive": "causal_relative_attention_naive", "skewed": "causal_relative_attention"}


def _causal_shapes(arrays, suffix=""):
    batch, L, _ = arrays[f"queries{suffix}"].shape
    return (batch, L, arrays[f"values{suffix}"].shape[2]), (batch, L, L)


def _check_causal_shapes(case, got):
    output_shape, weights_shape = _causal_shapes(case["arrays"])
    for version in ("naive", "skewed"):
        got.floats(f"{version}_output", output_shape, f"{_NAMES[version]}: output")
        got.floats(f"{version}_weights", weights_shape, f"{_NAMES[version]}: weights")


def _check_causal_mask(case, got):
    output_shape, weights_shape = _causal_shapes(case["arrays"])
    weights = got.floats("skewed_weights", weights_shape, f"{_NAMES['skewed']}: weights")
    L = weights_shape[-1]
    above = ~_lower(L)
    expect(bool((weights[:, above] == 0).all()), "query i must not see keys j > i: mask them before the softmax")
    close(weights.sum(axis=-1), np.ones(weights_shape[:-1]), 1e-5, "the row sums of the weights")


def _check_causal_agree(case, got):
    a = case["arrays"]
    output_shape, weights_shape = _causal_shapes(a)
    got_ = {key: got.floats(key, shape, f"{_NAMES[key.split('_')[0]]}: {key.split('_')[1]}")
            for key, shape in (("naive_output", output_shape), ("naive_weights", weights_shape),
                               ("skewed_output", output_shape), ("skewed_weights", weights_shape))}
    close(got_["skewed_weights"], got_["naive_weights"], 1e-5, "skewed weights vs naive weights")
    close(got_["skewed_output"], got_["naive_output"], 1e-5, "skewed output vs naive output")
    # Anchor the agreement to the grader's inputs: the weights are a distribution over keys and the
    # output is their average of the given values (what both versions must share).
    weights = got_["skewed_weights"]
    close(weights.sum(axis=-1), np.ones(weights_shape[:-1]), 1e-5, "the row sums of the weights")
    expect(bool((weights[:, _lower(weights_shape[-1])] > 0).all()),
            "a softmax over the keys j <= i gives each of them a positive weight; some got 0 or less")
    want = weights @ as32(a["values"])
    close(got_["skewed_output"], want, scaled(want, 1e-5), "the output (should be weights @ values)")


def _causal_reference(arrays, suffix=""):
    """((out64, w64), (out32, w32)) of the float64 reference on float64 and float32 inputs."""
    inputs = [arrays[f"{key}{suffix}"] for key in ("queries", "keys", "values", "rel_k")]
    results = []
    for dtype in (torch.float64, torch.float32):
        with torch.no_grad():
            out, weights = reference_causal(*[as_tensor(x, dtype) for x in inputs])
        results.append((out.double().numpy(), weights.double().numpy()))
    return results


def _check_causal_parity(case, got):
    a, version = case["arrays"], case["version"]
    for L in case["params"]["lengths"]:
        output_shape, weights_shape = _causal_shapes(a, f"_{L}")
        (out64, w64), (out32, w32) = _causal_reference(a, f"_{L}")
        weights = got.floats(f"weights_{L}", weights_shape, f"{_NAMES[version]}: weights, L = {L}")
        close(weights, w64, tolerance(w32, w64), f"{_NAMES[version]}: weights, L = {L}")
        out = got.floats(f"output_{L}", output_shape, f"{_NAMES[version]}: output, L = {L}")
        close(out, out64, tolerance(out32, out64), f"{_NAMES[version]}: output, L = {L}")


def _memory_reference_rows(arrays, rows, dtype):
    """Output and weight rows of causal attention with E rows all equal, computed one query at a time."""
    queries, keys, values = (np.asarray(arrays[k][0], dtype=dtype) for k in ("queries", "keys", "values"))
    row = np.asarray(arrays["rel_k_row"], dtype=dtype)
    L, d = queries.shape
    outputs, weights = np.zeros((len(rows), values.shape[1])), np.zeros((len(rows), L))
    for r, i in enumerate(rows):
        q = queries[i]
        scores = (keys[:i + 1] @ q + q @ row) / dtype(math.sqrt(d))                     # (i + 1,)
        scores = np.exp(scores - scores.max())
        w = scores / scores.sum()
        weights[r, :i + 1] = w
        outputs[r] = w @ values[:i + 1]
    return outputs, weights


def _check_memory(case, got):
    p, a = case["params"], case["arrays"]
    L, d = p["length"], p["head_dim"]
    rows = [int(i) for i in a["rows"]]
    shapes = got.native("shapes", (2, 3), "the shapes of output and weights")
    expect(shapes.dtype.kind in "iu" and shapes.tolist() == [[1, L, d], [1, L, L]],
            f"at L = {L}, head_dim = {d}: output should have shape (1, {L}, {d}) and weights (1, {L}, {L}), "
            f"got {shapes.tolist() if shapes.dtype.kind in 'iu' else 'something else'}")
    out = got.floats("output_rows", (len(rows), d), f"output rows at L = {L}")
    weights = got.floats("weight_rows", (len(rows), L), f"weight rows at L = {L}")
    out64, w64 = _memory_reference_rows(a, rows, np.float64)
    out32, w32 = _memory_reference_rows(a, rows, np.float32)
    what = f"at L = {L} with every row of rel_k equal (the relative term is then the same for every key)"
    close(weights, w64, tolerance(w32, w64), f"weights of queries {rows} {what}")
    close(out, out64, tolerance(out32, out64), f"output of queries {rows} {what}")


_MEMORY_HINT = (f"(at L = {MEMORY_LENGTH}, an (L, L, head_dim) float32 tensor of gathered rows takes "
                f"{MEMORY_LENGTH ** 2 * MEMORY_HEAD_DIM * 4 / 2 ** 30:.0f} GiB, more than the grader allows; compute "
                f"the relative term as skew(queries @ rel_k.T))")


CHECKS = [
    Spec("test_index", "index_dtype", "returns an int64 tensor of shape (num_queries, num_keys)", 0.5,
         _check_index_dtype,
         kind="structure"),
    Spec("test_index", "index_example", "equals the exercise's example (4, 6, 2) and random rectangular "
                                        "cases", 1, _check_index_values),
    Spec("test_index", "index_cases", "Toeplitz: constant along every diagonal, and equal to k on the main "
                                      "diagonal", 0.5, _check_toeplitz,
         key="index_toeplitz",
         kind="property", hidden=True),
    Spec("test_index", "index_cases", "saturation: 0 where j - i <= -k and 2k where j - i >= k", 0.5,
         _check_saturation, key="index_saturation",
         kind="property", hidden=True),
    Spec("test_index", "index_cases", "every entry equals clip(j - i, -k, k) + k, as int64, for square and "
                                      "rectangular shapes", 0.5, _check_index_int64,
         key="index_int64",
         hidden=True),
    Spec("test_rel_attention", "attn_tables", "rel_k and rel_v hold 2 * max_distance + 1 rows of head_dim "
                                              "values", 0.5, _check_tables,
         kind="structure"),
    Spec("test_rel_attention", "attn_self_shape", "self-attention: the output has shape (batch, q, "
                                                  "num_hiddens)", 0.5, _check_output_shape,
         kind="structure"),
    Spec("test_rel_attention", "attn_cross_shape", "cross-attention (q != k): the output has shape (batch, q, "
                                                   "num_hiddens)", 0.5, _check_output_shape,
         kind="structure"),
    Spec("test_rel_attention", "attn_weights_shape", "attention_weights has shape (batch, num_heads, q, k) and "
                                                     "rows sum to 1", 0.5, _check_weights_rows,
         kind="structure"),
    Spec("test_rel_attention", "attn_mask_batch", "with valid_lens of shape (batch,), keys beyond the valid "
                                                  "length get weight exactly 0", 0.5, _check_masked_zero,
         kind="property"),
    Spec("test_rel_attention", "attn_self_parity", "self-attention: the attention weights equal the "
                                                   "reference's with the same parameters (4 heads, k = 3, "
                                                   "length 9)", 0.5,
         _check_attention_parity, (("what", "self-attention"), ("compare", "weights")),
         key="attn_self_weights",
         hidden=True),
    Spec("test_rel_attention", "attn_self_parity", "self-attention: the output equals the reference's with "
                                                   "the same parameters (4 heads, k = 3, length 9)", 1,
         _check_attention_parity, (("what", "self-attention"), ("compare", "output")),
         hidden=True),
    Spec("test_rel_attention", "attn_cross_parity", "cross-attention (5 queries, 11 keys, bias=True) with "
                                                    "valid_lens of shape (batch, q) equals the reference", 1.5,
         _check_attention_parity, (("what", "cross-attention"),),
         hidden=True),
    Spec("test_rel_attention", "attn_zero_distance", "max_distance = 0 is plain multi-head attention, outputs "
                                                     "shifted by W_o applied to rel_v[0]", 1,
         _check_attention_parity, (("what", "max_distance = 0"),),
         hidden=True),
    Spec("test_rel_attention", "attn_shift", "relative logits do not change when the whole context is "
                                             "shifted", 1, _check_shift,
         kind="property", hidden=True),
    Spec("test_rel_attention", "attn_mask_rows", "keys beyond valid_lens of shape (batch, q) get weight "
                                                 "exactly 0", 0.5, _check_masked_zero,
         kind="property", hidden=True),
    Spec("test_skew", "skew_shape", "keeps the shape (batch, heads, L, L)", 0.5, _check_skew_shape,
         kind="structure"),
    Spec("test_skew", "skew_example", "L = 4: S[i, j] = X[i, 3 - i + j] for j <= i (the exercise's example "
                                      "and a random X)", 1, _check_skew_values),
    Spec("test_skew", "skew_gather", "equals the gather X[..., i, L-1-i+j] exactly for every j <= i "
                                     "(L = 1, 2, 7, 32)", 1.5, _check_skew_values,
         hidden=True),
    Spec("test_skew", "skew_unchanged", "leaves its input unchanged", 0.5, _check_skew_unchanged,
         kind="structure", hidden=True),
    Spec("test_skew", "skew_float64", "keeps the dtype and all leading dimensions: float64 (batch, heads, L, "
                                      "L)", 0.5, _check_skew_float64,
         kind="structure", hidden=True),
    Spec("test_causal", "causal_shapes", "both versions return output (batch, L, d_v) and weights "
                                         "(batch, L, L)", 0.5, _check_causal_shapes,
         kind="structure"),
    Spec("test_causal", "causal_skewed_mask", "causal_relative_attention: weights are exactly 0 above the "
                                              "diagonal and rows sum to 1", 0.5, _check_causal_mask,
         kind="structure"),
    Spec("test_causal", "causal_agree", "causal_relative_attention (skewed) equals "
                                        "causal_relative_attention_naive (L = 6)", 1, _check_causal_agree,
         kind="property"),
    Spec("test_causal", "causal_naive_parity", "causal_relative_attention_naive equals the float64 "
                                               "reference (L = 1, 6, 17)", 1, _check_causal_parity,
         (("version", "naive"),),
         hidden=True),
    Spec("test_causal", "causal_skewed_parity", "causal_relative_attention (skewed) equals the float64 "
                                                "reference (L = 1, 6, 17)", 1, _check_causal_parity,
         (("version", "skewed"),),
         hidden=True),
    Spec("test_causal", "causal_memory", f"memory: at L = {MEMORY_LENGTH}, head_dim = {MEMORY_HEAD_DIM} the "
                                         f"skewed version runs under the grader's memory cap and gives the "
                                         f"reference's rows", 1, _check_memory, hint=_MEMORY_HINT,
         hidden=True),
]

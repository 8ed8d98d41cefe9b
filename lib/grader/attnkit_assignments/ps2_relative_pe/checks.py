"""Checks of problem set 2, decided by the trusted grader (never staged into a sandbox).

``CHECKS`` declares every check of the assignment once (see problem set 1's ``checks.py`` for the fields);
the inputs are drawn by ``inputs.make_inputs``.
"""

import math

import numpy as np
import torch

from attnkit_grader.authoring import (N_, Spec, as32, as_tensor, close, copy_linears, equal, expect, fmt, scaled,
                                       sentence, shape_text, tolerance)

from .checks_causal import (_check_causal_agree, _check_causal_mask, _check_causal_parity, _check_causal_shapes,
                            _check_causal_worked, _check_memory)
from .inputs import MEMORY_HEAD_DIM, MEMORY_LENGTH, make_inputs
from .reference import RelativeMultiHeadAttention as ReferenceAttention
from .reference import relative_position_index as reference_index
from .reference import skew as reference_skew

__all__ = ["CHECKS", "MEMORY_HEAD_DIM", "MEMORY_LENGTH", "make_inputs"]


# ---------------------------------------------------------------------------------------------------
# Problem set 2: relative_position_index

def _index_case(got, index, q, n, k, integer=False, what=None):
    what = what or sentence("relative_position_index({q}, {n}, {k})", q=q, n=n, k=k)
    got_index = got.native(f"index_{index}", (q, n), what)
    if integer:
        expect(got_index.dtype.kind in "iu",
                                       "{what} should hold integers, got dtype {dtype}", what=what,
                                       dtype=got_index.dtype)
    return what, got_index.astype(np.float64) if got_index.dtype.kind == "f" else got_index


def _reference_index(q, n, k):
    return reference_index(q, n, k).numpy()


def _check_index_dtype(case, got):
    q, n, k = case["params"]["cases"][0]
    what = sentence("relative_position_index({q}, {n}, {k})", q=q, n=n, k=k)
    value = got.native("index_0", (q, n), what)
    expect(value.dtype == np.int64, "the index must be int64 (it selects table rows), got {dtype}", dtype=value.dtype)


def _check_index_values(case, got):
    for index, (q, n, k) in enumerate(case["params"]["cases"]):
        what, value = _index_case(got, index, q, n, k, integer=True)
        equal(value, _reference_index(q, n, k), what)


def _check_toeplitz(case, got):
    for index, (q, n, k) in enumerate(case["params"]["cases"]):
        what, value = _index_case(got, index, q, n, k)
        if value.size == 0:                      # zero queries or keys: the shape is all there is to check
            continue
        expect(bool((value[1:, 1:] == value[:-1, :-1]).all()),
                "{what} is not constant along diagonals: entry [i, j] must depend on j - i only", what=what)
        diagonal = np.diagonal(value)
        expect(bool((diagonal == k).all()),
                "{what} has {values} on the diagonal, expected {k} (i = j is distance 0, shifted by k)",
                what=what, values=[fmt(x) for x in diagonal], k=k)
        expect(np.unique(value).size > 1 or np.unique(_reference_index(q, n, k)).size == 1,
                "{what} holds the same number everywhere; entries off the diagonal belong to other distances",
                what=what)


def _check_saturation(case, got):
    for index, (q, n, k) in enumerate(case["params"]["cases"]):
        what, value = _index_case(got, index, q, n, k)
        distance = np.arange(n)[None, :] - np.arange(q)[:, None]           # (q, n): j - i
        expect(bool((value[distance >= k] == 2 * k).all()),
                "{what}: entries with j - i >= {k} should all be {top} (clip at +k, then add k); check the sign of j "
                "- i and the clipping", what=what, k=k, top=2 * k)
        expect(bool((value[distance <= -k] == 0).all()),
                "{what}: entries with j - i <= -{k} should all be 0", what=what, k=k)


def _edge_case(q, n, k):
    """Why (q, n, k) is an edge case of relative_position_index, in words."""
    if q == 0:
        return sentence("no query")
    if n == 0:
        return sentence("no key")
    if k == 0:
        return sentence("max_distance = 0")
    if q == 1:
        return sentence("one query")
    return sentence("max_distance beyond every distance")


def _check_index_edge(case, got):
    """The edges of the sizes: no query or no key (an empty index of shape (q, n) and an integer dtype), k = 0,
    one query, k beyond every distance; each failure says which edge."""
    for index, (q, n, k) in enumerate(case["params"]["cases"]):
        what = sentence("relative_position_index({q}, {n}, {k}) (an edge case: {edge})", q=q, n=n, k=k,
                        edge=_edge_case(q, n, k))
        _, value = _index_case(got, index, q, n, k, integer=True, what=what)
        equal(value, _reference_index(q, n, k), what)


# ---------------------------------------------------------------------------------------------------
# Problem set 2: RelativeMultiHeadAttention

_LINEARS = ("W_q", "W_k", "W_v", "W_o")


def _reference_attention(params, arrays, dtype):
    """The reference module with the probe's weights, in ``dtype``, eval mode."""
    module = ReferenceAttention(params["num_hiddens"], params["num_heads"], 0.0, params["max_distance"],
                                bias=params.get("bias", False)).to(dtype).eval()
    with torch.no_grad():
        copy_linears(module, arrays, _LINEARS, dtype)
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
        found = got.native(f"{name}_shape", None, sentence("the shape of {name}", name=name))
        found = tuple(int(s) for s in found.reshape(-1)) if found.dtype.kind in "iu" and found.ndim == 1 else None
        expect(found == tuple(shape),
                "{name} should hold 2 * max_distance + 1 = {rows} rows of head_dim = {head_dim} values "
                "(max_distance={max_distance}, num_hiddens={num_hiddens}, num_heads={num_heads}), got shape {found}",
                name=name, rows=shape[0], head_dim=shape[1], max_distance=p['max_distance'],
                num_hiddens=p['num_hiddens'], num_heads=p['num_heads'],
                found=shape_text(found) if found is not None else sentence("unknown"))
        table = got.floats(name, shape, sentence("{name} read back after loading values into it", name=name))
        close(table, a[name], scaled(a[name], 1e-6), sentence("{name} read back after loading values into it",
                                                              name=name))


def _check_output_shape(case, got):
    output_shape, _ = _attention_shapes(case)
    a = case["arrays"]
    template = N_("the output of self-attention with {queries} queries and {keys} keys") \
        if a["queries"].shape == a["keys"].shape and (a["queries"] == a["keys"]).all() \
        else N_("the output of cross-attention with {queries} queries and {keys} keys")
    got.floats("output", output_shape, sentence(template, queries=a["queries"].shape[1], keys=a["keys"].shape[1]))


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
            "with valid_lens = {shown}, masked keys got weights up to {leaked:.3g}; they must be exactly 0 (fill "
            "their scores with -inf before the softmax, or use attnkit.masked_softmax)",
            shown=shown, leaked=leaked.max() if leaked.size else 0)
    # Evidence that the mask is applied to a softmax, not to nothing: the valid keys' weights sum to 1.
    close(weights.sum(axis=-1), np.ones(weights_shape[:-1]), 1e-5,
           sentence("with valid_lens = {shown}, the row sums of attention_weights (the valid keys share all the "
                    "weight)", shown=shown))
    # The property must hold for the output itself, not only for the weights reported in .attention_weights:
    # other contents in the keys and values every query masks must leave the output exactly as it was.
    output = got.floats("output", weights_shape[:1] + (weights_shape[2], case["params"]["num_hiddens"]),
                        "the output")
    other = got.floats("output_other_masked", output.shape, "the output with other contents in the masked keys")
    close(other, output, scaled(output, 1e-6),
           sentence("with valid_lens = {shown}, the output after changing the keys and values beyond the valid "
                    "lengths (it must not change: the output has to ignore masked keys, whatever attention_weights "
                    "says)", shown=shown))


def _check_attention_parity(case, got):
    """The output and the attention weights equal the reference's; only one of them when the case says
    ``compare`` "output" or "weights" (the weights alone earn credit for logits and softmax done right
    even when the values are combined wrongly afterwards)."""
    p, a = case["params"], case["arrays"]
    what, compare = case["what"], case.get("compare", "both")
    what = sentence(what)                       # the Spec's own words (the catalog holds them, from the manifest)
    output_shape, weights_shape = _attention_shapes(case)
    (out64, w64), (out32, w32) = _run_reference(p, a, a["queries"], a["keys"], a["values"], a.get("valid_lens"))
    if compare != "weights":
        out = got.floats("output", output_shape, sentence("{what}: output", what=what))
        close(out, out64, tolerance(out32, out64), sentence("{what}: output", what=what))
    if compare != "output":
        weights = got.floats("attention_weights", weights_shape, sentence("{what}: attention_weights", what=what))
        close(weights, w64, tolerance(w32, w64), sentence("{what}: attention_weights", what=what))


def _reference_gradients(params, arrays):
    """{name: (grad64, grad32)} of sum(output * G) for rel_k and rel_v, the reference on float64/float32 inputs."""
    grads = {}
    for dtype in (torch.float64, torch.float32):
        module = _reference_attention(params, arrays, dtype)
        inputs = [as_tensor(arrays[key], dtype) for key in ("queries", "keys", "values")]
        with torch.enable_grad():
            (module(*inputs) * as_tensor(arrays["G"], dtype)).sum().backward()
        for name in ("rel_k", "rel_v"):
            grads.setdefault(name, []).append(getattr(module, name).grad.double().numpy())
    return grads


def _check_gradient(case, got):
    p, a = case["params"], case["arrays"]
    for name, (grad64, grad32) in _reference_gradients(p, a).items():
        is_parameter = got.integer(f"{name}_is_parameter", sentence("whether {name} is a parameter", name=name))
        expect(is_parameter == 1,
                "{name} is not among the module's parameters (a buffer or a plain tensor): the optimizer would never "
                "update it; make it an nn.Parameter or an nn.Embedding", name=name)
        grad = got.floats(f"{name}_grad", grad64.shape, sentence("the gradient of {name}", name=name))
        expect(np.abs(grad).max() > 0, "no gradient reached {name}: use it in forward as it is, not through "
                                       ".detach() or .data", name=name)
        close(grad, grad64, max(tolerance(grad32, grad64), scaled(grad64, 1e-5)),
               sentence("the gradient of sum(output * G) with respect to {name}", name=name))


def _check_defaults(case, got):
    has_bias = got.native("has_bias", (4,), "which linear layers have a bias")
    with_bias = [name for name, flag in zip(_LINEARS, has_bias.tolist()) if flag]
    expect(not with_bias, "built without the bias argument, {join} have a bias: the exercise fixes bias=False as the "
                          "default", join=', '.join(with_bias))


def _check_dropout(case, got):
    """Dropout's own behaviour, measured against the submission's own eval output (the values are checked
    elsewhere)."""
    p = case["params"]
    output_shape, _ = _attention_shapes(case)
    samples = p["samples"]
    eval_output = got.floats("eval_output", output_shape, "the output in eval mode with dropout=0.5")
    train = got.floats("train_outputs", (samples, *output_shape), "the outputs in train mode with dropout=0.5")
    expect(float(np.abs(train - eval_output).max()) > 1e-6,
            "dropout=0.5 changed nothing in train mode: apply the module's nn.Dropout to the attention weights")
    zeros = float((train == 0).mean())
    expect(zeros < 0.01, "{percent:.0f}% of the outputs are exactly 0 in train mode: dropout acts on the output; "
                         "apply it to the attention weights, before they multiply the values", percent=100 * zeros)
    # Dropout keeps the expected value of the weights and everything after them is linear, so the
    # average over the samples approaches the eval output: within a few standard errors.
    error = np.abs(train.mean(axis=0) - eval_output)
    allowed = 6.0 * train.std(axis=0) / math.sqrt(samples) + scaled(eval_output, 1e-5)
    worst = int(np.argmax(error - allowed))
    expect(bool((error <= allowed).all()),
            "over {samples} passes in train mode the average output is off from the eval output by {error:.3g} "
            "(allowed {allowed:.3g}): dropout must act on the attention weights only, where it keeps their expected "
            "value", samples=samples, error=error.flat[worst], allowed=allowed.flat[worst])


def _log_differences(weights, shift):
    """log w_ij - log w_i0 over the last n x n block of (1, heads, shift + n, shift + n) weights."""
    block = weights[..., shift:, shift:]
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(block)
        return logs - logs[..., :1]


def _change_from_weights(params, arrays, weights, change, j):
    """How the output should move when value vector j changes by ``change`` (num_hiddens,), keys and
    queries unchanged: W_o applied to each head's weight on key j times W_v's change (no bias). It depends
    on the weights alone, not on how the relative terms were computed."""
    heads = params["num_heads"]
    hidden = change.shape[0]
    moved = (arrays["W_v.weight"] @ change).reshape(heads, hidden // heads)           # (heads, head_dim)
    per_head = weights[0, :, :, j][:, :, None] * moved[:, None, :]                      # (heads, n, head_dim)
    return (per_head.transpose(1, 0, 2).reshape(1, weights.shape[2], hidden)) @ arrays["W_o.weight"].T


def _check_shift(case, got):
    p, a = case["params"], case["arrays"]
    n, shift, heads = a["X"].shape[1], a["prefix"].shape[1], p["num_heads"]
    weights_X = got.floats("weights_X", (1, heads, n, n), "attention_weights for X")
    output_X = got.floats("output_X", (1, n, p["num_hiddens"]), "the output for X")
    output_other = got.floats("output_other", output_X.shape, "the output for X with one value vector changed")
    j = p["changed"]
    change = as32(a["other_value"]) - as32(a["X"])[0, j]
    expected = _change_from_weights(p, a, weights_X, change, j)
    close(output_other - output_X, expected, scaled(expected, 1e-4),
           sentence("how the output moves when value {j} changes, against what the attention_weights you keep say "
                    "(the property is checked on those weights, so they must be the ones your output used)", j=j))
    weights_Y = got.floats("weights_Y", (1, heads, shift + n, shift + n),
                           sentence("attention_weights for X after {shift} other tokens", shift=shift))
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
           sentence("log-weight differences between tokens of X, before and after shifting X by {shift} positions "
                    "(relative logits must depend on j - i only)", shift=shift))


# ---------------------------------------------------------------------------------------------------
# Problem set 2: skew

def _lower(L):
    return np.tril(np.ones((L, L), dtype=bool))


def _skew_output(got, key, X, what):
    """skew's result of X's shape, finite on and below the diagonal (above it anything goes)."""
    out = got.floats(key, X.shape, what, finite=False)
    expect(bool(np.isfinite(out[..., _lower(X.shape[-1])]).all()), "{what} contains NaN or inf", what=what)
    return out


def _check_skew_shape(case, got):
    X = case["arrays"]["X"]
    _skew_output(got, "output_X", X, sentence("skew(X) for X of shape {shape}", shape=shape_text(X.shape)))


def _check_skew_values(case, got):
    for key, X in sorted(case["arrays"].items(), key=lambda item: (-item[1].size, item[0])):   # largest first
        L = X.shape[-1]
        template = {"example": N_("skew(X) on and below the diagonal, X of shape {shape} (the exercise's example)"),
                    "one": N_("skew(X), X of shape {shape} (an edge case: L = 1, where S = X)")}.get(
                        key, N_("skew(X) on and below the diagonal, X of shape {shape}"))
        what = sentence(template, shape=shape_text(X.shape))
        out = _skew_output(got, f"output_{key}", X, what)
        want = reference_skew(as_tensor(as32(X))).numpy()
        lower = np.broadcast_to(_lower(L), X.shape)
        equal(np.where(lower, out, 0.0), np.where(lower, want, 0.0), what)


def _check_skew_unchanged(case, got):
    X = case["arrays"]["X"]
    _skew_output(got, "output", X, sentence("skew(X) for X of shape {shape}", shape=shape_text(X.shape)))
    after = got.floats("input_after", X.shape, "X after calling skew(X)", finite=False)
    equal(after, as32(X), "X after calling skew(X) (skew must not modify its input)")


def _check_skew_float64(case, got):
    X = case["arrays"]["X"]
    what = sentence("skew of a float64 tensor of shape {shape}", shape=shape_text(X.shape))
    out = got.native("output_X", X.shape, what)
    expect(out.dtype == np.float64, "skew of a float64 tensor should be float64, got {dtype}", dtype=out.dtype)
    _skew_output(got, "output_X", X, what)


_MEMORY_HINT = (sentence("(at L = {length}, an (L, L, head_dim) float32 tensor of gathered rows takes {gib:.0f} GiB, "
                         "more than the grader allows; compute the relative term as skew(queries @ rel_k.T))",
                         length=MEMORY_LENGTH, gib=MEMORY_LENGTH ** 2 * MEMORY_HEAD_DIM * 4 / 2 ** 30))


CHECKS = [
    Spec("test_index", "index_dtype", "returns an int64 tensor of shape (num_queries, num_keys)", 0.5,
         _check_index_dtype,
         kind="structure"),
    Spec("test_index", "index_example", "equals the exercise's example (4, 6, 2) and random rectangular "
                                        "cases", 1, _check_index_values),
    Spec("test_index", "index_edge", "edge cases: no query, no key, max_distance = 0, one query, max_distance beyond "
                                     "every distance", 0.5, _check_index_edge),
    Spec("test_index", "index_cases", "Toeplitz: constant along every diagonal, and equal to k on the main "
                                      "diagonal", 0.5, _check_toeplitz,
         key="index_toeplitz",
         kind="property", hidden=True),
    Spec("test_index", "index_cases", "saturation: 0 where j - i <= -k and 2k where j - i >= k", 0.5,
         _check_saturation, key="index_saturation",
         kind="property", hidden=True),
    Spec("test_rel_attention", "attn_tables", "rel_k and rel_v hold 2 * max_distance + 1 rows of head_dim "
                                              "values", 0.5, _check_tables,
         kind="structure"),
    Spec("test_rel_attention", "attn_self_shape", "self-attention: the output has shape (batch, q, "
                                                  "num_hiddens)", 0.25, _check_output_shape,
         kind="structure"),
    Spec("test_rel_attention", "attn_cross_shape", "cross-attention (q != k): the output has shape (batch, q, "
                                                   "num_hiddens)", 0.25, _check_output_shape,
         kind="structure"),
    Spec("test_rel_attention", "attn_weights_shape", "attention_weights has shape (batch, num_heads, q, k) and "
                                                     "rows sum to 1", 0.25, _check_weights_rows,
         kind="structure"),
    Spec("test_rel_attention", "attn_defaults", "the linear layers have no bias by default (bias=False)", 0.25,
         _check_defaults, kind="structure"),
    Spec("test_rel_attention", "attn_mask_batch", "with valid_lens of shape (batch,), keys beyond the valid "
                                                  "length get weight exactly 0", 0.25, _check_masked_zero,
         kind="property"),
    Spec("test_rel_attention", "attn_worked", "the exercise's 2-head case (max_distance = 1, valid_lens of shape "
                                              "(batch, q)): output and attention weights", 1,
         _check_attention_parity, (("what", "2 heads, max_distance = 1"),)),
    Spec("test_rel_attention", "attn_empty_rows", "a query with valid length 0 gets all-zero weights, not NaN", 0.25,
         _check_attention_parity, (("what", "valid_lens with zeros"),)),
    Spec("test_rel_attention", "attn_zero_distance", "max_distance = 0 (an edge case) is plain multi-head attention, "
                                                     "outputs shifted by W_o applied to rel_v[0]", 0.5,
         _check_attention_parity, (("what", "max_distance = 0 (an edge case)"),)),
    Spec("test_rel_attention", "attn_one_head", "one head (num_heads = 1, an edge case) equals the reference", 0.5,
         _check_attention_parity, (("what", "one head (an edge case)"),)),
    Spec("test_rel_attention", "attn_gradient", "rel_k and rel_v are parameters, and the gradient of the output "
                                                "reaches both", 0.5, _check_gradient),
    Spec("test_rel_attention", "attn_dropout", "dropout acts on the attention weights in train mode (not on the "
                                               "output), never in eval mode", 0.5, _check_dropout,
         kind="property"),
    Spec("test_rel_attention", "attn_self_parity", "self-attention: the attention weights equal the "
                                                   "reference's with the same parameters (4 heads, k = 3, "
                                                   "length 9)", 0.5,
         _check_attention_parity, (("what", "self-attention"), ("compare", "weights")),
         key="attn_self_weights",
         hidden=True),
    Spec("test_rel_attention", "attn_self_parity", "self-attention: the output equals the reference's with "
                                                   "the same parameters (4 heads, k = 3, length 9)", 0.75,
         _check_attention_parity, (("what", "self-attention"), ("compare", "output")),
         hidden=True),
    Spec("test_rel_attention", "attn_cross_parity", "cross-attention (5 queries, 11 keys, bias=True) with "
                                                    "valid_lens of shape (batch, q) equals the reference", 1,
         _check_attention_parity, (("what", "cross-attention"),),
         hidden=True),
    Spec("test_rel_attention", "attn_shift", "relative logits do not change when the whole context is "
                                             "shifted", 0.5, _check_shift,
         kind="property", hidden=True),
    Spec("test_rel_attention", "attn_mask_rows", "keys beyond valid_lens of shape (batch, q) get weight "
                                                 "exactly 0", 0.25, _check_masked_zero,
         kind="property", hidden=True),
    Spec("test_skew", "skew_shape", "keeps the shape (batch, heads, L, L)", 0.5, _check_skew_shape,
         kind="structure"),
    Spec("test_skew", "skew_example", "L = 4: S[i, j] = X[i, 3 - i + j] for j <= i (the exercise's example "
                                      "and a random X), and L = 1", 1, _check_skew_values),
    Spec("test_skew", "skew_gather", "equals the gather X[..., i, L-1-i+j] exactly for every j <= i "
                                     "(L = 1, 2, 7, 32)", 1.5, _check_skew_values,
         hidden=True),
    Spec("test_skew", "skew_unchanged", "leaves its input unchanged", 0.5, _check_skew_unchanged,
         kind="structure", hidden=True),
    Spec("test_skew", "skew_float64", "keeps the dtype and all leading dimensions: float64 (batch, heads, L, "
                                      "L)", 0.5, _check_skew_float64,
         kind="structure"),
    Spec("test_causal", "causal_shapes", "both versions return output (batch, L, d_v) and weights "
                                         "(batch, L, L)", 0.5, _check_causal_shapes,
         kind="structure"),
    Spec("test_causal", "causal_skewed_mask", "causal_relative_attention: weights are exactly 0 above the "
                                              "diagonal and rows sum to 1", 0.5, _check_causal_mask,
         kind="structure"),
    Spec("test_causal", "causal_agree", "causal_relative_attention (skewed) equals "
                                        "causal_relative_attention_naive (L = 6)", 0.5, _check_causal_agree,
         kind="property"),
    Spec("test_causal", "causal_worked", "both versions on a small case with values wider than the queries "
                                         "(L = 4, head_dim = 3, value width 5), and L = 1", 1, _check_causal_worked),
    Spec("test_causal", "causal_naive_parity", "causal_relative_attention_naive equals the float64 "
                                               "reference (L = 1, 6, 17; value width != head_dim)", 0.75,
         _check_causal_parity, (("version", "naive"),),
         hidden=True),
    Spec("test_causal", "causal_skewed_parity", "causal_relative_attention (skewed) equals the float64 "
                                                "reference (L = 1, 6, 17; value width != head_dim)", 0.75,
         _check_causal_parity, (("version", "skewed"),),
         hidden=True),
    Spec("test_causal", "causal_memory", f"memory: at L = {MEMORY_LENGTH}, head_dim = {MEMORY_HEAD_DIM} the "
                                         f"skewed version runs under the grader's memory cap and gives the "
                                         f"reference's rows", 1, _check_memory, hint=_MEMORY_HINT,
         hidden=True, diagnose="cell"),
]

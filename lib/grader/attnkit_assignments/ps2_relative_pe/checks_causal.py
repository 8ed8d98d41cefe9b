"""Checks of problem set 2's causal relative attention, naive and skewed (trusted; see checks.py)."""

import math

import numpy as np
import torch

from attnkit_grader.authoring import N_, as32, as_tensor, close, expect, scaled, sentence, tolerance

from .reference import causal_relative_attention_naive as reference_causal


def _lower(L):
    return np.tril(np.ones((L, L), dtype=bool))


_NAMES = {"naive": "causal_relative_attention_naive", "skewed": "causal_relative_attention"}


def _causal_shapes(arrays, suffix=""):
    batch, L, _ = arrays[f"queries{suffix}"].shape
    return (batch, L, arrays[f"values{suffix}"].shape[2]), (batch, L, L)


def _check_causal_shapes(case, got):
    output_shape, weights_shape = _causal_shapes(case["arrays"])
    for version in ("naive", "skewed"):
        got.floats(f"{version}_output", output_shape, sentence("{function}: output", function=_NAMES[version]))
        got.floats(f"{version}_weights", weights_shape, sentence("{function}: weights", function=_NAMES[version]))


def _check_causal_mask(case, got):
    output_shape, weights_shape = _causal_shapes(case["arrays"])
    weights = got.floats("skewed_weights", weights_shape, sentence("{function}: weights", function=_NAMES["skewed"]))
    L = weights_shape[-1]
    above = ~_lower(L)
    expect(bool((weights[:, above] == 0).all()), "query i must not see keys j > i: mask them before the softmax")
    close(weights.sum(axis=-1), np.ones(weights_shape[:-1]), 1e-5, "the row sums of the weights")


def _check_causal_agree(case, got):
    a = case["arrays"]
    output_shape, weights_shape = _causal_shapes(a)
    got_ = {key: got.floats(key, shape, sentence(_WORKED_WHAT[key.split("_")[1], ""],
                                                  function=_NAMES[key.split("_")[0]]))
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
        what = sentence("{function}: weights, L = {length}", function=_NAMES[version], length=L)
        weights = got.floats(f"weights_{L}", weights_shape, what)
        close(weights, w64, tolerance(w32, w64), what)
        what = sentence("{function}: output, L = {length}", function=_NAMES[version], length=L)
        out = got.floats(f"output_{L}", output_shape, what)
        close(out, out64, tolerance(out32, out64), what)


_WORKED_WHAT = {("weights", ""): N_("{function}: weights"), ("output", ""): N_("{function}: output"),
                ("weights", "_one"): N_("{function}: weights for L = 1 (an edge case)"),
                ("output", "_one"): N_("{function}: output for L = 1 (an edge case)")}


def _check_causal_worked(case, got):
    """Both versions on the small case, then on L = 1 (an edge case: one query, which sees only itself)."""
    a = case["arrays"]
    for suffix in ("", "_one") if "queries_one" in a else ("",):
        output_shape, weights_shape = _causal_shapes(a, suffix)
        (out64, w64), (out32, w32) = _causal_reference(a, suffix)
        for version in ("naive", "skewed"):
            for part, shape, want, own in (("weights", weights_shape, w64, w32), ("output", output_shape, out64, out32)):
                what = sentence(_WORKED_WHAT[part, suffix], function=_NAMES[version])
                close(got.floats(f"{version}_{part}{suffix}", shape, what), want, tolerance(own, want), what)


def _memory_reference_rows(arrays, rows, dtype):
    """Output and weight rows of causal relative attention, computed one query at a time: query i sees
    keys j = 0..i, whose distances j - i use the rows L - 1 - i .. L - 1 of E."""
    queries, keys, values = (np.asarray(arrays[k][0], dtype=dtype) for k in ("queries", "keys", "values"))
    E = np.asarray(arrays["rel_k"], dtype=dtype)
    L, d = queries.shape
    outputs, weights = np.zeros((len(rows), values.shape[1])), np.zeros((len(rows), L))
    for r, i in enumerate(rows):
        q = queries[i]
        scores = (keys[:i + 1] @ q + E[L - 1 - i:] @ q) / dtype(math.sqrt(d))             # (i + 1,)
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
    integers = shapes.dtype.kind in "iu"
    found = shapes.tolist() if integers else sentence("something else")
    right = integers and found == [[1, L, d], [1, L, L]]
    expect(right, "at L = {length}, head_dim = {d}: output should have shape (1, {length}, {d}) and weights "
                  "(1, {length}, {length}), got {shapes}", length=L, d=d, shapes=found)
    out = got.floats("output_rows", (len(rows), d), sentence("output rows at L = {length}", length=L))
    weights = got.floats("weight_rows", (len(rows), L), sentence("weight rows at L = {length}", length=L))
    out64, w64 = _memory_reference_rows(a, rows, np.float64)
    out32, w32 = _memory_reference_rows(a, rows, np.float32)
    what = sentence("at L = {length}", length=L)
    close(weights, w64, tolerance(w32, w64), sentence("weights of queries {rows} {what}", rows=rows, what=what))
    close(out, out64, tolerance(out32, out64), sentence("output of queries {rows} {what}", rows=rows, what=what))

"""Trusted verdicts: fresh inputs for the probes, and the checks decided on their outputs (instructors only).

Every hidden check of the graded notebooks is defined once, here and in the probes. Under plain
nbgrader the hidden part of a test cell runs the probes and this module inside the student's kernel
(``hidden.py``), where the student's code could replace the comparison functions, lie about equality
or report success itself. The sandboxed grader decides every check in its own process, which never
imports or runs student code:

1. ``make_inputs(assignment, seed)`` draws random weights, inputs and (where the bug classes allow)
   sizes for every probe in ``attnkit.grading.probes.PROBES[assignment]``, fresh for each submission:
   the student can neither choose them nor precompute the answers.
2. The sandbox runs the probes on the student's objects and sends back plain numeric arrays.
3. ``judge(assignment, inputs, outputs, probe_errors)`` recomputes what each output should be with
   the reference solutions on the same inputs (float64, and float32 to size the tolerance: 8 times
   the reference's own float32 error plus 1e-6 of the output's scale) and decides each check from
   the numbers alone, after validating their dtype and shape.

Points per check follow the notebooks' test cells (visible checks and hidden checks together), so
the total per grade cell equals the cell's points. A check passes only on numbers that satisfy it.
Most checks compare with the reference on the grader's inputs. Some test a property of the
submission's own numbers on those inputs, one that a sound but imperfect answer keeps (masked keys
get exactly 0 and the others share all the weight; logits do not change when the context shifts;
the two causal versions agree and average the given values). A few test structure only (shapes,
dtypes, one trainable parameter, the input left unchanged). Arrays with a property or a structure can
be built from the inputs without computing the exercise, by a submission in control of its sandbox, so
a passed property or structure check counts only once a comparison with the reference in the same cell
passed: every point then rests on numbers only the right computation gives (the notebooks' ``Checks``
apply the same rule). No flag the student's process reports is believed: ``pe_too_long`` ("the exception
was a ValueError" is the submission's own report) is decided and shown but worth 0 points.
"""

import math
import re
from dataclasses import dataclass

import numpy as np
import torch

from attnkit.solutions.learnable_pe import LearnablePositionalEncoding as ReferencePE
from attnkit.solutions.relative import RelativeMultiHeadAttention as ReferenceAttention
from attnkit.solutions.relative import relative_position_index as reference_index
from attnkit.solutions.skew import causal_relative_attention_naive as reference_causal
from attnkit.solutions.skew import skew as reference_skew

__all__ = ["ASSIGNMENTS", "Check", "MEMORY_HEAD_DIM", "MEMORY_LENGTH", "check_ids", "decide", "describe", "judge",
           "make_inputs", "max_points", "scores"]

ASSIGNMENTS = ("ps1_learnable_pe", "ps2_relative_pe")

# The memory probe: causal_relative_attention at this length and head_dim, batch 1, float32. The skewed
# path needs a few L x L float32 matrices (64 MiB each, a few hundred MiB at peak); the naive path's
# (L, L, head_dim) tensor of gathered rows alone is 4 GiB. The sandbox's memory cap must lie between.
MEMORY_LENGTH = 4096
MEMORY_HEAD_DIM = 64
MEMORY_ROWS = 6

_MESSAGE_LIMIT = 400
UNSUPPORTED = "right, but counts only once a comparison with the expected values in this cell passes"


@dataclass(frozen=True)
class Check:
    """One decided check: ``points`` is ``max_points`` when it passed, else 0."""

    name: str
    points: float
    max_points: float
    passed: bool
    message: str


class _Fail(Exception):
    """A check failed; the message says what to fix."""


def _fmt(x):
    x = float(x)
    if x.is_integer() and abs(x) < 1e6:
        return str(int(x))
    return f"{x:.4g}"


def _shape(shape):
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


# ---------------------------------------------------------------------------------------------------
# Reading the probe outputs: plain ndarrays of a numeric dtype and the expected shape, or the check fails

class _Outputs:
    """One probe's outputs, validated before any arithmetic: type, dtype kind, shape, finiteness."""

    def __init__(self, arrays):
        self.arrays = arrays

    def _raw(self, key, shape, what):
        value = self.arrays.get(key)
        if value is None:
            raise _Fail(f"{what}: no result came back")
        if type(value) is not np.ndarray:
            raise _Fail(f"{what}: the result is not a plain array of numbers")
        if value.dtype.kind not in "biuf":
            raise _Fail(f"{what}: the result has dtype {value.dtype}, not a real number type")
        if shape is not None and tuple(value.shape) != tuple(shape):
            raise _Fail(f"{what} should have shape {_shape(shape)}, got {_shape(value.shape)}")
        return value

    def floats(self, key, shape, what, finite=True):
        """The array as float64; NaN or inf fails the check unless ``finite`` is False."""
        value = np.array(self._raw(key, shape, what), dtype=np.float64)
        if finite and not np.isfinite(value).all():
            raise _Fail(f"{what} contains NaN or inf")
        return value

    def native(self, key, shape, what):
        """The array in the dtype it came in (for checks of the dtype itself)."""
        return np.array(self._raw(key, shape, what))

    def integer(self, key, what):
        value = self._raw(key, (), what)
        if value.dtype.kind not in "iu":
            raise _Fail(f"{what}: expected an integer")
        return int(value)


def _tolerance(ref32, ref64):
    """Allowed |student - ref64|: 8x the reference's own float32 error plus 1e-6 of the output's scale."""
    ref32, ref64 = np.asarray(ref32, dtype=np.float64), np.asarray(ref64, dtype=np.float64)
    if ref64.size == 0:
        return 1e-6
    own_error = float(np.abs(ref32 - ref64).max())
    scale = max(1.0, float(np.abs(ref64).max()))
    return 8.0 * own_error + 1e-6 * scale


def _scaled(reference, relative):
    """``relative`` times the reference's scale (at least 1): a tolerance for float32 results."""
    reference = np.asarray(reference, dtype=np.float64)
    return relative * max(1.0, float(np.abs(reference).max()) if reference.size else 1.0)


def _close(actual, expected, atol, what):
    """|actual - expected| <= atol everywhere (same shape already checked); the message shows the worst."""
    expected = np.asarray(expected, dtype=np.float64)
    if actual.size == 0:
        return
    error = np.abs(actual - expected)
    worst = float(error.max())
    if not worst <= atol:
        index = np.unravel_index(int(np.argmax(error)), error.shape)
        raise _Fail(f"{what} is off by up to {worst:.3g} (tolerance {atol:.3g}); at index "
                    f"{tuple(int(i) for i in index)}: got {_fmt(actual[index])}, expected {_fmt(expected[index])}")


def _equal(actual, expected, what):
    """Exact equality of values (same shape already checked); the message shows the first difference."""
    expected = np.asarray(expected)
    same = actual == expected
    if not same.all():
        index = tuple(int(i) for i in np.argwhere(~same)[0])
        raise _Fail(f"{what}: {int((~same).sum())} entries differ; first at index {index}: "
                    f"got {_fmt(actual[index])}, expected {_fmt(expected[index])}")


def _expect(condition, message):
    if not condition:
        raise _Fail(message)


def _as32(array):
    """The values the student's float32 code received (the probes cast the grader's arrays to float32)."""
    return np.asarray(array, dtype=np.float32).astype(np.float64)


def _t(array, dtype=torch.float64):
    return torch.from_numpy(np.array(array, dtype=np.float64)).to(dtype)


# ---------------------------------------------------------------------------------------------------
# Problem set 1: LearnablePositionalEncoding

def _reference_pe(sizes, table, X):
    """Reference outputs in eval mode: (float64 on the float64 inputs, float32 on the float32 inputs)."""
    results = []
    for dtype in (torch.float64, torch.float32):
        module = ReferencePE(sizes["num_hiddens"], 0.0, max_len=sizes["max_len"]).to(dtype).eval()
        with torch.no_grad():
            module.P.copy_(_t(table, dtype))
            results.append(module(_t(X, dtype)).double().numpy())
    return results


def _check_one_parameter(case, got):
    p, a = case["params"], case["arrays"]
    shape = (p["max_len"], p["num_hiddens"])
    count = got.integer("count", "the number of parameters")
    shapes = got.native("shapes", None, "the parameter shapes")
    listed = [tuple(int(s) for s in row if s >= 0) for row in shapes.reshape(-1, 4)[:count]] \
        if shapes.ndim == 2 and shapes.shape[1] == 4 and shapes.dtype.kind in "iu" else []
    _expect(count == 1, f"the module should have exactly one parameter (the table), found {count}"
                        f"{' with shapes ' + ', '.join(map(_shape, listed)) if listed else ''}; "
                        f"a buffer or a plain tensor attribute is not a parameter")
    _expect(len(listed) == 1 and listed[0] == shape,
            f"the positional table should have shape (max_len, num_hiddens) = {_shape(shape)}, "
            f"got {_shape(listed[0]) if listed else 'another shape'}")
    table = got.floats("table", shape, "the table read back after loading values into it")
    _close(table, a["table"], _scaled(a["table"], 1e-6), "the table read back after loading values into it")


def _check_trainable(case, got):
    p, a = case["params"], case["arrays"]
    shape = (p["max_len"], p["num_hiddens"])
    after = got.floats("table", shape, "the table after one SGD step")
    expected = a["table"] - p["lr"] * a["direction"]
    _expect(np.abs(after - a["table"]).max() > _scaled(a["table"], 1e-6),
            "one SGD step did not change the table: it has requires_grad=False (or is not an nn.Parameter), "
            "so training would never change it")
    _close(after, expected, _scaled(expected, 1e-5),
           f"the table after one SGD step (lr={_fmt(p['lr'])}) on sum(P * D)")


def _check_gradient(case, got):
    p, a = case["params"], case["arrays"]
    shape, n = (p["max_len"], p["num_hiddens"]), p["num_steps"]
    grad = got.floats("grad", shape, "the gradient of the table")
    want = np.asarray(a["G"], dtype=np.float64).sum(axis=0)              # (n, num_hiddens)
    _expect(np.abs(grad).max() > 0,
            "no gradient reached the table: is it an nn.Parameter with requires_grad=True, and is it used "
            "in forward (not a detached copy)?")
    _close(grad[:n], want, _scaled(want, 1e-5),
           f"the gradient of sum(pe(X) * G) for the rows 0..{n - 1} used by a length-{n} input "
           f"(each should be the sum of G over the batch)")
    _expect(bool((grad[n:] == 0).all()),
            f"rows {n}..{p['max_len'] - 1} were not used by a length-{n} input but received a gradient")


def _check_pe_shape(case, got):
    X = case["arrays"]["X"]
    got.floats("output", X.shape, f"pe(X) for X of shape {_shape(X.shape)}")


def _check_known_table(case, got):
    p, a = case["params"], case["arrays"]
    X = a["X"]
    out = got.floats("output", X.shape, "pe(X)")
    ref64, ref32 = _reference_pe(p, a["table"], X)
    _close(out, ref64, max(_tolerance(ref32, ref64), _scaled(ref64, 1e-6)),
           "pe(X) with a known table (row i should be added to position i)")


def _check_too_long(case, got):
    p, a = case["params"], case["arrays"]
    boundary = got.floats("boundary_output", a["X_boundary"].shape, f"pe(X) with n = max_len = {p['max_len']}")
    ref64, ref32 = _reference_pe(p, a["table"], a["X_boundary"])
    _close(boundary, ref64, max(_tolerance(ref32, ref64), _scaled(ref64, 1e-6)),
           f"pe(X) with n = max_len = {p['max_len']} (the longest allowed input must work)")
    outcome = got.integer("outcome", "what happened with n = max_len + 1")
    what = f"pe(X) with {p['max_len'] + 1} positions, max_len={p['max_len']}"
    _expect(outcome != 0, f"{what}: expected ValueError, but it returned an output")
    _expect(outcome == 1, f"{what}: expected ValueError, got another exception (check n > max_len yourself "
                          f"and raise ValueError naming the argument and both lengths)")


def _check_pe_parity(case, got):
    p, a = case["params"], case["arrays"]
    for index, (batch, num_steps, num_hiddens, max_len) in enumerate(p["cases"]):
        X = a[f"X_{index}"]
        what = f"output for X of shape {_shape(X.shape)}, max_len={max_len}"
        out = got.floats(f"output_{index}", X.shape, what)
        ref64, ref32 = _reference_pe({"num_hiddens": num_hiddens, "max_len": max_len}, a[f"table_{index}"], X)
        _close(out, ref64, _tolerance(ref32, ref64), what)


def _check_dropout(case, got):
    p, a = case["params"], case["arrays"]
    X = a["X"]
    expected = X + a["table"][:X.shape[1]]
    out = got.floats("train_output", X.shape, "pe(X) in train mode")
    dropped = float((out == 0).mean())
    _expect(0.4 < dropped < 0.6, f"with dropout=0.5 in train mode about half the outputs should be 0, got a "
                                 f"fraction of {dropped:.3f}: apply nn.Dropout after adding the table")
    kept = out != 0
    _close(out[kept], 2.0 * expected[kept], _scaled(expected, 1e-4),
           "kept entries in train mode (should be 2 (X + P))")
    out = got.floats("eval_output", X.shape, "pe(X) in eval mode")
    _close(out, expected, _scaled(expected, 1e-5), "output in eval mode (dropout must be off)")


# ---------------------------------------------------------------------------------------------------
# Problem set 2: relative_position_index

def _index_case(got, index, q, n, k, integer=False):
    what = f"relative_position_index({q}, {n}, {k})"
    got_index = got.native(f"index_{index}", (q, n), what)
    if integer:
        _expect(got_index.dtype.kind in "iu", f"{what} should hold integers, got dtype {got_index.dtype}")
    return what, got_index.astype(np.float64) if got_index.dtype.kind == "f" else got_index


def _reference_index(q, n, k):
    return reference_index(q, n, k).numpy()


def _check_index_dtype(case, got):
    q, n, k = case["params"]["cases"][0]
    what = f"relative_position_index({q}, {n}, {k})"
    value = got.native("index_0", (q, n), what)
    _expect(value.dtype == np.int64, f"the index must be int64 (it selects table rows), got {value.dtype}")


def _check_index_values(case, got):
    for index, (q, n, k) in enumerate(case["params"]["cases"]):
        what, value = _index_case(got, index, q, n, k, integer=True)
        _equal(value, _reference_index(q, n, k), what)


def _check_toeplitz(case, got):
    for index, (q, n, k) in enumerate(case["params"]["cases"]):
        what, value = _index_case(got, index, q, n, k)
        _expect(bool((value[1:, 1:] == value[:-1, :-1]).all()),
                f"{what} is not constant along diagonals: entry [i, j] must depend on j - i only")
        diagonal = np.diagonal(value)
        _expect(bool((diagonal == k).all()),
                f"{what} has {[_fmt(x) for x in diagonal]} on the diagonal, expected {k} "
                f"(i = j is distance 0, shifted by k)")
        _expect(np.unique(value).size > 1 or np.unique(_reference_index(q, n, k)).size == 1,
                f"{what} holds the same number everywhere; entries off the diagonal belong to other distances")


def _check_saturation(case, got):
    for index, (q, n, k) in enumerate(case["params"]["cases"]):
        what, value = _index_case(got, index, q, n, k)
        distance = np.arange(n)[None, :] - np.arange(q)[:, None]           # (q, n): j - i
        _expect(bool((value[distance >= k] == 2 * k).all()),
                f"{what}: entries with j - i >= {k} should all be {2 * k} (clip at +k, then add k); "
                f"check the sign of j - i and the clipping")
        _expect(bool((value[distance <= -k] == 0).all()),
                f"{what}: entries with j - i <= -{k} should all be 0")


def _check_index_int64(case, got):
    for index, (q, n, k) in enumerate(case["params"]["cases"]):
        what = f"relative_position_index({q}, {n}, {k})"
        value = got.native(f"index_{index}", (q, n), what)
        _expect(value.dtype == np.int64, f"relative_position_index must return an int64 (Long) tensor, "
                                         f"got {value.dtype}")
        _equal(value, _reference_index(q, n, k), what)


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
            linear.weight.copy_(_t(arrays[f"{name}.weight"], dtype))
            if f"{name}.bias" in arrays:
                linear.bias.copy_(_t(arrays[f"{name}.bias"], dtype))
        module.rel_k.copy_(_t(arrays["rel_k"], dtype))
        module.rel_v.copy_(_t(arrays["rel_v"], dtype))
    return module


def _run_reference(params, arrays, queries, keys, values, valid_lens=None):
    """((out64, weights64), (out32, weights32)) of the reference on the given inputs."""
    results = []
    for dtype in (torch.float64, torch.float32):
        module = _reference_attention(params, arrays, dtype)
        lens = None if valid_lens is None else torch.from_numpy(np.asarray(valid_lens, dtype=np.int64))
        with torch.no_grad():
            out = module(_t(queries, dtype), _t(keys, dtype), _t(values, dtype), lens)
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
        _expect(found == tuple(shape),
                f"{name} should hold 2 * max_distance + 1 = {shape[0]} rows of head_dim = {shape[1]} values "
                f"(max_distance={p['max_distance']}, num_hiddens={p['num_hiddens']}, num_heads={p['num_heads']}), "
                f"got shape {_shape(found) if found is not None else 'unknown'}")
        table = got.floats(name, shape, f"{name} read back after loading values into it")
        _close(table, a[name], _scaled(a[name], 1e-6), f"{name} read back after loading values into it")


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
    _close(weights.sum(axis=-1), np.ones(weights_shape[:-1]), 1e-5, "the row sums of attention_weights")


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
    _expect(leaked.size == 0 or leaked.max() == 0,
            f"with valid_lens = {shown}, masked keys got weights up to {leaked.max() if leaked.size else 0:.3g}; "
            f"they must be exactly 0 (fill their scores with -inf before the softmax, or use attnkit.masked_softmax)")
    # Evidence that the mask is applied to a softmax, not to nothing: the valid keys' weights sum to 1.
    _close(weights.sum(axis=-1), np.ones(weights_shape[:-1]), 1e-5,
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
        _close(out, out64, _tolerance(out32, out64), f"{what}: output")
    if compare != "output":
        weights = got.floats("attention_weights", weights_shape, f"{what}: attention_weights")
        _close(weights, w64, _tolerance(w32, w64), f"{what}: attention_weights")


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
    _expect(bool((weights_X > 0).all()) and bool((weights_Y > 0).all()),
            "with no mask every attention weight should be positive (a softmax over all keys)")
    _expect(float(np.ptp(weights_X, axis=-1).max()) > 1e-4,
            "the attention weights for X are the same for every key: they should depend on the tokens")
    moved = _log_differences(weights_Y, shift)
    still = _log_differences(weights_X, 0)
    # Tolerance from the reference's own float32 error on the same statistic (at least 1e-4).
    Y = np.concatenate([a["prefix"], a["X"]], axis=1)
    own = 0.0
    for dtype in (torch.float32,):
        module = _reference_attention(p, a, dtype)
        with torch.no_grad():
            module(_t(a["X"], dtype), _t(a["X"], dtype), _t(a["X"], dtype))
            ref_X = module.attention_weights.double().numpy()
            module(_t(Y, dtype), _t(Y, dtype), _t(Y, dtype))
            ref_Y = module.attention_weights.double().numpy()
        own = float(np.abs(_log_differences(ref_Y, shift) - _log_differences(ref_X, 0)).max())
    _close(moved, still, max(1e-4, 8.0 * own),
           f"log-weight differences between tokens of X, before and after shifting X by {shift} positions "
           f"(relative logits must depend on j - i only)")


# ---------------------------------------------------------------------------------------------------
# Problem set 2: skew

def _lower(L):
    return np.tril(np.ones((L, L), dtype=bool))


def _skew_output(got, key, X, what):
    """skew's result of X's shape, finite on and below the diagonal (above it anything goes)."""
    out = got.floats(key, X.shape, what, finite=False)
    _expect(bool(np.isfinite(out[..., _lower(X.shape[-1])]).all()), f"{what} contains NaN or inf")
    return out


def _check_skew_shape(case, got):
    X = case["arrays"]["X"]
    _skew_output(got, "output_X", X, f"skew(X) for X of shape {_shape(X.shape)}")


def _check_skew_values(case, got):
    for key, X in sorted(case["arrays"].items()):
        L = X.shape[-1]
        what = f"skew(X) on and below the diagonal, X of shape {_shape(X.shape)}" + \
            (" (the exercise's example)" if key == "example" else "")
        out = _skew_output(got, f"output_{key}", X, what)
        want = reference_skew(_t(_as32(X))).numpy()
        lower = np.broadcast_to(_lower(L), X.shape)
        _equal(np.where(lower, out, 0.0), np.where(lower, want, 0.0), what)


def _check_skew_unchanged(case, got):
    X = case["arrays"]["X"]
    _skew_output(got, "output", X, f"skew(X) for X of shape {_shape(X.shape)}")
    after = got.floats("input_after", X.shape, "X after calling skew(X)", finite=False)
    _equal(after, _as32(X), "X after calling skew(X) (skew must not modify its input)")


def _check_skew_float64(case, got):
    X = case["arrays"]["X"]
    what = f"skew of a float64 tensor of shape {_shape(X.shape)}"
    out = got.native("output_X", X.shape, what)
    _expect(out.dtype == np.float64, f"skew of a float64 tensor should be float64, got {out.dtype}")
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
    _expect(bool((weights[:, above] == 0).all()), "query i must not see keys j > i: mask them before the softmax")
    _close(weights.sum(axis=-1), np.ones(weights_shape[:-1]), 1e-5, "the row sums of the weights")


def _check_causal_agree(case, got):
    a = case["arrays"]
    output_shape, weights_shape = _causal_shapes(a)
    got_ = {key: got.floats(key, shape, f"{_NAMES[key.split('_')[0]]}: {key.split('_')[1]}")
            for key, shape in (("naive_output", output_shape), ("naive_weights", weights_shape),
                               ("skewed_output", output_shape), ("skewed_weights", weights_shape))}
    _close(got_["skewed_weights"], got_["naive_weights"], 1e-5, "skewed weights vs naive weights")
    _close(got_["skewed_output"], got_["naive_output"], 1e-5, "skewed output vs naive output")
    # Anchor the agreement to the grader's inputs: the weights are a distribution over keys and the
    # output is their average of the given values (what both versions must share).
    weights = got_["skewed_weights"]
    _close(weights.sum(axis=-1), np.ones(weights_shape[:-1]), 1e-5, "the row sums of the weights")
    _expect(bool((weights[:, _lower(weights_shape[-1])] > 0).all()),
            "a softmax over the keys j <= i gives each of them a positive weight; some got 0 or less")
    want = weights @ _as32(a["values"])
    _close(got_["skewed_output"], want, _scaled(want, 1e-5), "the output (should be weights @ values)")


def _causal_reference(arrays, suffix=""):
    """((out64, w64), (out32, w32)) of the float64 reference on float64 and float32 inputs."""
    inputs = [arrays[f"{key}{suffix}"] for key in ("queries", "keys", "values", "rel_k")]
    results = []
    for dtype in (torch.float64, torch.float32):
        with torch.no_grad():
            out, weights = reference_causal(*[_t(x, dtype) for x in inputs])
        results.append((out.double().numpy(), weights.double().numpy()))
    return results


def _check_causal_parity(case, got):
    a, version = case["arrays"], case["version"]
    for L in case["params"]["lengths"]:
        output_shape, weights_shape = _causal_shapes(a, f"_{L}")
        (out64, w64), (out32, w32) = _causal_reference(a, f"_{L}")
        weights = got.floats(f"weights_{L}", weights_shape, f"{_NAMES[version]}: weights, L = {L}")
        _close(weights, w64, _tolerance(w32, w64), f"{_NAMES[version]}: weights, L = {L}")
        out = got.floats(f"output_{L}", output_shape, f"{_NAMES[version]}: output, L = {L}")
        _close(out, out64, _tolerance(out32, out64), f"{_NAMES[version]}: output, L = {L}")


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
    _expect(shapes.dtype.kind in "iu" and shapes.tolist() == [[1, L, d], [1, L, L]],
            f"at L = {L}, head_dim = {d}: output should have shape (1, {L}, {d}) and weights (1, {L}, {L}), "
            f"got {shapes.tolist() if shapes.dtype.kind in 'iu' else 'something else'}")
    out = got.floats("output_rows", (len(rows), d), f"output rows at L = {L}")
    weights = got.floats("weight_rows", (len(rows), L), f"weight rows at L = {L}")
    out64, w64 = _memory_reference_rows(a, rows, np.float64)
    out32, w32 = _memory_reference_rows(a, rows, np.float32)
    what = f"at L = {L} with every row of rel_k equal (the relative term is then the same for every key)"
    _close(weights, w64, _tolerance(w32, w64), f"weights of queries {rows} {what}")
    _close(out, out64, _tolerance(out32, out64), f"output of queries {rows} {what}")


# ---------------------------------------------------------------------------------------------------
# The checks of each grade cell, with the points of the notebook's visible and hidden checks

_MEMORY_HINT = (f"(at L = {MEMORY_LENGTH}, an (L, L, head_dim) float32 tensor of gathered rows takes "
                f"{MEMORY_LENGTH ** 2 * MEMORY_HEAD_DIM * 4 / 2 ** 30:.0f} GiB, more than the grader allows; compute "
                f"the relative term as skew(queries @ rel_k.T))")


@dataclass(frozen=True)
class _Spec:
    grade_id: str
    probe: str
    name: str
    points: float
    decide: object
    extra: tuple = ()          # (key, value) pairs added to the case the decide function sees
    hint: str = ""             # added to the message when the probe raised or never came back
    key: str = ""              # short unique id of the check (the probe's name unless a probe has several)

    @property
    def id(self):
        return self.key or self.probe

    @property
    def kind(self):
        """"reference" (compared with the reference), "property" (of the submission's own numbers on the
        grader's inputs) or "structure" (shapes, dtypes, parameters: any arrays of that structure pass)."""
        return next((kind for kind, ids in _KINDS.items() if self.id in ids), "reference")

    @property
    def hidden(self):
        """True for a check of the hidden part of the test cell (absent from the student's notebook)."""
        return self.id in _HIDDEN


_KINDS = {
    "structure": {"pe_parameters", "pe_trainable", "pe_shape", "index_dtype", "attn_tables", "attn_self_shape",
                  "attn_cross_shape", "attn_weights_shape", "skew_shape", "skew_unchanged", "skew_float64",
                  "causal_shapes", "causal_skewed_mask"},
    "property": {"index_toeplitz", "index_saturation", "attn_mask_batch", "attn_shift", "attn_mask_rows",
                 "causal_agree"},
}

# The checks of the hidden part of each test cell; the others mirror the cell's visible checks.
_HIDDEN = {"pe_gradient", "pe_parity", "pe_dropout", "index_toeplitz", "index_saturation", "index_int64",
           "attn_self_weights", "attn_self_parity", "attn_cross_parity", "attn_zero_distance", "attn_shift",
           "attn_mask_rows", "skew_gather", "skew_unchanged", "skew_float64", "causal_naive_parity", "causal_skewed_parity",
           "causal_memory"}


SPECS = {
    "ps1_learnable_pe": [
        _Spec("test_pe_table", "pe_parameters", "exactly one parameter, of shape (max_len, num_hiddens)", 0.5,
              _check_one_parameter),
        _Spec("test_pe_table", "pe_trainable", "the table is trainable: one SGD step moves it", 0.5,
              _check_trainable),
        _Spec("test_pe_table", "pe_gradient", "the gradient reaches exactly the rows 0..n-1 of the table", 1,
              _check_gradient),
        _Spec("test_pe_forward", "pe_shape", "the output has the input's shape", 0.5, _check_pe_shape),
        _Spec("test_pe_forward", "pe_known_table", "row i of the table is added to position i (dropout=0)", 1.5,
              _check_known_table),
        _Spec("test_pe_forward", "pe_too_long", "a sequence longer than max_len raises ValueError (not scored: "
                                                "the grader cannot verify what your process reports)", 0,
              _check_too_long),
        _Spec("test_pe_forward", "pe_parity",
              "same output as the reference for several shapes (n = max_len, n = 1, odd num_hiddens)", 1,
              _check_pe_parity),
        _Spec("test_pe_forward", "pe_dropout", "dropout: in train mode about half the entries are zeroed and "
                                               "the rest scaled by 2 (p=0.5); none in eval mode", 1, _check_dropout),
    ],
    "ps2_relative_pe": [
        _Spec("test_index", "index_dtype", "returns an int64 tensor of shape (num_queries, num_keys)", 0.5,
              _check_index_dtype),
        _Spec("test_index", "index_example", "equals the exercise's example (4, 6, 2) and random rectangular "
                                             "cases", 1, _check_index_values),
        _Spec("test_index", "index_cases", "Toeplitz: constant along every diagonal, and equal to k on the main "
                                           "diagonal", 0.5, _check_toeplitz,
              key="index_toeplitz"),
        _Spec("test_index", "index_cases", "saturation: 0 where j - i <= -k and 2k where j - i >= k", 0.5,
              _check_saturation, key="index_saturation"),
        _Spec("test_index", "index_cases", "every entry equals clip(j - i, -k, k) + k, as int64, for square and "
                                           "rectangular shapes", 0.5, _check_index_int64,
              key="index_int64"),
        _Spec("test_rel_attention", "attn_tables", "rel_k and rel_v hold 2 * max_distance + 1 rows of head_dim "
                                                   "values", 0.5, _check_tables),
        _Spec("test_rel_attention", "attn_self_shape", "self-attention: the output has shape (batch, q, "
                                                       "num_hiddens)", 0.5, _check_output_shape),
        _Spec("test_rel_attention", "attn_cross_shape", "cross-attention (q != k): the output has shape (batch, q, "
                                                        "num_hiddens)", 0.5, _check_output_shape),
        _Spec("test_rel_attention", "attn_weights_shape", "attention_weights has shape (batch, num_heads, q, k) and "
                                                          "rows sum to 1", 0.5, _check_weights_rows),
        _Spec("test_rel_attention", "attn_mask_batch", "with valid_lens of shape (batch,), keys beyond the valid "
                                                       "length get weight exactly 0", 0.5, _check_masked_zero),
        _Spec("test_rel_attention", "attn_self_parity", "self-attention: the attention weights equal the "
                                                        "reference's with the same parameters (4 heads, k = 3, "
                                                        "length 9)", 0.5,
              _check_attention_parity, (("what", "self-attention"), ("compare", "weights")),
              key="attn_self_weights"),
        _Spec("test_rel_attention", "attn_self_parity", "self-attention: the output equals the reference's with "
                                                        "the same parameters (4 heads, k = 3, length 9)", 1,
              _check_attention_parity, (("what", "self-attention"), ("compare", "output"))),
        _Spec("test_rel_attention", "attn_cross_parity", "cross-attention (5 queries, 11 keys, bias=True) with "
                                                         "valid_lens of shape (batch, q) equals the reference", 1.5,
              _check_attention_parity, (("what", "cross-attention"),)),
        _Spec("test_rel_attention", "attn_zero_distance", "max_distance = 0 is plain multi-head attention, outputs "
                                                          "shifted by W_o applied to rel_v[0]", 1,
              _check_attention_parity, (("what", "max_distance = 0"),)),
        _Spec("test_rel_attention", "attn_shift", "relative logits do not change when the whole context is "
                                                  "shifted", 1, _check_shift),
        _Spec("test_rel_attention", "attn_mask_rows", "keys beyond valid_lens of shape (batch, q) get weight "
                                                      "exactly 0", 0.5, _check_masked_zero),
        _Spec("test_skew", "skew_shape", "keeps the shape (batch, heads, L, L)", 0.5, _check_skew_shape),
        _Spec("test_skew", "skew_example", "L = 4: S[i, j] = X[i, 3 - i + j] for j <= i (the exercise's example "
                                           "and a random X)", 1, _check_skew_values),
        _Spec("test_skew", "skew_gather", "equals the gather X[..., i, L-1-i+j] exactly for every j <= i "
                                          "(L = 1, 2, 7, 32)", 1.5, _check_skew_values),
        _Spec("test_skew", "skew_unchanged", "leaves its input unchanged", 0.5, _check_skew_unchanged),
        _Spec("test_skew", "skew_float64", "keeps the dtype and all leading dimensions: float64 (batch, heads, L, "
                                           "L)", 0.5, _check_skew_float64),
        _Spec("test_causal", "causal_shapes", "both versions return output (batch, L, d_v) and weights "
                                              "(batch, L, L)", 0.5, _check_causal_shapes),
        _Spec("test_causal", "causal_skewed_mask", "causal_relative_attention: weights are exactly 0 above the "
                                                   "diagonal and rows sum to 1", 0.5, _check_causal_mask),
        _Spec("test_causal", "causal_agree", "causal_relative_attention (skewed) equals "
                                             "causal_relative_attention_naive (L = 6)", 1, _check_causal_agree),
        _Spec("test_causal", "causal_naive_parity", "causal_relative_attention_naive equals the float64 "
                                                    "reference (L = 1, 6, 17)", 1, _check_causal_parity,
              (("version", "naive"),)),
        _Spec("test_causal", "causal_skewed_parity", "causal_relative_attention (skewed) equals the float64 "
                                                     "reference (L = 1, 6, 17)", 1, _check_causal_parity,
              (("version", "skewed"),)),
        _Spec("test_causal", "causal_memory", f"memory: at L = {MEMORY_LENGTH}, head_dim = {MEMORY_HEAD_DIM} the "
                                              f"skewed version runs under the grader's memory cap and gives the "
                                              f"reference's rows", 1, _check_memory, hint=_MEMORY_HINT),
    ],
}


def max_points(assignment):
    """{grade_id: points of the cell}, from the checks."""
    totals = {}
    for spec in SPECS[assignment]:
        totals[spec.grade_id] = totals.get(spec.grade_id, 0.0) + float(spec.points)
    return totals


def describe(assignment):
    """One dict per check, in ``judge``'s order: grade_id, id, name, points, kind, hidden, probe (no code,
    no values)."""
    return [{"grade_id": spec.grade_id, "id": spec.id, "name": spec.name, "points": float(spec.points),
             "kind": spec.kind, "hidden": spec.hidden, "probe": spec.probe} for spec in SPECS[assignment]]


def check_ids(assignment):
    """{grade_id: [short id of each check]}, in the order ``judge`` lists the checks (stable across runs)."""
    ids = {}
    for spec in SPECS[assignment]:
        ids.setdefault(spec.grade_id, []).append(spec.id)
    return ids


def scores(verdicts):
    """{grade_id: points earned} from the result of ``judge``."""
    return {grade_id: float(sum(check.points for check in checks)) for grade_id, checks in verdicts.items()}


# ---------------------------------------------------------------------------------------------------
# Deciding

def _one_line(text, limit=_MESSAGE_LIMIT):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


_EXCEPTION = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*(Error|Exception|Failed|Interrupt|Exit|Warning)?: ")


def _explain_error(error):
    """A probe's recorded failure as a check message (untrusted text, shown to the student only).

    The runner records an exception as "TypeName: message"; the exchange records why it rejected an
    output array in plain words.
    """
    text = _one_line(error if isinstance(error, str) else repr(error))
    if text.startswith("NotImplementedError"):
        return "not implemented yet: your code still raises NotImplementedError"
    if text.startswith("CheckFailed: "):          # raised by a loading helper: already a sentence
        return text[len("CheckFailed: "):]
    if text.startswith("not run"):               # the notebook could not be used at all
        return f"this check did not run: {text[len('not run'):].lstrip(': ')}"
    if _EXCEPTION.match(text):
        return f"your code raised {text}"
    return f"the result could not be used: {text}"


def _nested(outputs):
    """{probe: {key: array}}; also accepts the flat {"probe/key": array} layout of outputs.npz."""
    if not isinstance(outputs, dict):
        return {}
    nested = {}
    for key, value in outputs.items():
        if isinstance(value, dict):
            nested.setdefault(str(key), {}).update(value)
        elif isinstance(key, str) and "/" in key:
            probe, _, name = key.partition("/")
            nested.setdefault(probe, {})[name] = value
    return nested


def _decide(spec, case, arrays, error):
    """One check: passed only when the numbers satisfy it; never raises."""
    hint = f" {spec.hint}" if spec.hint else ""
    if error is not None:
        return False, _explain_error(error) + hint
    if not isinstance(arrays, dict) or not arrays:
        return False, ("no result came back for this check: the notebook did not get this far (a cell "
                       "timed out or crashed), or the grader's memory/time cap stopped it" + hint)
    if case is None:
        return False, "the grader had no inputs for this check"
    try:
        spec.decide({**case, **dict(spec.extra)}, _Outputs(arrays))
    except _Fail as failure:
        return False, _one_line(failure)
    except Exception as exc:        # noqa: BLE001 - a malformed result fails its check, never the grader
        return False, _one_line(f"the grader could not read this result ({type(exc).__name__}: {exc})")
    return True, ""


def decide(assignment, inputs, outputs, probe_errors=None):
    """[(spec, passed, message), ...] for every check of the assignment, each decided on its own numbers.

    The evidence rule is not applied here: ``judge`` applies it to the whole cell, and the hidden part
    of a notebook's test cell (``attnkit.solutions.hidden``) leaves it to the cell's ``Checks``, which
    also hold the visible checks. The arguments are those of ``judge``.
    """
    if assignment not in SPECS:
        raise ValueError(f"unknown assignment {assignment!r}; known: {', '.join(SPECS)}")
    outputs = _nested(outputs)
    errors = probe_errors if isinstance(probe_errors, dict) else {}
    inputs = inputs if isinstance(inputs, dict) else {}
    decided = []
    for spec in SPECS[assignment]:
        error = errors.get(spec.probe, errors.get("*"))          # "*": the whole outputs file was rejected
        decided.append((spec, *_decide(spec, inputs.get(spec.probe), outputs.get(spec.probe), error)))
    return decided


def judge(assignment, inputs, outputs, probe_errors=None):
    """{grade_id: [Check, ...]} for one submission, decided from the probe outputs alone.

    ``inputs`` is what ``make_inputs`` returned for this submission; ``outputs`` {probe: {key: ndarray}}
    (or the flat {"probe/key": ndarray}); ``probe_errors`` {probe: "TypeName: message" or a reason},
    as ``attnkit.grading.exchange.read_outputs`` returns them (key "*": the whole file was rejected).
    A probe with neither outputs nor an error (the notebook never got there) fails its checks.

    A structure or property check counts only when a scored comparison with the reference in the same
    cell passed: arrays built to have the right shape or property earn nothing on their own
    (``attnkit.checking.Checks`` applies the same rule in the notebooks, so plain nbgrader agrees).
    """
    decided = decide(assignment, inputs, outputs, probe_errors)
    evidenced = {spec.grade_id for spec, passed, _ in decided
                 if passed and spec.points > 0 and spec.kind == "reference"}
    decided = [(spec, False, UNSUPPORTED) if passed and spec.kind != "reference" and spec.grade_id not in evidenced
               else (spec, passed, message) for spec, passed, message in decided]
    verdicts = {}
    for spec, passed, message in decided:
        points = float(spec.points)
        verdicts.setdefault(spec.grade_id, []).append(
            Check(spec.name, points if passed else 0.0, points, passed, message))
    return verdicts


# ---------------------------------------------------------------------------------------------------
# Inputs: random per submission, sizes where a bug class does not depend on them

def _weights(rng, num_hiddens, num_heads, max_distance, bias=False):
    """Random weights for RelativeMultiHeadAttention, keyed as the probes load them."""
    head_dim = num_hiddens // num_heads
    arrays = {}
    for name in _LINEARS:
        arrays[f"{name}.weight"] = rng.standard_normal((num_hiddens, num_hiddens)) / math.sqrt(num_hiddens)
        if bias:
            arrays[f"{name}.bias"] = 0.1 * rng.standard_normal(num_hiddens)
    for name in ("rel_k", "rel_v"):
        arrays[name] = rng.standard_normal((2 * max_distance + 1, head_dim))
    return arrays


def _ps1_inputs(rng, **_):
    def integer(low, high):                     # inclusive
        return int(rng.integers(low, high + 1))

    def normal(*shape):
        return rng.standard_normal(shape)

    def sizes():
        return {"num_hiddens": integer(5, 24), "max_len": integer(20, 60)}

    inputs = {}
    s = sizes()
    inputs["pe_parameters"] = {"arrays": {"table": normal(s["max_len"], s["num_hiddens"])}, "params": s}
    s = sizes()
    inputs["pe_trainable"] = {
        "arrays": {"table": normal(s["max_len"], s["num_hiddens"]),
                   "direction": normal(s["max_len"], s["num_hiddens"])},
        "params": {**s, "lr": round(float(rng.uniform(0.1, 1.0)), 3)}}
    s = sizes()
    batch, n = integer(2, 4), integer(2, s["max_len"] - 2)
    inputs["pe_gradient"] = {
        "arrays": {"table": normal(s["max_len"], s["num_hiddens"]), "X": normal(batch, n, s["num_hiddens"]),
                   "G": normal(batch, n, s["num_hiddens"])},
        "params": {**s, "num_steps": n}}
    s = sizes()
    inputs["pe_shape"] = {"arrays": {"X": normal(integer(1, 3), integer(1, s["max_len"]), s["num_hiddens"])},
                          "params": s}
    s = sizes()
    inputs["pe_known_table"] = {
        "arrays": {"table": normal(s["max_len"], s["num_hiddens"]),
                   "X": normal(integer(1, 3), integer(2, s["max_len"] - 1), s["num_hiddens"])},
        "params": s}
    s = sizes()
    batch = integer(1, 3)
    inputs["pe_too_long"] = {
        "arrays": {"table": normal(s["max_len"], s["num_hiddens"]),
                   "X_boundary": normal(batch, s["max_len"], s["num_hiddens"]),
                   "X_long": normal(batch, s["max_len"] + 1, s["num_hiddens"])},
        "params": s}
    # The shapes of the hidden parity check: a middle length, n = max_len with odd num_hiddens,
    # max_len = n = 1, and a large odd num_hiddens.
    max_len = integer(30, 60)
    cases = [[integer(1, 3), integer(2, 20), 2 * integer(3, 10), integer(21, 60)],
             [1, max_len, 2 * integer(2, 6) + 1, max_len],
             [integer(1, 3), 1, integer(2, 8), 1],
             [integer(1, 3), integer(5, 20), 2 * integer(12, 20) + 1, integer(21, 60)]]
    arrays = {}
    for index, (batch, n, num_hiddens, max_len) in enumerate(cases):
        arrays[f"table_{index}"] = normal(max_len, num_hiddens)
        arrays[f"X_{index}"] = normal(batch, n, num_hiddens)
    inputs["pe_parity"] = {"arrays": arrays, "params": {"cases": cases}}
    s = {"num_hiddens": integer(32, 64), "max_len": integer(60, 100)}
    inputs["pe_dropout"] = {
        "arrays": {"table": normal(s["max_len"], s["num_hiddens"]),
                   "X": normal(4, integer(40, s["max_len"]), s["num_hiddens"])},
        "params": {**s, "seed": integer(0, 2**31 - 1)}}
    return inputs


def _ps2_inputs(rng, memory_length=MEMORY_LENGTH, memory_head_dim=MEMORY_HEAD_DIM):
    def integer(low, high):                     # inclusive
        return int(rng.integers(low, high + 1))

    def normal(*shape):
        return rng.standard_normal(shape)

    inputs = {}
    # relative_position_index: each case keeps the structure of a hidden-test case (clipping on both
    # sides, k = 0, k beyond every distance, one query, rectangular both ways), sizes drawn at random.
    inputs["index_dtype"] = {"arrays": {}, "params": {"cases": [[integer(2, 6), integer(3, 8), integer(1, 3)]]}}
    example = [[4, 6, 2]]
    for _ in range(3):
        q, n = integer(3, 9), integer(3, 9)
        n = n + 1 if n == q else n
        example.append([q, n, integer(1, max(1, min(q, n) - 2))])
    inputs["index_example"] = {"arrays": {}, "params": {"cases": example}}
    L = integer(5, 9)
    cases = [[1, 1, 0], [L, L, integer(1, L - 3)], [integer(2, 4), integer(6, 10), integer(1, 2)],
             [integer(7, 10), integer(2, 4), integer(3, 5)], [integer(3, 8), integer(3, 8), 0],
             [integer(2, 6), integer(5, 10), integer(11, 25)], [integer(10, 14), integer(8, 12), integer(2, 4)]]
    inputs["index_cases"] = {"arrays": {}, "params": {"cases": cases}}

    # RelativeMultiHeadAttention: the sizes of the notebook's checks (every length exceeds k + 1, so a
    # missing clip always reaches a row that does not exist), weights and inputs random.
    heads, head_dim = integer(2, 4), integer(2, 6)
    s = {"num_hiddens": heads * head_dim, "num_heads": heads, "max_distance": integer(1, 4)}
    inputs["attn_tables"] = {"arrays": _weights(rng, **s), "params": s}
    s = {"num_hiddens": 16, "num_heads": 4, "max_distance": 3}
    X = normal(2, 5, 16)
    inputs["attn_self_shape"] = {"arrays": {"queries": X, "keys": X, "values": X}, "params": s}
    for name in ("attn_cross_shape", "attn_weights_shape", "attn_mask_batch"):
        queries, keys = normal(2, 5, 16), normal(2, 7, 16)
        inputs[name] = {"arrays": {"queries": queries, "keys": keys, "values": keys}, "params": s}
    inputs["attn_mask_batch"]["arrays"]["valid_lens"] = np.array([integer(1, 6), integer(1, 6)], dtype=np.int64)

    s = {"num_hiddens": 32, "num_heads": 4, "max_distance": 3, "bias": False}
    X = normal(2, 9, 32)
    inputs["attn_self_parity"] = {"arrays": {**_weights(rng, 32, 4, 3), "queries": X, "keys": X, "values": X},
                                  "params": s}
    s = {"num_hiddens": 24, "num_heads": 3, "max_distance": 2, "bias": True}
    valid_lens = rng.integers(1, 12, size=(2, 5)).astype(np.int64)
    valid_lens[0, 0], valid_lens[1, 1] = 11, integer(2, 10)          # some rows whole, some cut, none trivial
    inputs["attn_cross_parity"] = {
        "arrays": {**_weights(rng, 24, 3, 2, bias=True), "queries": normal(2, 5, 24), "keys": normal(2, 11, 24),
                   "values": normal(2, 11, 24), "valid_lens": valid_lens},
        "params": s}
    s = {"num_hiddens": 16, "num_heads": 4, "max_distance": 0, "bias": False}
    keys = normal(2, 6, 16)
    inputs["attn_zero_distance"] = {
        "arrays": {**_weights(rng, 16, 4, 0), "queries": normal(2, 4, 16), "keys": keys, "values": keys,
                   "valid_lens": np.array([integer(4, 6), integer(2, 5)], dtype=np.int64)},
        "params": s}
    s = {"num_hiddens": 16, "num_heads": 2, "max_distance": 3, "bias": False}
    inputs["attn_shift"] = {"arrays": {**_weights(rng, 16, 2, 3), "X": normal(1, 6, 16),
                                       "prefix": normal(1, integer(4, 6), 16)},
                            "params": s}
    s = {"num_hiddens": 16, "num_heads": 4, "max_distance": 2, "bias": False}
    keys = normal(2, 8, 16)
    inputs["attn_mask_rows"] = {
        "arrays": {**_weights(rng, 16, 4, 2), "queries": normal(2, 3, 16), "keys": keys, "values": keys,
                   "valid_lens": rng.integers(1, 8, size=(2, 3)).astype(np.int64)},
        "params": s}

    # skew
    inputs["skew_shape"] = {"arrays": {"X": normal(2, 3, 5, 5)}, "params": {}}
    inputs["skew_example"] = {"arrays": {"example": np.arange(16.0).reshape(4, 4), "random": normal(4, 4)},
                              "params": {}}
    inputs["skew_gather"] = {"arrays": {f"L{L}": normal(3, L, L) for L in (1, 2, 7, 32)}, "params": {}}
    inputs["skew_unchanged"] = {"arrays": {"X": normal(2, 6, 6)}, "params": {}}
    inputs["skew_float64"] = {"arrays": {"X": normal(2, 3, 5, 5)}, "params": {}}

    # causal relative attention
    def causal(L, suffix=""):
        return {f"queries{suffix}": normal(2, L, 8), f"keys{suffix}": normal(2, L, 8),
                f"values{suffix}": normal(2, L, 8), f"rel_k{suffix}": normal(L, 8)}

    for name in ("causal_shapes", "causal_skewed_mask", "causal_agree"):
        inputs[name] = {"arrays": causal(6), "params": {}}
    for name in ("causal_naive_parity", "causal_skewed_parity"):
        arrays = {}
        for L in (1, 6, 17):
            arrays.update(causal(L, f"_{L}"))
        inputs[name] = {"arrays": arrays, "params": {"lengths": [1, 6, 17]}}
    L, d = memory_length, memory_head_dim
    middle = rng.choice(np.arange(1, L - 1), size=MEMORY_ROWS - 2, replace=False)
    rows = np.sort(np.concatenate([[0, L - 1], middle])).astype(np.int64)
    inputs["causal_memory"] = {
        "arrays": {key: (0.1 * normal(1, L, d)).astype(np.float32) for key in ("queries", "keys", "values")}
        | {"rel_k_row": (0.1 * normal(d)).astype(np.float32), "rows": rows},
        "params": {"length": L, "head_dim": d}}
    return inputs


_MAKERS = {"ps1_learnable_pe": _ps1_inputs, "ps2_relative_pe": _ps2_inputs}


def make_inputs(assignment, seed, *, memory_length=MEMORY_LENGTH, memory_head_dim=MEMORY_HEAD_DIM):
    """{probe: {"arrays": {key: ndarray}, "params": {...json...}}} for every probe of the assignment.

    ``seed`` (an int of any size) makes the draw reproducible; use a fresh, secret one per submission
    (e.g. derived from a key only the grader knows and the submission's hash). ``memory_length`` and
    ``memory_head_dim`` size the memory probe (tests shrink it; grading keeps the defaults).
    """
    if assignment not in _MAKERS:
        raise ValueError(f"unknown assignment {assignment!r}; known: {', '.join(_MAKERS)}")
    rng = np.random.default_rng(seed)
    if assignment == "ps2_relative_pe":
        return _ps2_inputs(rng, memory_length=memory_length, memory_head_dim=memory_head_dim)
    return _ps1_inputs(rng)

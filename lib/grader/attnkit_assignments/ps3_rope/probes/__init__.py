"""Probes of problem set 3, run inside the sandbox: how the grader calls rotary_embedding,
RotaryMultiHeadAttention, alibi_slopes, alibi_bias and causal_alibi_attention.

Staged into every sandbox (see attnkit_sandbox.probing): no reference code and no expected value here.
"""

import torch

from attnkit_sandbox.probing import as_long, as_tensor, floats, ints, load_linears, lookup, native, probe


def _outcome(call):
    """1 when ``call()`` raises ValueError, 0 when it returns, 2 for any other exception."""
    try:
        call()
    except ValueError:
        return ints(1)
    except Exception:                        # noqa: BLE001 - any other exception is outcome 2
        return ints(2)
    return ints(0)


# ---------------------------------------------------------------------------------------------------
# rotary_embedding(x, positions, base=10000)

def _rotate(namespace, x, positions, base=None, dtype=torch.float32):
    function = lookup(namespace, "rotary_embedding")
    x, positions = as_tensor(x, dtype), as_long(positions)
    return function(x, positions) if base is None else function(x, positions, base)


def _rope_shape(namespace, arrays, params):
    """rotary_embedding on a float64 x of four dimensions: the result in its own dtype."""
    result = _rotate(namespace, arrays["x"], arrays["positions"], dtype=torch.float64)
    return {"output": native(result, "rotary_embedding(x, positions)")}


def _rope_cases(namespace, arrays, params):
    """rotary_embedding for each case (x_i, positions_i), default base."""
    return {f"output_{case}": floats(_rotate(namespace, arrays[f"x_{case}"], arrays[f"positions_{case}"]),
                                     "rotary_embedding(x, positions)")
            for case in range(params["cases"])}


def _rope_relative(namespace, arrays, params):
    """The scores (R_m q) . (R_n k) at positions p, then at p + shift."""
    result = {}
    for name in ("positions", "shifted"):
        q = _rotate(namespace, arrays["q"], arrays[name])
        k = _rotate(namespace, arrays["k"], arrays[name])
        result[f"scores_{name}"] = floats(q @ k.transpose(-1, -2), "the scores of the rotated q and k")
    return result


def _rope_odd(namespace, arrays, params):
    """rotary_embedding on an x whose last dimension is odd: the outcome."""
    return {"outcome": _outcome(lambda: _rotate(namespace, arrays["x"], arrays["positions"]))}


def _rope_random(namespace, arrays, params):
    """rotary_embedding on random x, positions and base, in float32 and in float64."""
    return {f"output{bits}": floats(_rotate(namespace, arrays["x"], arrays["positions"], params["base"], dtype),
                                    "rotary_embedding(x, positions, base)")
            for bits, dtype in ((32, torch.float32), (64, torch.float64))}


# ---------------------------------------------------------------------------------------------------
# RotaryMultiHeadAttention(num_hiddens, num_heads, dropout, base=10000, bias=False)

_LINEARS = ("W_q", "W_k", "W_v", "W_o")


def _attention(namespace, params, arrays=None):
    """The student's module built from params; with ``arrays``, the given weights loaded; eval mode."""
    cls = lookup(namespace, "RotaryMultiHeadAttention")
    options = {"base": params["base"]} if "base" in params else {}       # else the default base, 10000
    module = cls(params["num_hiddens"], params["num_heads"], 0.0, bias=params.get("bias", False), **options)
    if arrays is not None:
        load_linears(module, arrays, _LINEARS)
    module.eval()
    return module


def _forward(module, arrays, prefix="", **options):
    """forward(queries, keys, values[, valid_lens], **options) without autograd: (output, attention_weights)."""
    valid_lens = as_long(arrays["valid_lens"]) if "valid_lens" in arrays else None
    with torch.no_grad():
        output = module(as_tensor(arrays[prefix + "queries"]), as_tensor(arrays["keys"]), as_tensor(arrays["values"]),
                        valid_lens, **options)
    weights = getattr(module, "attention_weights", None)
    if weights is None:
        raise AttributeError("the module must keep its attention weights in .attention_weights after forward")
    return floats(output, "the output"), floats(weights, "attention_weights")


def _attn_own_weights(namespace, arrays, params):
    """forward with the module's own initial weights: output and .attention_weights."""
    output, weights = _forward(_attention(namespace, params), arrays)
    return {"output": output, "attention_weights": weights}


def _attn_loaded(namespace, arrays, params):
    """forward with the given weights loaded (causal and position_offset as the case says)."""
    module = _attention(namespace, params, arrays)
    output, weights = _forward(module, arrays, causal=params.get("causal", False),
                               position_offset=params.get("position_offset", 0))
    return {"output": output, "attention_weights": weights}


def _attn_cached(namespace, arrays, params):
    """The full causal self-attention pass, then the last queries alone at their position_offset over all keys."""
    module = _attention(namespace, params, arrays)
    full, _ = _forward(module, arrays, causal=True)
    step, _ = _forward(module, arrays, prefix="step_", causal=True, position_offset=params["position_offset"])
    return {"full": full, "step": step}


def _attn_odd(namespace, arrays, params):
    """RotaryMultiHeadAttention built with an odd head_dim: the outcome."""
    cls = lookup(namespace, "RotaryMultiHeadAttention")
    return {"outcome": _outcome(lambda: cls(params["num_hiddens"], params["num_heads"], 0.0))}


# ---------------------------------------------------------------------------------------------------
# alibi_slopes(num_heads), alibi_bias(num_queries, num_keys, slopes)

def _slopes(namespace, arrays, params):
    """alibi_slopes(n) for each head count of the case."""
    function = lookup(namespace, "alibi_slopes")
    return {f"slopes_{n}": floats(function(n), f"alibi_slopes({n})") for n in params["counts"]}


def _bias(namespace, arrays, params):
    """alibi_bias(num_queries, num_keys, slopes_i) for each case (num_queries, num_keys)."""
    function = lookup(namespace, "alibi_bias")
    return {f"bias_{case}": floats(function(q, n, as_tensor(arrays[f"slopes_{case}"])), f"alibi_bias({q}, {n}, slopes)")
            for case, (q, n) in enumerate(params["cases"])}


def _bias_too_many(namespace, arrays, params):
    """alibi_bias with more queries than keys: the outcome."""
    function = lookup(namespace, "alibi_bias")
    q, n = params["sizes"]
    return {"outcome": _outcome(lambda: function(q, n, as_tensor(arrays["slopes"])))}


# ---------------------------------------------------------------------------------------------------
# causal_alibi_attention(queries, keys, values, slopes)

def _alibi_attention(namespace, arrays, params):
    """causal_alibi_attention on each case's tensors (float32, or float64 for the cases params["float64"] lists)."""
    function = lookup(namespace, "causal_alibi_attention")
    result = {}
    for case in range(params["cases"]):
        dtype = torch.float64 if case in params.get("float64", ()) else torch.float32
        q, k, v, slopes = (as_tensor(arrays[f"{name}_{case}"], dtype)
                           for name in ("queries", "keys", "values", "slopes"))
        with torch.no_grad():
            output = function(q, k, v, slopes)
        result[f"output_{case}"] = floats(output, "causal_alibi_attention(queries, keys, values, slopes)")
    return result


PROBES = [
    probe("rope_shape", "test_rope", _rope_shape),
    probe("rope_example", "test_rope", _rope_cases),
    probe("rope_edge", "test_rope", _rope_cases),
    probe("rope_relative", "test_rope", _rope_relative),
    probe("rope_odd", "test_rope", _rope_odd),
    probe("rope_random", "test_rope", _rope_random),
    probe("attn_shape", "test_rotary_attention", _attn_own_weights),
    probe("attn_worked", "test_rotary_attention", _attn_loaded),
    probe("attn_cached", "test_rotary_attention", _attn_cached),
    probe("attn_masked", "test_rotary_attention", _attn_loaded),
    probe("attn_odd", "test_rotary_attention", _attn_odd),
    probe("attn_causal_parity", "test_rotary_attention", _attn_loaded),
    probe("attn_cross_parity", "test_rotary_attention", _attn_loaded),
    probe("slopes_power", "test_slopes", _slopes),
    probe("slopes_other", "test_slopes", _slopes),
    probe("slopes_edge", "test_slopes", _slopes),
    probe("slopes_random", "test_slopes", _slopes),
    probe("bias_square", "test_bias", _bias),
    probe("bias_cache", "test_bias", _bias),
    probe("bias_edge", "test_bias", _bias),
    probe("bias_too_many", "test_bias", _bias_too_many),
    probe("bias_random", "test_bias", _bias),
    probe("alibi_shape", "test_alibi_attention", _alibi_attention),
    probe("alibi_worked", "test_alibi_attention", _alibi_attention),
    probe("alibi_cache", "test_alibi_attention", _alibi_attention),
    probe("alibi_random", "test_alibi_attention", _alibi_attention),
]

"""Probes of problem set 2, run inside the sandbox: how the grader calls relative_position_index,
RelativeMultiHeadAttention, skew and the two causal functions.

Staged into every sandbox (see attnkit_sandbox.probing): no reference code and no expected value here.
"""

import torch

from attnkit.checking import load_table, table_of
from attnkit_sandbox.probing import as_long, as_tensor, floats, ints, load_linears, lookup, native, probe, tensor_of

# ---------------------------------------------------------------------------------------------------
# Problem set 2: relative_position_index(num_queries, num_keys, max_distance)

def _index_cases(namespace, arrays, params):
    """The index for every (num_queries, num_keys, max_distance) case, in the dtype it was returned."""
    function = lookup(namespace, "relative_position_index")
    return {f"index_{case}": native(function(q, n, k), f"relative_position_index({q}, {n}, {k})")
            for case, (q, n, k) in enumerate(params["cases"])}


# ---------------------------------------------------------------------------------------------------
# Problem set 2: RelativeMultiHeadAttention(num_hiddens, num_heads, dropout, max_distance, bias=False)

_LINEARS = ("W_q", "W_k", "W_v", "W_o")


def _attention(namespace, params, arrays=None):
    """The student's module built from params; with ``arrays``, the given weights loaded; eval mode."""
    cls = lookup(namespace, "RelativeMultiHeadAttention")
    module = cls(params["num_hiddens"], params["num_heads"], 0.0, params["max_distance"],
                 bias=params.get("bias", False))
    if arrays is not None:
        load_linears(module, arrays, _LINEARS)
        for name in ("rel_k", "rel_v"):
            if not hasattr(module, name):
                raise AttributeError(f"the module needs an attribute {name} (nn.Embedding or nn.Parameter)")
            load_table(table_of(getattr(module, name), name), as_tensor(arrays[name]))
    module.eval()
    return module


def _weights_of(module):
    weights = getattr(module, "attention_weights", None)
    if weights is None:
        raise AttributeError("the module must keep its attention weights in .attention_weights after forward")
    return floats(weights, "attention_weights")


def _run_attention(module, arrays, queries="queries", keys="keys", values="values"):
    """forward(queries, keys, values[, valid_lens]) without autograd: (output, attention_weights)."""
    valid_lens = as_long(arrays["valid_lens"]) if "valid_lens" in arrays else None
    with torch.no_grad():
        output = module(as_tensor(arrays[queries]), as_tensor(arrays[keys]), as_tensor(arrays[values]), valid_lens)
    return floats(output, "the output"), _weights_of(module)


def _attn_tables(namespace, arrays, params):
    """Shapes of rel_k and rel_v, and both read back after loading the given tables."""
    module = _attention(namespace, params)
    result = {}
    for name in ("rel_k", "rel_v"):
        if not hasattr(module, name):
            raise AttributeError(f"the module needs an attribute {name} (nn.Embedding or nn.Parameter)")
        table = table_of(getattr(module, name), name)
        result[f"{name}_shape"] = ints(tuple(table.shape)[:4])
        if tuple(table.shape) == tuple(arrays[name].shape):
            load_table(table, as_tensor(arrays[name]))
            result[name] = floats(table_of(getattr(module, name), name), f"{name} after loading")
    return result


def _attn_output(namespace, arrays, params):
    """forward with the module's own initial weights: the output only."""
    module = _attention(namespace, params)
    output, _ = _run_attention(module, arrays)
    return {"output": output}


def _attn_weights(namespace, arrays, params):
    """forward with the module's own initial weights: .attention_weights only."""
    module = _attention(namespace, params)
    _, weights = _run_attention(module, arrays)
    return {"attention_weights": weights}


def _attn_loaded(namespace, arrays, params):
    """forward with the given weights loaded: output and .attention_weights."""
    module = _attention(namespace, params, arrays)
    output, weights = _run_attention(module, arrays)
    return {"output": output, "attention_weights": weights}


def _attn_masked(namespace, arrays, params):
    """forward with the given weights and valid_lens: output and .attention_weights; then the output again
    with the keys and values that every query of a sequence masks replaced by other contents."""
    module = _attention(namespace, params, arrays)
    output, weights = _run_attention(module, arrays)
    lens = arrays["valid_lens"].reshape(arrays["valid_lens"].shape[0], -1).max(axis=1)     # (batch,)
    keys, values = arrays["keys"].copy(), arrays["values"].copy()
    for b, length in enumerate(lens):
        keys[b, length:], values[b, length:] = arrays["other_keys"][b, length:], arrays["other_values"][b, length:]
    other, _ = _run_attention(module, {**arrays, "keys": keys, "values": values})
    return {"output": output, "attention_weights": weights, "output_other_masked": other}


def _attn_gradient(namespace, arrays, params):
    """The gradients of sum(output * G) reaching rel_k and rel_v (zeros if none), and whether each table is
    among the module's parameters (1) or not (0)."""
    module = _attention(namespace, params, arrays)
    module.train()                               # dropout is 0: train mode changes nothing but autograd's use
    with torch.enable_grad():
        output = module(as_tensor(arrays["queries"]), as_tensor(arrays["keys"]), as_tensor(arrays["values"]))
        loss = (output * as_tensor(arrays["G"]).to(output.dtype)).sum()
        if loss.requires_grad:
            loss.backward()
    result, owned = {}, {id(p) for p in module.parameters()}
    for name in ("rel_k", "rel_v"):
        table = table_of(getattr(module, name), name)
        result[f"{name}_grad"] = floats(table.grad if table.grad is not None else torch.zeros_like(table),
                                        f"the gradient of {name}")
        result[f"{name}_is_parameter"] = ints(int(id(table) in owned))
    return result


def _attn_defaults(namespace, arrays, params):
    """Which of W_q..W_o have a bias (1) or not (0) when the module is built without ``bias``."""
    cls = lookup(namespace, "RelativeMultiHeadAttention")
    module = cls(params["num_hiddens"], params["num_heads"], 0.0, params["max_distance"])
    flags = []
    for name in _LINEARS:
        linear = getattr(module, name, None)
        if not isinstance(getattr(linear, "weight", None), torch.Tensor):
            raise AttributeError(f"the module needs an nn.Linear attribute {name}")
        flags.append(int(isinstance(getattr(linear, "bias", None), torch.Tensor)))
    return {"has_bias": ints(flags)}


def _attn_dropout(namespace, arrays, params):
    """dropout=0.5: the output in eval mode, then ``samples`` outputs in train mode (seeded)."""
    cls = lookup(namespace, "RelativeMultiHeadAttention")
    module = _attention(namespace, params, arrays)
    dropping = cls(params["num_hiddens"], params["num_heads"], 0.5, params["max_distance"],
                   bias=params.get("bias", False))
    dropping.load_state_dict(module.state_dict())
    inputs = [as_tensor(arrays[key]) for key in ("queries", "keys", "values")]
    with torch.no_grad():
        dropping.eval()
        eval_output = floats(dropping(*inputs), "the output in eval mode")
        dropping.train()
        torch.manual_seed(params["seed"])
        train = torch.stack([tensor_of(dropping(*inputs), "the output in train mode")
                             for _ in range(params["samples"])])
    return {"eval_output": eval_output, "train_outputs": floats(train, "the outputs in train mode")}


def _attn_shift(namespace, arrays, params):
    """Self-attention weights and output for X, the output again with one value vector changed, then the weights
    for Y = [prefix; X] (X shifted by len(prefix))."""
    module = _attention(namespace, params, arrays)
    X = as_tensor(arrays["X"])
    Y = torch.cat([as_tensor(arrays["prefix"]), X], dim=1)          # (1, shift + n, num_hiddens)
    other = X.clone()
    other[:, params["changed"]] = as_tensor(arrays["other_value"])             # one value vector changed
    with torch.no_grad():
        output_X = floats(module(X, X, X), "the output for X")
        weights_X = _weights_of(module)
        output_other = floats(module(X, X, other), "the output for X with one value vector changed")
        module(Y, Y, Y)
        weights_Y = _weights_of(module)
    return {"weights_X": weights_X, "weights_Y": weights_Y, "output_X": output_X, "output_other": output_other}


# ---------------------------------------------------------------------------------------------------
# Problem set 2: skew(X), causal_relative_attention_naive / causal_relative_attention

def _skew(namespace, arrays, keys, dtype=torch.float32, keep_dtype=False):
    function = lookup(namespace, "skew")
    convert = native if keep_dtype else floats
    return {f"output_{key}": convert(function(as_tensor(arrays[key], dtype)), f"skew(X) for X = {key}")
            for key in keys}


def _skew_outputs(namespace, arrays, params):
    """skew(X) for every array given, float32."""
    return _skew(namespace, arrays, sorted(arrays))


def _skew_float64(namespace, arrays, params):
    """skew(X) for a float64 X, in the dtype it was returned."""
    return _skew(namespace, arrays, ["X"], dtype=torch.float64, keep_dtype=True)


def _skew_unchanged(namespace, arrays, params):
    """X as it is after calling skew(X), and what skew(X) returned."""
    X = as_tensor(arrays["X"])
    output = floats(lookup(namespace, "skew")(X), "skew(X)")
    return {"input_after": floats(X, "X after skew(X)"), "output": output}


_CAUSAL = {"naive": "causal_relative_attention_naive", "skewed": "causal_relative_attention"}


def _causal(namespace, which, arrays, suffix=""):
    """(output, weights) of one of the two causal functions on queries, keys, values, rel_k."""
    name = _CAUSAL[which]
    function = lookup(namespace, name)
    inputs = [as_tensor(arrays[f"{key}{suffix}"]) for key in ("queries", "keys", "values", "rel_k")]
    with torch.no_grad():
        result = function(*inputs)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise TypeError(f"{name} should return a pair (output, weights), got {type(result).__name__}")
    return result


def _causal_pair(namespace, arrays, params, which=("naive", "skewed"), suffix=""):
    result = {}
    for version in which:
        output, weights = _causal(namespace, version, arrays, suffix)
        result[f"{version}_output{suffix}"] = floats(output, f"{_CAUSAL[version]}: output")
        result[f"{version}_weights{suffix}"] = floats(weights, f"{_CAUSAL[version]}: weights")
    return result


def _causal_both(namespace, arrays, params):
    """Both versions on the same inputs: outputs and weights (and the same on the "_one" inputs when given)."""
    result = _causal_pair(namespace, arrays, params)
    if "queries_one" in arrays:
        result.update(_causal_pair(namespace, arrays, params, suffix="_one"))
    return result


def _causal_skewed(namespace, arrays, params):
    """The skewed version only: output and weights."""
    return _causal_pair(namespace, arrays, params, which=("skewed",))


def _causal_lengths(which):
    def probe(namespace, arrays, params):
        result = {}
        for length in params["lengths"]:
            output, weights = _causal(namespace, which, arrays, suffix=f"_{length}")
            result[f"output_{length}"] = floats(output, f"{_CAUSAL[which]}: output, L = {length}")
            result[f"weights_{length}"] = floats(weights, f"{_CAUSAL[which]}: weights, L = {length}")
        return result
    probe.__doc__ = f"{_CAUSAL[which]} for every length L given: output and weights."
    return probe


def _causal_memory(namespace, arrays, params):
    """The skewed version at a long length: the output and weight rows asked for.

    The grader runs this under a memory cap that an (L, L, d) tensor would exceed.
    """
    function = lookup(namespace, "causal_relative_attention")
    queries, keys, values = (as_tensor(arrays[key]) for key in ("queries", "keys", "values"))
    rel_k = as_tensor(arrays["rel_k"])                                             # (L, head_dim)
    rows = as_long(arrays["rows"])
    with torch.no_grad():
        result = function(queries, keys, values, rel_k)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise TypeError("causal_relative_attention should return a pair (output, weights)")
        output, weights = (tensor_of(x, what, limit=None) for x, what in zip(result, ("output", "weights")))
        del result
        shapes = ints([tuple(output.shape), tuple(weights.shape)]) if output.dim() == weights.dim() == 3 \
            else ints([[-1, -1, -1], [-1, -1, -1]])
        output_rows = floats(output[0, rows], "output rows")
        weight_rows = floats(weights[0, rows], "weight rows")
    return {"shapes": shapes, "output_rows": output_rows, "weight_rows": weight_rows}


# The probes in the order they run.
PROBES = [
    probe("index_dtype", "test_index", _index_cases),
    probe("index_example", "test_index", _index_cases),
    probe("index_edge", "test_index", _index_cases),
    probe("index_cases", "test_index", _index_cases),
    probe("attn_tables", "test_rel_attention", _attn_tables),
    probe("attn_self_shape", "test_rel_attention", _attn_output),
    probe("attn_cross_shape", "test_rel_attention", _attn_output),
    probe("attn_weights_shape", "test_rel_attention", _attn_weights),
    probe("attn_mask_batch", "test_rel_attention", _attn_masked),
    probe("attn_self_parity", "test_rel_attention", _attn_loaded),
    probe("attn_cross_parity", "test_rel_attention", _attn_loaded),
    probe("attn_zero_distance", "test_rel_attention", _attn_loaded),
    probe("attn_worked", "test_rel_attention", _attn_loaded),
    probe("attn_gradient", "test_rel_attention", _attn_gradient),
    probe("attn_defaults", "test_rel_attention", _attn_defaults),
    probe("attn_dropout", "test_rel_attention", _attn_dropout),
    probe("attn_empty_rows", "test_rel_attention", _attn_loaded),
    probe("attn_one_head", "test_rel_attention", _attn_loaded),
    probe("attn_shift", "test_rel_attention", _attn_shift),
    probe("attn_mask_rows", "test_rel_attention", _attn_masked),
    probe("skew_shape", "test_skew", _skew_outputs),
    probe("skew_example", "test_skew", _skew_outputs),
    probe("skew_gather", "test_skew", _skew_outputs),
    probe("skew_unchanged", "test_skew", _skew_unchanged),
    probe("skew_float64", "test_skew", _skew_float64),
    probe("causal_shapes", "test_causal", _causal_both),
    probe("causal_skewed_mask", "test_causal", _causal_skewed),
    probe("causal_agree", "test_causal", _causal_both),
    probe("causal_worked", "test_causal", _causal_both),
    probe("causal_naive_parity", "test_causal", _causal_lengths("naive")),
    probe("causal_skewed_parity", "test_causal", _causal_lengths("skewed")),
    probe("causal_memory", "test_causal", _causal_memory),
]

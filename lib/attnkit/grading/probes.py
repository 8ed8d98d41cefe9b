"""Probes: how the grader calls a submission's public API, one probe per hidden or visible check.

A probe runs inside the sandbox, after the notebook's cells, in the notebook's namespace. It looks the
student's function or class up by the name the exercise fixes, builds it, loads the weights it is
given through the interface the exercise text fixes (``parameters()``, ``W_q``..``W_o``, ``rel_k``,
``rel_v``), runs it on the inputs it is given and returns plain numbers: ``{key: numpy.ndarray}`` of a
numeric or boolean dtype, freshly copied, never an object of the student's.

Probes decide nothing. The inputs come from the trusted grader, fresh for every submission, and the
outputs go back to it: the grader compares them with the reference solution in a process that never
ran student code (``attnkit.solutions.judges``, not shipped to students). There is no reference code
and no expected value in this file, so reading it tells a student only how the API is called, which
the exercise text already says.

``PROBES[assignment]`` lists the probes in the order they run. A probe that raises is recorded as
failed with its exception; the others still run. The memory probe of problem set 2 comes last: it
runs at a length where only the O(L d) skewed path fits under the sandbox's memory cap.
"""

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from attnkit.checking import load_table, single_parameter, table_of

__all__ = ["PROBES", "Probe", "run_here"]

# No probe returns more than this many numbers per array; a larger result is an error, not data.
MAX_ELEMENTS = 4_000_000

_NATIVE = {torch.bool: np.bool_, torch.uint8: np.uint8, torch.int8: np.int8, torch.int16: np.int16,
           torch.int32: np.int32, torch.int64: np.int64, torch.float16: np.float16,
           torch.bfloat16: np.float32, torch.float32: np.float32, torch.float64: np.float64}


@dataclass(frozen=True)
class Probe:
    """One call of the student's API: ``run(namespace, arrays, params) -> {key: numpy.ndarray}``."""

    name: str
    grade_id: str
    function: Callable = field(repr=False)
    description: str = ""

    def run(self, namespace, arrays, params):
        """Run the probe; every value returned is a fresh numpy array of a numeric or boolean dtype."""
        result = self.function(namespace, arrays, params)
        clean = {}
        for key, value in result.items():
            if type(value) is not np.ndarray or value.dtype.kind not in "biuf":
                raise TypeError(f"probe {self.name} produced {key!r} of type {type(value).__name__}")
            clean[str(key)] = np.array(value, copy=True)
        return clean


# ---------------------------------------------------------------------------------------------------
# Conversions between the grader's numpy arrays and torch tensors for the student's code

def _lookup(namespace, name):
    """The object the notebook defined under ``name``."""
    if name not in namespace:
        raise NameError(f"name '{name}' is not defined: the cell that defines it did not run or failed")
    return namespace[name]


def _tensor(array, dtype=torch.float32):
    """A fresh tensor from one of the grader's arrays (float32 unless told)."""
    return torch.from_numpy(np.array(array, dtype=np.float64, copy=True)).to(dtype)


def _long(array):
    return torch.from_numpy(np.array(array, dtype=np.int64, copy=True))


def _tensor_of(value, what, limit=MAX_ELEMENTS):
    """``value`` as a plain detached CPU tensor; TypeError unless the student returned a tensor.

    Base-class methods with subclass dispatch off: a tensor subclass's overrides do not run here.
    """
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{what} should be a torch.Tensor, got {type(value).__name__}")
    with torch.no_grad(), torch._C.DisableTorchFunctionSubclass():
        plain = torch.Tensor.detach(value)
        if type(plain) is not torch.Tensor:
            plain = plain.as_subclass(torch.Tensor)
        plain = torch.Tensor.cpu(plain)
        if plain.is_sparse:
            plain = plain.to_dense()
        if limit is not None and plain.numel() > limit:
            raise ValueError(f"{what} has {plain.numel()} elements, far more than expected")
        return plain.resolve_conj().resolve_neg()


def _floats(value, what):
    """A fresh float64 array of the numbers in the student's tensor."""
    plain = _tensor_of(value, what)
    if plain.is_complex():
        raise TypeError(f"{what} should be real, got dtype {plain.dtype}")
    return np.array(plain.to(torch.float64).numpy(), dtype=np.float64, copy=True)


def _native(value, what):
    """A fresh array in the student's own dtype (for checks that the dtype is right)."""
    plain = _tensor_of(value, what)
    if plain.dtype not in _NATIVE:
        raise TypeError(f"{what} has dtype {plain.dtype}, which is not a real number type")
    target = _NATIVE[plain.dtype]
    if plain.dtype == torch.bfloat16:
        plain = plain.float()
    return np.array(plain.numpy(), dtype=target, copy=True)


def _ints(values):
    return np.array(values, dtype=np.int64)


# ---------------------------------------------------------------------------------------------------
# Problem set 1: LearnablePositionalEncoding(num_hiddens, dropout, max_len=1000)

def _positional(namespace, params, dropout=0.0, table=None):
    """The student's module built from params, with ``table`` loaded into its only parameter."""
    cls = _lookup(namespace, "LearnablePositionalEncoding")
    module = cls(params["num_hiddens"], dropout, max_len=params["max_len"])
    if table is not None:
        load_table(single_parameter(module), _tensor(table))
    return module


def _pe_parameters(namespace, arrays, params):
    """How many parameters, their shapes, and the table read back after loading the given values."""
    module = _positional(namespace, params)
    found = list(module.parameters())
    shapes = np.full((min(len(found), 16), 4), -1, dtype=np.int64)
    for row, parameter in zip(shapes, found):
        size = tuple(parameter.shape)[:4]
        row[:len(size)] = size
    result = {"count": _ints(len(found)), "shapes": shapes}
    if len(found) == 1 and tuple(found[0].shape) == tuple(arrays["table"].shape):
        load_table(found[0], _tensor(arrays["table"]))
        result["table"] = _floats(next(iter(module.parameters())), "the table after loading")
    return result


def _pe_trainable(namespace, arrays, params):
    """One SGD step on loss = sum(P * direction), taken on the module's only parameter P."""
    module = _positional(namespace, params, table=arrays["table"])
    table = single_parameter(module)
    optimizer = torch.optim.SGD([table], lr=params["lr"])
    optimizer.zero_grad()
    with torch.enable_grad():
        loss = (table * _tensor(arrays["direction"]).to(table.dtype)).sum()
        if loss.requires_grad:               # a frozen table: nothing to differentiate, nothing moves
            loss.backward()
    optimizer.step()
    return {"table": _floats(table, "the table after one SGD step")}


def _pe_gradient(namespace, arrays, params):
    """The table's gradient of loss = sum(pe(X) * G) (train mode, dropout 0); zeros when none arrives."""
    module = _positional(namespace, params, table=arrays["table"])
    table = single_parameter(module)
    module.train()
    with torch.enable_grad():
        output = module(_tensor(arrays["X"]))
        loss = (output * _tensor(arrays["G"]).to(output.dtype)).sum()
        if loss.requires_grad:
            loss.backward()
    grad = table.grad if table.grad is not None else torch.zeros_like(table)
    return {"grad": _floats(grad, "the gradient of the table")}


def _pe_forward(namespace, arrays, params, table=None):
    module = _positional(namespace, params, table=table)
    module.eval()
    with torch.no_grad():
        return _floats(module(_tensor(arrays["X"])), "pe(X)")


def _pe_shape(namespace, arrays, params):
    """pe(X) in eval mode with the module's own initial table."""
    return {"output": _pe_forward(namespace, arrays, params)}


def _pe_known_table(namespace, arrays, params):
    """pe(X) in eval mode with the given table loaded."""
    return {"output": _pe_forward(namespace, arrays, params, table=arrays["table"])}


def _pe_too_long(namespace, arrays, params):
    """pe(X) for n = max_len (must work), then n = max_len + 1: outcome 1 = ValueError, 0 = returned,
    2 = another exception."""
    module = _positional(namespace, params, table=arrays["table"])
    module.eval()
    with torch.no_grad():
        boundary = _floats(module(_tensor(arrays["X_boundary"])), "pe(X) with n = max_len")
        try:
            module(_tensor(arrays["X_long"]))
            outcome = 0
        except ValueError:
            outcome = 1
        except Exception:                    # noqa: BLE001 - any other exception is outcome 2
            outcome = 2
    return {"boundary_output": boundary, "outcome": _ints(outcome)}


def _pe_parity(namespace, arrays, params):
    """pe(X) in eval mode for several shapes, each with its own table."""
    result = {}
    for case, (batch, num_steps, num_hiddens, max_len) in enumerate(params["cases"]):
        sizes = {"num_hiddens": num_hiddens, "max_len": max_len}
        result[f"output_{case}"] = _pe_forward(namespace, {"X": arrays[f"X_{case}"]}, sizes,
                                               table=arrays[f"table_{case}"])
    return result


def _pe_dropout(namespace, arrays, params):
    """pe(X) with dropout 0.5 in train mode (seeded), then in eval mode."""
    module = _positional(namespace, params, dropout=0.5, table=arrays["table"])
    X = _tensor(arrays["X"])
    module.train()
    torch.manual_seed(params["seed"])
    with torch.no_grad():
        train_output = _floats(module(X), "pe(X) in train mode")
        module.eval()
        eval_output = _floats(module(X), "pe(X) in eval mode")
    return {"train_output": train_output, "eval_output": eval_output}


# ---------------------------------------------------------------------------------------------------
# Problem set 2: relative_position_index(num_queries, num_keys, max_distance)

def _index_cases(namespace, arrays, params):
    """The index for every (num_queries, num_keys, max_distance) case, in the dtype it was returned."""
    function = _lookup(namespace, "relative_position_index")
    return {f"index_{case}": _native(function(q, n, k), f"relative_position_index({q}, {n}, {k})")
            for case, (q, n, k) in enumerate(params["cases"])}


# ---------------------------------------------------------------------------------------------------
# Problem set 2: RelativeMultiHeadAttention(num_hiddens, num_heads, dropout, max_distance, bias=False)

_LINEARS = ("W_q", "W_k", "W_v", "W_o")


def _attention(namespace, params, arrays=None):
    """The student's module built from params; with ``arrays``, the given weights loaded; eval mode."""
    cls = _lookup(namespace, "RelativeMultiHeadAttention")
    module = cls(params["num_hiddens"], params["num_heads"], 0.0, params["max_distance"],
                 bias=params.get("bias", False))
    if arrays is not None:
        for name in _LINEARS:
            linear = getattr(module, name, None)
            if linear is None or not isinstance(getattr(linear, "weight", None), torch.Tensor):
                raise AttributeError(f"the module needs an nn.Linear attribute {name}")
            load_table(linear.weight, _tensor(arrays[f"{name}.weight"]))
            if f"{name}.bias" in arrays:
                if getattr(linear, "bias", None) is None:
                    raise AttributeError(f"{name} has no bias although the module was built with bias=True")
                load_table(linear.bias, _tensor(arrays[f"{name}.bias"]))
        for name in ("rel_k", "rel_v"):
            if not hasattr(module, name):
                raise AttributeError(f"the module needs an attribute {name} (nn.Embedding or nn.Parameter)")
            load_table(table_of(getattr(module, name), name), _tensor(arrays[name]))
    module.eval()
    return module


def _weights_of(module):
    weights = getattr(module, "attention_weights", None)
    if weights is None:
        raise AttributeError("the module must keep its attention weights in .attention_weights after forward")
    return _floats(weights, "attention_weights")


def _run_attention(module, arrays, queries="queries", keys="keys", values="values"):
    """forward(queries, keys, values[, valid_lens]) without autograd: (output, attention_weights)."""
    valid_lens = _long(arrays["valid_lens"]) if "valid_lens" in arrays else None
    with torch.no_grad():
        output = module(_tensor(arrays[queries]), _tensor(arrays[keys]), _tensor(arrays[values]), valid_lens)
    return _floats(output, "the output"), _weights_of(module)


def _attn_tables(namespace, arrays, params):
    """Shapes of rel_k and rel_v, and both read back after loading the given tables."""
    module = _attention(namespace, params)
    result = {}
    for name in ("rel_k", "rel_v"):
        if not hasattr(module, name):
            raise AttributeError(f"the module needs an attribute {name} (nn.Embedding or nn.Parameter)")
        table = table_of(getattr(module, name), name)
        result[f"{name}_shape"] = _ints(tuple(table.shape)[:4])
        if tuple(table.shape) == tuple(arrays[name].shape):
            load_table(table, _tensor(arrays[name]))
            result[name] = _floats(table_of(getattr(module, name), name), f"{name} after loading")
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


def _attn_shift(namespace, arrays, params):
    """Self-attention weights for X, then for Y = [prefix; X] (X shifted by len(prefix) positions)."""
    module = _attention(namespace, params, arrays)
    X = _tensor(arrays["X"])
    Y = torch.cat([_tensor(arrays["prefix"]), X], dim=1)          # (1, shift + n, num_hiddens)
    with torch.no_grad():
        module(X, X, X)
        weights_X = _weights_of(module)
        module(Y, Y, Y)
        weights_Y = _weights_of(module)
    return {"weights_X": weights_X, "weights_Y": weights_Y}


# ---------------------------------------------------------------------------------------------------
# Problem set 2: skew(X), causal_relative_attention_naive / causal_relative_attention

def _skew(namespace, arrays, keys, dtype=torch.float32, native=False):
    function = _lookup(namespace, "skew")
    convert = _native if native else _floats
    return {f"output_{key}": convert(function(_tensor(arrays[key], dtype)), f"skew(X) for X = {key}")
            for key in keys}


def _skew_outputs(namespace, arrays, params):
    """skew(X) for every array given, float32."""
    return _skew(namespace, arrays, sorted(arrays))


def _skew_float64(namespace, arrays, params):
    """skew(X) for a float64 X, in the dtype it was returned."""
    return _skew(namespace, arrays, ["X"], dtype=torch.float64, native=True)


def _skew_unchanged(namespace, arrays, params):
    """X as it is after calling skew(X), and what skew(X) returned."""
    X = _tensor(arrays["X"])
    output = _floats(_lookup(namespace, "skew")(X), "skew(X)")
    return {"input_after": _floats(X, "X after skew(X)"), "output": output}


_CAUSAL = {"naive": "causal_relative_attention_naive", "skewed": "causal_relative_attention"}


def _causal(namespace, which, arrays, suffix=""):
    """(output, weights) of one of the two causal functions on queries, keys, values, rel_k."""
    name = _CAUSAL[which]
    function = _lookup(namespace, name)
    inputs = [_tensor(arrays[f"{key}{suffix}"]) for key in ("queries", "keys", "values", "rel_k")]
    with torch.no_grad():
        result = function(*inputs)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise TypeError(f"{name} should return a pair (output, weights), got {type(result).__name__}")
    return result


def _causal_pair(namespace, arrays, params, which=("naive", "skewed")):
    result = {}
    for version in which:
        output, weights = _causal(namespace, version, arrays)
        result[f"{version}_output"] = _floats(output, f"{_CAUSAL[version]}: output")
        result[f"{version}_weights"] = _floats(weights, f"{_CAUSAL[version]}: weights")
    return result


def _causal_both(namespace, arrays, params):
    """Both versions on the same inputs: outputs and weights."""
    return _causal_pair(namespace, arrays, params)


def _causal_skewed(namespace, arrays, params):
    """The skewed version only: output and weights."""
    return _causal_pair(namespace, arrays, params, which=("skewed",))


def _causal_lengths(which):
    def probe(namespace, arrays, params):
        result = {}
        for length in params["lengths"]:
            output, weights = _causal(namespace, which, arrays, suffix=f"_{length}")
            result[f"output_{length}"] = _floats(output, f"{_CAUSAL[which]}: output, L = {length}")
            result[f"weights_{length}"] = _floats(weights, f"{_CAUSAL[which]}: weights, L = {length}")
        return result
    probe.__doc__ = f"{_CAUSAL[which]} for every length L given: output and weights."
    return probe


def _causal_memory(namespace, arrays, params):
    """The skewed version at a long length (every row of rel_k equal): the output and weight rows asked for.

    The grader runs this under a memory cap that an (L, L, d) tensor would exceed.
    """
    function = _lookup(namespace, "causal_relative_attention")
    length, head_dim = params["length"], params["head_dim"]
    queries, keys, values = (_tensor(arrays[key]) for key in ("queries", "keys", "values"))
    rel_k = _tensor(arrays["rel_k_row"]).reshape(1, head_dim).repeat(length, 1)   # (L, head_dim)
    rows = _long(arrays["rows"])
    with torch.no_grad():
        result = function(queries, keys, values, rel_k)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise TypeError("causal_relative_attention should return a pair (output, weights)")
        output, weights = (_tensor_of(x, what, limit=None) for x, what in zip(result, ("output", "weights")))
        del result
        shapes = _ints([tuple(output.shape), tuple(weights.shape)]) if output.dim() == weights.dim() == 3 \
            else _ints([[-1, -1, -1], [-1, -1, -1]])
        output_rows = _floats(output[0, rows], "output rows")
        weight_rows = _floats(weights[0, rows], "weight rows")
    return {"shapes": shapes, "output_rows": output_rows, "weight_rows": weight_rows}


# ---------------------------------------------------------------------------------------------------

def _plain_copy(value):
    """A fresh copy of JSON-like params (dicts, lists, numbers, strings)."""
    if isinstance(value, dict):
        return {key: _plain_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain_copy(item) for item in value]
    return value


def run_here(namespace, assignment, inputs, names=None):
    """({probe: outputs}, {probe: "TypeName: message"}): the probes of ``assignment`` (only those in
    ``names``, if given) run in this process, each on fresh copies of its inputs; one that raises is
    recorded and the others still run.

    For callers that run student code in their own process (plain nbgrader's kernel, the tests); the
    sandbox's runner adds time limits, output caps and reaping around each probe instead.
    """
    outputs, errors = {}, {}
    for probe in PROBES[assignment]:
        if names is not None and probe.name not in names:
            continue
        entry = inputs[probe.name]
        arrays = {key: np.array(value, copy=True) for key, value in entry["arrays"].items()}
        try:
            outputs[probe.name] = probe.run(namespace, arrays, _plain_copy(entry["params"]))
        except Exception as exc:     # noqa: BLE001 - recorded for the judge, as the runner does
            errors[probe.name] = f"{type(exc).__name__}: {exc}"
    return outputs, errors


def _probe(name, grade_id, function):
    return Probe(name, grade_id, function, (function.__doc__ or "").strip().splitlines()[0])


PROBES = {
    "ps1_learnable_pe": [
        _probe("pe_parameters", "test_pe_table", _pe_parameters),
        _probe("pe_trainable", "test_pe_table", _pe_trainable),
        _probe("pe_gradient", "test_pe_table", _pe_gradient),
        _probe("pe_shape", "test_pe_forward", _pe_shape),
        _probe("pe_known_table", "test_pe_forward", _pe_known_table),
        _probe("pe_too_long", "test_pe_forward", _pe_too_long),
        _probe("pe_parity", "test_pe_forward", _pe_parity),
        _probe("pe_dropout", "test_pe_forward", _pe_dropout),
    ],
    "ps2_relative_pe": [
        _probe("index_dtype", "test_index", _index_cases),
        _probe("index_example", "test_index", _index_cases),
        _probe("index_cases", "test_index", _index_cases),
        _probe("attn_tables", "test_rel_attention", _attn_tables),
        _probe("attn_self_shape", "test_rel_attention", _attn_output),
        _probe("attn_cross_shape", "test_rel_attention", _attn_output),
        _probe("attn_weights_shape", "test_rel_attention", _attn_weights),
        _probe("attn_mask_batch", "test_rel_attention", _attn_weights),
        _probe("attn_self_parity", "test_rel_attention", _attn_loaded),
        _probe("attn_cross_parity", "test_rel_attention", _attn_loaded),
        _probe("attn_zero_distance", "test_rel_attention", _attn_loaded),
        _probe("attn_shift", "test_rel_attention", _attn_shift),
        _probe("attn_mask_rows", "test_rel_attention", _attn_loaded),
        _probe("skew_shape", "test_skew", _skew_outputs),
        _probe("skew_example", "test_skew", _skew_outputs),
        _probe("skew_gather", "test_skew", _skew_outputs),
        _probe("skew_unchanged", "test_skew", _skew_unchanged),
        _probe("skew_float64", "test_skew", _skew_float64),
        _probe("causal_shapes", "test_causal", _causal_both),
        _probe("causal_skewed_mask", "test_causal", _causal_skewed),
        _probe("causal_agree", "test_causal", _causal_both),
        _probe("causal_naive_parity", "test_causal", _causal_lengths("naive")),
        _probe("causal_skewed_parity", "test_causal", _causal_lengths("skewed")),
        _probe("causal_memory", "test_causal", _causal_memory),
    ],
}

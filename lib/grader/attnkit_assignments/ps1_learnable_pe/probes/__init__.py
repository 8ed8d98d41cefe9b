"""Probes of problem set 1, run inside the sandbox: how the grader calls LearnablePositionalEncoding.

Staged into every sandbox (see attnkit_sandbox.probing): no reference code and no expected value here.
"""

import numpy as np
import torch

from attnkit.checking import load_table, single_parameter, table_tensor
from attnkit_sandbox.probing import as_tensor, floats, ints, lookup, probe

def _positional(namespace, params, dropout=0.0, table=None):
    """The student's module built from params, with ``table`` loaded into its only parameter."""
    cls = lookup(namespace, "LearnablePositionalEncoding")
    module = cls(params["num_hiddens"], dropout, max_len=params["max_len"])
    if table is not None:
        load_table(table_tensor(module, (params["max_len"], params["num_hiddens"])), as_tensor(table))
    return module


def _pe_parameters(namespace, arrays, params):
    """How many parameters, their shapes, and the table read back after loading the given values."""
    module = _positional(namespace, params)
    found = list(module.parameters())
    shapes = np.full((min(len(found), 16), 4), -1, dtype=np.int64)
    for row, parameter in zip(shapes, found):
        size = tuple(parameter.shape)[:4]
        row[:len(size)] = size
    result = {"count": ints(len(found)), "shapes": shapes}
    if len(found) == 1 and tuple(found[0].shape) == tuple(arrays["table"].shape):
        load_table(found[0], as_tensor(arrays["table"]))
        result["table"] = floats(next(iter(module.parameters())), "the table after loading")
    return result


def _pe_default(namespace, arrays, params):
    """The shapes of the parameters of a module built without max_len (the default applies)."""
    module = lookup(namespace, "LearnablePositionalEncoding")(params["num_hiddens"], 0.0)
    found = list(module.parameters())
    shapes = np.full((min(len(found), 16), 4), -1, dtype=np.int64)
    for row, parameter in zip(shapes, found):
        size = tuple(parameter.shape)[:4]
        row[:len(size)] = size
    return {"count": ints(len(found)), "shapes": shapes}


def _pe_trainable(namespace, arrays, params):
    """One SGD step on loss = sum(P * direction), taken on the module's only parameter P."""
    module = _positional(namespace, params, table=arrays["table"])
    table = single_parameter(module)
    optimizer = torch.optim.SGD([table], lr=params["lr"])
    optimizer.zero_grad()
    with torch.enable_grad():
        loss = (table * as_tensor(arrays["direction"]).to(table.dtype)).sum()
        if loss.requires_grad:               # a frozen table: nothing to differentiate, nothing moves
            loss.backward()
    optimizer.step()
    return {"table": floats(table, "the table after one SGD step")}


def _pe_gradient(namespace, arrays, params):
    """The table's gradient of loss = sum(pe(X) * G) (train mode, dropout 0; zeros when none arrives), and
    pe(X) itself."""
    module = _positional(namespace, params, table=arrays["table"])
    table = table_tensor(module, arrays["table"].shape)
    module.train()
    torch.manual_seed(params["seed"])
    with torch.enable_grad():
        output = module(as_tensor(arrays["X"]))
        loss = (output * as_tensor(arrays["G"]).to(output.dtype)).sum()
        if loss.requires_grad:
            loss.backward()
    grad = table.grad if table.grad is not None else torch.zeros_like(table)
    return {"grad": floats(grad, "the gradient of the table"), "output": floats(output, "pe(X) in train mode")}


def _pe_forward(namespace, arrays, params, table=None):
    module = _positional(namespace, params, table=table)
    module.eval()
    with torch.no_grad():
        return floats(module(as_tensor(arrays["X"])), "pe(X)")


def _pe_shape(namespace, arrays, params):
    """pe(X) in eval mode with the module's own initial table."""
    return {"output": _pe_forward(namespace, arrays, params)}


def _pe_known_table(namespace, arrays, params):
    """pe(X) in eval mode with the given table loaded."""
    return {"output": _pe_forward(namespace, arrays, params, table=arrays["table"])}


def _pe_edge(namespace, arrays, params):
    """pe(X) in eval mode at the smallest sizes (num_hiddens = 1, max_len = n = 1), the given table loaded."""
    return {"output": _pe_forward(namespace, arrays, params, table=arrays["table"])}


def _pe_too_long(namespace, arrays, params):
    """pe(X) for n = max_len (must work), then n = max_len + 1: outcome 1 = ValueError, 0 = returned,
    2 = another exception."""
    module = _positional(namespace, params, table=arrays["table"])
    module.eval()
    with torch.no_grad():
        boundary = floats(module(as_tensor(arrays["X_boundary"])), "pe(X) with n = max_len")
        try:
            module(as_tensor(arrays["X_long"]))
            outcome = 0
        except ValueError:
            outcome = 1
        except Exception:                    # noqa: BLE001 - any other exception is outcome 2
            outcome = 2
    return {"boundary_output": boundary, "outcome": ints(outcome)}


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
    X = as_tensor(arrays["X"])
    module.train()
    torch.manual_seed(params["seed"])
    with torch.no_grad():
        train_output = floats(module(X), "pe(X) in train mode")
        module.eval()
        eval_output = floats(module(X), "pe(X) in eval mode")
    return {"train_output": train_output, "eval_output": eval_output}


# The probes in the order they run.
PROBES = [
    probe("pe_parameters", "test_pe_table", _pe_parameters),
    probe("pe_default", "test_pe_table", _pe_default),
    probe("pe_trainable", "test_pe_table", _pe_trainable),
    probe("pe_gradient", "test_pe_table", _pe_gradient),
    probe("pe_shape", "test_pe_forward", _pe_shape),
    probe("pe_known_table", "test_pe_forward", _pe_known_table),
    probe("pe_edge", "test_pe_forward", _pe_edge),
    probe("pe_too_long", "test_pe_forward", _pe_too_long),
    probe("pe_parity", "test_pe_forward", _pe_parity),
    probe("pe_dropout", "test_pe_forward", _pe_dropout),
]

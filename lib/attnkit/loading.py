"""Reading and loading the weights of a student's module through its public interface, for the visible checks
(:mod:`attnkit.checking` re-exports them, where the test cells import them) and the grader's probes."""

import torch
from torch import nn

from .expectations import CheckFailed, expect_shape
from .i18n import Text

__all__ = ["load_table", "single_parameter", "table_of", "table_tensor"]


def single_parameter(module):
    """The module's only parameter; CheckFailed unless it has exactly one."""
    params = list(module.parameters())
    if len(params) != 1:
        shapes = [tuple(p.shape) for p in params]
        raise CheckFailed(Text("the module should have exactly one parameter (the table), found {count} with shapes "
                               "{shapes}; a buffer or a plain tensor attribute is not a parameter",
                               count=len(params), shapes=shapes))
    return params[0]


def table_tensor(module, shape, what="the table"):
    """The tensor of ``shape`` to load a table into: the module's only parameter when it has that shape,
    else the one parameter, buffer or plain tensor attribute of that shape. Checks of the values can
    then run even where the table is stored the wrong way (the checks of the parameter say so)."""
    shape = tuple(shape)
    params = list(module.parameters())
    if len(params) == 1 and tuple(params[0].shape) == shape:
        return params[0]
    seen, found = set(), []
    for tensor in [*params, *module.buffers(), *(v for v in vars(module).values() if isinstance(v, torch.Tensor))]:
        if tuple(tensor.shape) == shape and id(tensor) not in seen:
            seen.add(id(tensor))
            found.append(tensor)
    if len(found) != 1:
        raise CheckFailed(Text("{what}: the module should hold one tensor of shape {shape} (its parameter), found "
                               "{count}", what=what, shape=shape, count=len(found)))
    return found[0]


def table_of(obj, what):
    """The weight tensor of an nn.Embedding, or the tensor itself for an nn.Parameter/tensor."""
    if isinstance(obj, nn.Embedding):
        return obj.weight
    if isinstance(obj, torch.Tensor):
        return obj
    raise CheckFailed(Text("{what} should be an nn.Embedding or an nn.Parameter, got {type}", what=what,
                           type=type(obj).__name__))


def load_table(destination, source):
    """Copy ``source`` into the parameter ``destination`` in place (shapes must match)."""
    expect_shape(destination, source.shape, Text("the table to load into"))
    with torch.no_grad():
        destination.copy_(source.to(destination.dtype))

"""Probes: how the grader calls a submission's public API, one probe per hidden or visible check.

A probe runs inside the sandbox, after the notebook's cells, in the notebook's namespace. It looks the
student's function or class up by the name the exercise fixes, builds it, loads the weights it is
given through the interface the exercise text fixes (``parameters()``, ``W_q``..``W_o``, ``rel_k``,
``rel_v``), runs it on the inputs it is given and returns plain numbers: ``{key: numpy.ndarray}`` of a
numeric or boolean dtype, freshly copied, never an object of the student's.

Probes decide nothing. The inputs come from the trusted grader, fresh for every submission, and the
outputs go back to it: the grader compares them with the reference solution in a process that never
ran student code (``attnkit_grader.judging``, never staged into a sandbox). There is no reference code
and no expected value in this file, so reading it tells a student only how the API is called, which
the exercise text already says.

Each assignment's ``probes`` package lists its probes in ``PROBES``, in the order they run, using the
helpers here (this module loads no assignment: :mod:`.probe_sets` finds an assignment's probes by name).
A probe that raises is recorded as failed with its exception; the others still run. The memory probe of
problem set 2 comes last: it runs at a length where only the O(L d) skewed path fits under the sandbox's
memory cap.
"""

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

__all__ = ["Probe", "as_long", "as_tensor", "floats", "ints", "lookup", "native", "probe", "tensor_of"]

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

def lookup(namespace, name):
    """The object the notebook defined under ``name``."""
    if name not in namespace:
        raise NameError(f"name '{name}' is not defined: the cell that defines it did not run or failed")
    return namespace[name]


def as_tensor(array, dtype=torch.float32):
    """A fresh tensor from one of the grader's arrays (float32 unless told)."""
    return torch.from_numpy(np.array(array, dtype=np.float64, copy=True)).to(dtype)


def as_long(array):
    return torch.from_numpy(np.array(array, dtype=np.int64, copy=True))


def tensor_of(value, what, limit=MAX_ELEMENTS):
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


def floats(value, what):
    """A fresh float64 array of the numbers in the student's tensor."""
    plain = tensor_of(value, what)
    if plain.is_complex():
        raise TypeError(f"{what} should be real, got dtype {plain.dtype}")
    return np.array(plain.to(torch.float64).numpy(), dtype=np.float64, copy=True)


def native(value, what):
    """A fresh array in the student's own dtype (for checks that the dtype is right)."""
    plain = tensor_of(value, what)
    if plain.dtype not in _NATIVE:
        raise TypeError(f"{what} has dtype {plain.dtype}, which is not a real number type")
    target = _NATIVE[plain.dtype]
    if plain.dtype == torch.bfloat16:
        plain = plain.float()
    return np.array(plain.numpy(), dtype=target, copy=True)


def ints(values):
    return np.array(values, dtype=np.int64)


def load_linears(module, arrays, names):
    """Copy the grader's weights into the student's ``nn.Linear`` attributes ``names`` of ``module``: array
    "NAME.weight", and "NAME.bias" when the grader gives one; AttributeError naming what is missing."""
    from attnkit.checking import load_table             # the student package: in the sandbox, as everywhere

    for name in names:
        linear = getattr(module, name, None)
        if linear is None or not isinstance(getattr(linear, "weight", None), torch.Tensor):
            raise AttributeError(f"the module needs an nn.Linear attribute {name}")
        load_table(linear.weight, as_tensor(arrays[f"{name}.weight"]))
        if f"{name}.bias" in arrays:
            if getattr(linear, "bias", None) is None:
                raise AttributeError(f"{name} has no bias although the module was built with bias=True")
            load_table(linear.bias, as_tensor(arrays[f"{name}.bias"]))


# ---------------------------------------------------------------------------------------------------

def probe(name, grade_id, function):
    """A Probe described by the first line of ``function``'s docstring."""
    return Probe(name, grade_id, function, (function.__doc__ or "").strip().splitlines()[0])

"""Reading a probe's outputs and comparing them with the reference: the judge's vocabulary.

Every check function of an assignment (``attnkit_assignments.<name>.checks``) receives its case and an
``Outputs``, reads arrays from it (validated before any arithmetic) and raises ``Fail`` with a sentence
for the student when the numbers do not satisfy it. The sentence is data (a :class:`~..results.Message`: a
template and its named values, ``Fail("{what} contains NaN or inf", what=...)``), rendered where it is read.
A ``what`` (what was computed, e.g. "pe(X) with a known table") is a Message or an English sentence, which
becomes one (:func:`sentence`), so that it is translated with the rest (the assignment's own catalog).
"""

import numpy as np
import torch

from attnkit.checking import fmt

from ..results import Message

__all__ = ["Fail", "Outputs", "as32", "as_tensor", "close", "equal", "expect", "fmt", "sentence", "scaled",
           "shape_text", "tolerance"]


def sentence(template, **args):
    """``template`` with ``args`` as a Message; text without placeholders may be given alone."""
    if isinstance(template, Message):
        return template
    if not args and ("{" in template or "}" in template):
        return Message.text(template)                   # literal braces, not placeholders
    return Message.make(template, **args)


class Fail(Exception):
    """A check failed; ``message`` (a Message) says what to fix: ``Fail(template, **values)``."""

    def __init__(self, template, **args):
        self.message = sentence(template, **args)
        super().__init__(self.message.render())


def shape_text(shape):
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


# ---------------------------------------------------------------------------------------------------
# Reading the probe outputs: plain ndarrays of a numeric dtype and the expected shape, or the check fails

class Outputs:
    """One probe's outputs, validated before any arithmetic: type, dtype kind, shape, finiteness."""

    def __init__(self, arrays):
        self.arrays = arrays
        self.read = []           # the keys a check asked for, in order (the diagnosis compares those)

    def _raw(self, key, shape, what):
        what = sentence(what)
        if key not in self.read:
            self.read.append(key)
        value = self.arrays.get(key)
        if value is None:
            raise Fail("{what}: no result came back", what=what)
        if type(value) is not np.ndarray:
            raise Fail("{what}: the result is not a plain array of numbers", what=what)
        if value.dtype.kind not in "biuf":
            raise Fail("{what}: the result has dtype {dtype}, not a real number type", what=what, dtype=str(value.dtype))
        if shape is not None and tuple(value.shape) != tuple(shape):
            raise Fail("{what} should have shape {expected}, got {got}", what=what, expected=shape_text(shape),
                       got=shape_text(value.shape))
        return value

    def floats(self, key, shape, what, finite=True):
        """The array as float64; NaN or inf fails the check unless ``finite`` is False."""
        value = np.array(self._raw(key, shape, what), dtype=np.float64)
        if finite and not np.isfinite(value).all():
            raise Fail("{what} contains NaN or inf", what=what)
        return value

    def native(self, key, shape, what):
        """The array in the dtype it came in (for checks of the dtype itself)."""
        return np.array(self._raw(key, shape, what))

    def integer(self, key, what):
        value = self._raw(key, (), what)
        if value.dtype.kind not in "iu":
            raise Fail("{what}: expected an integer", what=what)
        return int(value)


def tolerance(ref32, ref64):
    """Allowed |student - ref64|: 8x the reference's own float32 error plus 1e-6 of the output's scale."""
    ref32, ref64 = np.asarray(ref32, dtype=np.float64), np.asarray(ref64, dtype=np.float64)
    if ref64.size == 0:
        return 1e-6
    own_error = float(np.abs(ref32 - ref64).max())
    scale = max(1.0, float(np.abs(ref64).max()))
    return 8.0 * own_error + 1e-6 * scale


def scaled(reference, relative):
    """``relative`` times the reference's scale (at least 1): a tolerance for float32 results."""
    reference = np.asarray(reference, dtype=np.float64)
    return relative * max(1.0, float(np.abs(reference).max()) if reference.size else 1.0)


def close(actual, expected, atol, what):
    """|actual - expected| <= atol everywhere (same shape already checked); the message shows the worst."""
    expected = np.asarray(expected, dtype=np.float64)
    what = sentence(what)
    if actual.size == 0:
        return
    error = np.abs(actual - expected)
    worst = float(error.max())
    if not worst <= atol:
        index = np.unravel_index(int(np.argmax(error)), error.shape)
        raise Fail("{what} is off by up to {worst:.3g} (tolerance {atol:.3g}); at index {index}: got {got}, "
                   "expected {expected}", what=what, worst=worst, atol=atol, index=tuple(int(i) for i in index),
                   got=fmt(actual[index]), expected=fmt(expected[index]))


def equal(actual, expected, what):
    """Exact equality of values (same shape already checked); the message shows the first difference."""
    expected = np.asarray(expected)
    what = sentence(what)
    same = actual == expected
    if not same.all():
        index = tuple(int(i) for i in np.argwhere(~same)[0])
        raise Fail("{what}: {count} entries differ; first at index {index}: got {got}, expected {expected}",
                   what=what, count=int((~same).sum()), index=index, got=fmt(actual[index]), expected=fmt(expected[index]))


def expect(condition, template, **args):
    """Fail with ``template`` and its ``args`` unless ``condition``."""
    if not condition:
        raise Fail(template, **args)


def as32(array):
    """The values the student's float32 code received (the probes cast the grader's arrays to float32)."""
    return np.asarray(array, dtype=np.float32).astype(np.float64)


def as_tensor(array, dtype=torch.float64):
    return torch.from_numpy(np.array(array, dtype=np.float64)).to(dtype)


def copy_linears(module, arrays, names, dtype=torch.float64):
    """Copy a probe's weights into the reference's ``nn.Linear`` attributes ``names``, in ``dtype``: array
    "NAME.weight", and "NAME.bias" when the probe had one (call it under ``torch.no_grad()``)."""
    for name in names:
        linear = getattr(module, name)
        linear.weight.copy_(as_tensor(arrays[f"{name}.weight"], dtype))
        if f"{name}.bias" in arrays:
            linear.bias.copy_(as_tensor(arrays[f"{name}.bias"], dtype))

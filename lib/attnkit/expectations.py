"""Assertions that explain themselves, for the visible checks (:mod:`attnkit.checking` re-exports them, where the
test cells import them): each raises CheckFailed with a message naming what is wrong, in the student's language
(attnkit.i18n) and in English for the grader."""

import torch

from .i18n import Text, said

__all__ = ["CheckFailed", "expect", "expect_close", "expect_dropout", "expect_equal", "expect_raises",
           "expect_shape", "fmt"]


class CheckFailed(AssertionError):
    """A check found a wrong answer; the message says what to fix. ``matched``: the numbers are those of
    a known mistake, which the message names (evidence of real work, see ``Checks``).

    ``message``: text, or a :class:`~attnkit.i18n.Text` shown in the student's language; ``str()`` is always
    the English text (known mistakes are recognised by it, whatever the language)."""

    def __init__(self, message, matched=False):
        self.text = message if isinstance(message, Text) else Text(str(message))
        super().__init__(str(self.text))
        self.matched = matched


def fmt(x):
    """A number as short text: whole numbers below a million as integers, others with 4 significant digits
    (Python and numpy numbers alike; the notebooks' checks and the grader's judge both word numbers so)."""
    try:
        x = float(x)
    except (TypeError, ValueError):        # a complex number or another object: as Python shows it
        return str(x)
    if x.is_integer() and abs(x) < 1e6:
        return str(int(x))
    return f"{x:.4g}"


def expect(condition, message):
    """Raise CheckFailed(message) unless ``condition``."""
    if not condition:
        raise CheckFailed(message)


def expect_shape(tensor, shape, what):
    """``tensor`` is a torch.Tensor of exactly ``shape``."""
    if not isinstance(tensor, torch.Tensor):
        raise CheckFailed(Text("{what} should be a torch.Tensor, got {type}", what=said(what), type=type(tensor).__name__))
    if tuple(tensor.shape) != tuple(shape):
        raise CheckFailed(Text("{what} should have shape {expected}, got {actual}", what=said(what),
                               expected=tuple(shape), actual=tuple(tensor.shape)))


def expect_equal(actual, expected, what):
    """Exact equality, shape and values; the message shows the first differing entry."""
    expect_shape(actual, expected.shape, what)
    if actual.dtype.is_floating_point != expected.dtype.is_floating_point:
        raise CheckFailed(Text("{what} should have dtype {expected}, got {actual}", what=said(what),
                               expected=expected.dtype, actual=actual.dtype))
    same = actual.detach().cpu() == expected.detach().cpu()
    if not bool(same.all()):
        index = tuple(int(i) for i in (~same).nonzero()[0])
        got, want = actual[index].item(), expected[index].item()
        raise CheckFailed(Text("{what}: {count} entries differ; first at index {index}: got {actual}, expected "
                               "{expected}", what=said(what), count=int((~same).sum()), index=index, actual=fmt(got),
                               expected=fmt(want)))


def expect_close(actual, expected, what, atol):
    """|actual - expected| <= atol everywhere; the message shows the worst entry."""
    expect_shape(actual, expected.shape, what)
    actual = actual.detach().cpu().to(torch.float64)
    expected = expected.detach().cpu().to(torch.float64)
    if not bool(torch.isfinite(actual).all()):
        raise CheckFailed(Text("{what} contains NaN or inf", what=said(what)))
    error = (actual - expected).abs()
    worst = float(error.max()) if error.numel() else 0.0
    if worst > atol:
        index = tuple(int(i) for i in torch.nonzero(error == error.max())[0])
        raise CheckFailed(Text("{what} is off by up to {worst} (tolerance {tolerance}); at index {index}: got "
                               "{actual}, expected {expected}", what=said(what), worst=f"{worst:.3g}",
                               tolerance=f"{atol:.3g}", index=index, actual=fmt(actual[index].item()),
                               expected=fmt(expected[index].item())))


def expect_dropout(actual, kept, p, what, before="X + P"):
    """``actual`` is dropout with probability ``p`` applied to ``kept`` (what the entries are before dropout, called
    ``before`` in the messages): every entry 0 or ``kept / (1 - p)``, and about a fraction ``p`` of them 0.

    Which entries are zeroed is random; the messages are not (they say what the entries that were not zeroed are,
    never which or how many were zeroed), so the same mistake fails the same way on every run and every machine.
    """
    expect_shape(actual, kept.shape, what)
    actual = actual.detach().cpu().to(torch.float64)
    kept = kept.detach().cpu().to(torch.float64)
    if not bool(torch.isfinite(actual).all()):
        raise CheckFailed(Text("{what} contains NaN or inf", what=said(what)))
    zero = actual == 0
    ratio = actual[~zero] / kept[~zero]             # what dropout multiplied the surviving entries by
    scale = 1.0 / (1.0 - p)
    if not bool(zero.any()) and bool(((ratio - 1).abs() <= 1e-6).all()):
        raise CheckFailed(Text("{what}: no entry is 0 and the others are {before} unchanged: dropout does nothing "
                               "in train mode (apply the module's nn.Dropout(dropout) to {before})", what=said(what),
                               before=before))
    if ratio.numel() and float(ratio.max() - ratio.min()) > 1e-4 * float(ratio.abs().max()):
        raise CheckFailed(Text("{what}: the entries that are not 0 are not {before} times one number: dropout "
                               "must act on {before} itself, after it is computed", what=said(what), before=before))
    if ratio.numel() and abs(float(ratio[0]) - scale) > 1e-4 * scale:
        raise CheckFailed(Text("{what}: the entries that are not 0 are {before} times {factor}, expected times "
                               "1 / (1 - dropout) = {expected}: does the module use its dropout argument?", what=said(what),
                               before=before, factor=fmt(float(ratio[0])), expected=fmt(scale)))
    fraction = float(zero.double().mean())
    if abs(fraction - p) > 0.1:
        raise CheckFailed(Text("{what}: a fraction {fraction} of the entries are 0, expected about dropout = "
                               "{dropout}", what=said(what), fraction=f"{fraction:.2f}", dropout=fmt(p)))


def expect_raises(exception, function, what):
    """``function()`` raises ``exception``; any other outcome fails with a message."""
    try:
        function()
    except exception:
        return
    except Exception as exc:  # noqa: BLE001 - the point is to report what was raised instead
        raise CheckFailed(Text("{what}: expected {expected}, got {error}: {message}", what=said(what),
                               expected=exception.__name__, error=type(exc).__name__, message=str(exc))) from None
    raise CheckFailed(Text("{what}: expected {expected}, but nothing was raised", what=said(what),
                           expected=exception.__name__))

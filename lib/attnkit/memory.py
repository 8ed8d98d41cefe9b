"""Memory: the largest tensor a computation creates, measured as PyTorch runs it (problem set 2's skewing).

``attnkit.checking`` exports both functions; the notebooks import them from there.
"""

import torch
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["human_bytes", "largest_allocation"]


class _LargestOutput(TorchDispatchMode):
    """Records the largest storage (bytes) created by any PyTorch operator while active."""

    @classmethod
    def _should_skip_dynamo(cls):
        # TorchDispatchMode wraps a subclass's __torch_dispatch__ in torch._disable_dynamo unless this
        # says False; the wrapper imports torch._dynamo on the first call, about 1 s of CPU in every
        # kernel that measures memory, for a mode that is never compiled. If a later torch drops the
        # hook, this method is simply never called and the import comes back (slower, same result).
        return False

    def __init__(self, inputs):
        super().__init__()
        self.largest = 0
        self.seen = {t.untyped_storage().data_ptr() for t in inputs}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in self.seen:
                self.largest = max(self.largest, t.untyped_storage().nbytes())
        return out


def largest_allocation(function, *args):
    """Run ``function(*args)`` without autograd; return (result, bytes of the largest new tensor storage).

    Views (reshape, expand, slicing) share their input's storage and cost nothing; every operator that
    produces a new tensor counts with its full storage size.
    """
    inputs = [a for a in args if isinstance(a, torch.Tensor)]
    recorder = _LargestOutput(inputs)
    with torch.no_grad(), recorder:
        result = function(*args)
    return result, recorder.largest


def human_bytes(n):
    """A byte count for people: '16.8 MB'."""
    if n < 1000:
        return f"{int(n)} B"
    for unit in ("kB", "MB", "GB"):
        n /= 1000.0
        if n < 1000 or unit == "GB":
            return f"{n:.3g} {unit}"

"""Input validation shared by the modules: every failure is a ValueError naming the argument."""

import torch


def check_shape(tensor, shape):
    """Raise ValueError unless ``tensor.shape == shape``; the message shows both shapes."""
    expected = tuple(shape)
    actual = tuple(tensor.shape)
    if actual != expected:
        raise ValueError(f"expected shape {expected}, got {actual}")


def check_dropout(dropout):
    """Raise ValueError unless ``dropout`` is a probability in [0, 1]."""
    if not 0.0 <= float(dropout) <= 1.0:
        raise ValueError(f"dropout must be in [0, 1], got {dropout}")


def check_rank(name, tensor, rank, legend):
    """Raise ValueError unless ``tensor`` has ``rank`` dimensions; ``legend`` spells them out."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.dim() != rank:
        raise ValueError(f"{name} must have shape {legend} ({rank} dimensions), "
                         f"got shape {tuple(tensor.shape)}")


def check_dim(name, tensor, dim, expected):
    """Raise ValueError unless ``tensor.shape[dim] == expected``."""
    if tensor.shape[dim] != expected:
        raise ValueError(f"{name}.shape[{dim}] must be {expected}, "
                         f"got {tensor.shape[dim]} (shape {tuple(tensor.shape)})")


def check_valid_lens(valid_lens, batch_size, num_queries, num_keys, device=None):
    """Validate ``valid_lens`` ((batch,) or (batch, num_queries), each in [0, num_keys]) as a tensor."""
    if valid_lens is None:
        return None
    valid_lens = torch.as_tensor(valid_lens, device=device)
    if valid_lens.is_floating_point() or valid_lens.is_complex() or valid_lens.dtype == torch.bool:
        raise TypeError(f"valid_lens must hold integers, got dtype {valid_lens.dtype}")
    allowed = [(batch_size,), (batch_size, num_queries)]
    if tuple(valid_lens.shape) not in allowed:
        raise ValueError(f"valid_lens must have shape (batch,)={allowed[0]} or "
                         f"(batch, num_queries)={allowed[1]}, got {tuple(valid_lens.shape)}")
    if valid_lens.numel():
        low, high = int(valid_lens.min()), int(valid_lens.max())
        if low < 0 or high > num_keys:
            raise ValueError(f"valid_lens must lie in [0, num_keys={num_keys}], "
                             f"got values from {low} to {high}")
    return valid_lens


def check_attention_inputs(queries, keys, values, num_hiddens, valid_lens=None):
    """Validate multi-head attention inputs; return (batch, num_queries, num_keys, valid_lens as tensor)."""
    for name, X in (("queries", queries), ("keys", keys), ("values", values)):
        check_rank(name, X, 3, "(batch, length, num_hiddens)")
        check_dim(name, X, 2, num_hiddens)
        check_dim(name, X, 0, queries.shape[0])
    check_dim("values", values, 1, keys.shape[1])
    batch_size, num_queries, num_keys = queries.shape[0], queries.shape[1], keys.shape[1]
    valid_lens = check_valid_lens(valid_lens, batch_size, num_queries, num_keys, queries.device)
    return batch_size, num_queries, num_keys, valid_lens

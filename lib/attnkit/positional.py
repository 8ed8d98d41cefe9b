"""Sinusoidal positional encoding (Vaswani et al. 2017) and its relative-position rotation."""

import torch
from torch import nn

from ._checks import check_dim, check_dropout, check_rank


def _frequencies(num_hiddens, dtype=torch.float32):
    """omega_j = 1 / 10000^(2j / num_hiddens) for j = 0 .. ceil(num_hiddens / 2) - 1."""
    two_j = torch.arange(0, num_hiddens, 2, dtype=dtype)                # (ceil(d / 2),)
    return 1.0 / torch.pow(torch.tensor(10000.0, dtype=dtype), two_j / num_hiddens)


def sinusoidal_table(num_steps, num_hiddens, dtype=torch.float32):
    """P (num_steps, num_hiddens): P[i, 2j] = sin(i omega_j), P[i, 2j+1] = cos(i omega_j).

    Works for odd ``num_hiddens``: the last column is then a sine with no cosine partner.
    """
    if num_steps < 0 or num_hiddens < 1:
        raise ValueError(f"need num_steps >= 0 and num_hiddens >= 1, "
                         f"got num_steps={num_steps}, num_hiddens={num_hiddens}")
    positions = torch.arange(num_steps, dtype=dtype)[:, None]         # (num_steps, 1)
    angles = positions * _frequencies(num_hiddens, dtype)[None, :]    # (num_steps, ceil(d / 2))
    P = torch.empty(num_steps, num_hiddens, dtype=dtype)
    P[:, 0::2] = torch.sin(angles)                                    # ceil(d / 2) sine columns
    P[:, 1::2] = torch.cos(angles[:, : num_hiddens // 2])             # floor(d / 2) cosine columns
    return P


def relative_rotation(delta, num_hiddens, dtype=torch.float32):
    """Block-diagonal M (num_hiddens, num_hiddens) of 2x2 rotations with P[i + delta] = M @ P[i].

    Block j is [[cos(delta omega_j), sin(delta omega_j)], [-sin(delta omega_j), cos(delta omega_j)]].
    Needs even ``num_hiddens``: a lone last sine column has no cosine partner to rotate with.
    """
    if num_hiddens % 2:
        raise ValueError(f"num_hiddens must be even for the rotation map, got {num_hiddens}: "
                         "the last sine column has no cosine partner to rotate with")
    angles = delta * _frequencies(num_hiddens, dtype)                 # (d / 2,)
    cos, sin = torch.cos(angles), torch.sin(angles)
    blocks = torch.stack([torch.stack([cos, sin], -1),
                          torch.stack([-sin, cos], -1)], -2)          # (d / 2, 2, 2)
    return torch.block_diag(*blocks)                                  # (d, d)


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal table to X (batch, n, num_hiddens), then dropout; n <= max_len."""

    def __init__(self, num_hiddens, dropout=0.0, max_len=1000):
        super().__init__()
        check_dropout(dropout)
        self.num_hiddens, self.max_len = num_hiddens, max_len
        self.dropout = nn.Dropout(dropout)
        # A buffer follows .to(device) but is not a parameter; not saved in state_dict.
        self.register_buffer("P", sinusoidal_table(max_len, num_hiddens), persistent=False)

    def forward(self, X):
        """(batch, n, num_hiddens) -> (batch, n, num_hiddens)."""
        check_rank("X", X, 3, "(batch, num_steps, num_hiddens)")
        check_dim("X", X, 2, self.num_hiddens)
        if X.shape[1] > self.max_len:
            raise ValueError(f"sequence length X.shape[1]={X.shape[1]} exceeds max_len={self.max_len}")
        return self.dropout(X + self.P[: X.shape[1]].to(X.dtype))

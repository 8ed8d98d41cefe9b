"""Problem set 2 and the copy flag: correct answers written apart from every solution the course holds, and the
threshold of each answer cell measured on them (see attnkit_grader.copies).

``ANSWERS`` holds, per answer cell, correct code in styles none of the known solutions use, the way a student
might write it: following the exercise's hints, with loops, or with other tensor operations. They are never
compared with: the copy flag's false-positive rate is measured on them (``python -m attnkit_grader.copies``),
and a test proves each earns full marks. ``THRESHOLDS`` is what that command derives; a test keeps the two
in step.
"""

_INDEX_HINTS = '''def relative_position_index(num_queries, num_keys, max_distance):
    """LongTensor (num_queries, num_keys): clip(j - i, -max_distance, max_distance) + max_distance."""
    query_position = torch.arange(num_queries).unsqueeze(-1)      # (q, 1)
    key_position = torch.arange(num_keys).unsqueeze(0)            # (1, k)
    distance = key_position - query_position
    distance = torch.clamp(distance, min=-max_distance, max=max_distance)
    return distance + max_distance
'''

_INDEX_LOOPS = '''def relative_position_index(num_queries, num_keys, max_distance):
    """LongTensor (num_queries, num_keys): clip(j - i, -max_distance, max_distance) + max_distance."""
    index = torch.zeros(num_queries, num_keys, dtype=torch.long)
    for i in range(num_queries):
        for j in range(num_keys):
            index[i, j] = max(-max_distance, min(max_distance, j - i)) + max_distance
    return index
'''

_INDEX_GRID = '''def relative_position_index(num_queries, num_keys, max_distance):
    """LongTensor (num_queries, num_keys): clip(j - i, -max_distance, max_distance) + max_distance."""
    i, j = torch.meshgrid(torch.arange(num_queries), torch.arange(num_keys), indexing="ij")
    return (j - i).clamp(-max_distance, max_distance).add(max_distance)
'''

_ATTENTION_HINTS = '''class RelativeMultiHeadAttention(nn.Module):
    """Multi-head attention with relative position tables shared by all heads (Shaw et al. 2018)."""

    def __init__(self, num_hiddens, num_heads, dropout, max_distance, bias=False):
        super().__init__()
        self.heads, self.k = num_heads, max_distance
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_k = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_v = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        d = num_hiddens // num_heads
        self.rel_k = nn.Parameter(0.02 * torch.randn(2 * max_distance + 1, d))
        self.rel_v = nn.Parameter(0.02 * torch.randn(2 * max_distance + 1, d))
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        """(batch, q, num_hiddens), (batch, k, num_hiddens) x2 -> (batch, q, num_hiddens)."""
        Q = attnkit.transpose_qkv(self.W_q(queries), self.heads)
        K = attnkit.transpose_qkv(self.W_k(keys), self.heads)
        V = attnkit.transpose_qkv(self.W_v(values), self.heads)
        nq, nk, d = Q.shape[1], K.shape[1], Q.shape[2]
        rows = relative_position_index(nq, nk, self.k).to(queries.device)
        A_K, A_V = self.rel_k[rows], self.rel_v[rows]
        logits = (Q @ K.transpose(-1, -2) + torch.einsum("bqd,qkd->bqk", Q, A_K)) / d ** 0.5
        if valid_lens is not None:
            valid_lens = torch.repeat_interleave(torch.as_tensor(valid_lens, device=queries.device),
                                                 repeats=self.heads, dim=0)
        alpha = attnkit.masked_softmax(logits, valid_lens)
        self.attention_weights = alpha.view(-1, self.heads, nq, nk)
        alpha = self.dropout(alpha)
        Z = alpha @ V + torch.einsum("bqk,qkd->bqd", alpha, A_V)
        return self.W_o(attnkit.transpose_output(Z, self.heads))
'''

_ATTENTION_EXPLICIT = '''class RelativeMultiHeadAttention(nn.Module):
    """Multi-head attention with relative position tables shared by all heads (Shaw et al. 2018)."""

    def __init__(self, num_hiddens, num_heads, dropout, max_distance, bias=False):
        super().__init__()
        self.h, self.dist, self.d = num_heads, max_distance, num_hiddens // num_heads
        for name in ("W_q", "W_k", "W_v", "W_o"):
            setattr(self, name, nn.Linear(num_hiddens, num_hiddens, bias=bias))
        self.rel_k = nn.Embedding(2 * max_distance + 1, self.d)
        self.rel_v = nn.Embedding(2 * max_distance + 1, self.d)
        self.drop = nn.Dropout(dropout)
        self.attention_weights = None

    def split(self, X):
        b, n, _ = X.shape
        return X.view(b, n, self.h, self.d).permute(0, 2, 1, 3)          # (b, h, n, d)

    def forward(self, queries, keys, values, valid_lens=None):
        """(batch, q, num_hiddens), (batch, k, num_hiddens) x2 -> (batch, q, num_hiddens)."""
        b, nq, nk = queries.shape[0], queries.shape[1], keys.shape[1]
        q, k, v = self.split(self.W_q(queries)), self.split(self.W_k(keys)), self.split(self.W_v(values))
        idx = relative_position_index(nq, nk, self.dist).to(queries.device)
        ak, av = self.rel_k(idx), self.rel_v(idx)                       # (nq, nk, d)
        e = torch.matmul(q, k.transpose(2, 3)) + torch.einsum("bhid,ijd->bhij", q, ak)
        e = e / math.sqrt(self.d)
        keep = torch.ones(b, nq, nk, dtype=torch.bool, device=e.device)
        if valid_lens is not None:
            lens = torch.as_tensor(valid_lens, device=e.device)
            if lens.dim() == 1:
                lens = lens[:, None].expand(b, nq)
            keep = torch.arange(nk, device=e.device)[None, None, :] < lens[:, :, None]
        w = torch.softmax(e.masked_fill(~keep[:, None], -1e9), dim=-1)
        w = torch.where(keep[:, None], w, torch.zeros_like(w))           # a query with no key: all zeros
        self.attention_weights = w.detach()
        w = self.drop(w)
        z = torch.matmul(w, v) + torch.einsum("bhij,ijd->bhid", w, av)
        return self.W_o(z.permute(0, 2, 1, 3).reshape(b, nq, self.h * self.d))
'''

_SKEW_CAT = '''def skew(X):
    """(..., L, L) -> (..., L, L): S[..., i, j] = X[..., i, L-1-i+j] for j <= i; entries j > i are garbage."""
    *lead, L, _ = X.shape
    pad = torch.zeros(*lead, L, 1, dtype=X.dtype, device=X.device)
    Y = torch.cat((pad, X), dim=-1).reshape(*lead, L + 1, L)
    return Y[..., 1:, :]
'''

_SKEW_ROLL = '''def skew(X):
    """(..., L, L) -> (..., L, L): S[..., i, j] = X[..., i, L-1-i+j] for j <= i; entries j > i are garbage."""
    L = X.shape[-1]
    rows = [torch.roll(X[..., i, :], shifts=i + 1 - L, dims=-1) for i in range(L)]
    return torch.stack(rows, dim=-2)
'''

_SKEW_FLAT = '''def skew(X):
    """(..., L, L) -> (..., L, L): S[..., i, j] = X[..., i, L-1-i+j] for j <= i; entries j > i are garbage."""
    L = X.shape[-1]
    flat = nn.functional.pad(X, (1, 0)).flatten(-2)                   # (..., L * (L + 1))
    return flat[..., L:].unflatten(-1, (L, L))
'''

_CAUSAL_HINTS = '''def causal_relative_attention_naive(queries, keys, values, rel_k):
    """Causal attention with relative keys from the gathered (L, L, d) rows; returns (output, weights)."""
    L, d = queries.shape[1], queries.shape[2]
    pos = torch.arange(L)
    offset = pos[None, :] - pos[:, None]                               # j - i
    E = rel_k[(offset + L - 1).clamp(max=L - 1)]                       # (L, L, d); rows j > i: masked below
    logits = queries @ keys.transpose(1, 2) + torch.einsum("bid,ijd->bij", queries, E)
    logits = logits / math.sqrt(d)
    w = logits.masked_fill(offset > 0, float("-inf")).softmax(dim=-1)
    return w @ values, w


def causal_relative_attention(queries, keys, values, rel_k):
    """The same attention with the relative term from skew(Q E^T); returns (output, weights)."""
    L, d = queries.shape[1], queries.shape[2]
    logits = (queries @ keys.transpose(1, 2) + skew(queries @ rel_k.transpose(0, 1))) / math.sqrt(d)
    future = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)
    w = torch.softmax(logits.masked_fill(future, float("-inf")), dim=-1)
    return w @ values, w
'''

_CAUSAL_BMM = '''def causal_relative_attention_naive(queries, keys, values, rel_k):
    """Causal attention with relative keys from the gathered (L, L, d) rows; returns (output, weights)."""
    batch, L, d = queries.shape
    i = torch.arange(L).view(L, 1)
    j = torch.arange(L).view(1, L)
    gathered = rel_k.index_select(0, (L - 1 + j - i).clamp(max=L - 1).flatten()).view(L, L, d)
    rel = torch.bmm(queries.transpose(0, 1), gathered.transpose(1, 2)).transpose(0, 1)   # (batch, L, L)
    s = (torch.bmm(queries, keys.transpose(1, 2)) + rel) * d ** -0.5
    s = torch.where(j <= i, s, torch.full_like(s, -float("inf")))
    p = torch.softmax(s, -1)
    return torch.bmm(p, values), p


def causal_relative_attention(queries, keys, values, rel_k):
    """The same attention with the relative term from skew(Q E^T); returns (output, weights)."""
    batch, L, d = queries.shape
    s = torch.bmm(queries, keys.transpose(1, 2)) + skew(torch.matmul(queries, rel_k.t()))
    allowed = torch.tril(torch.ones(L, L, dtype=torch.bool))
    p = (s * d ** -0.5).masked_fill(allowed.logical_not(), -float("inf")).softmax(-1)
    return torch.bmm(p, values), p
'''

ANSWERS = {
    "index_answer": (_INDEX_HINTS, _INDEX_LOOPS, _INDEX_GRID),
    "attention_answer": (_ATTENTION_HINTS, _ATTENTION_EXPLICIT),
    "skew_answer": (_SKEW_CAT, _SKEW_ROLL, _SKEW_FLAT),
    "causal_answer": (_CAUSAL_HINTS, _CAUSAL_BMM),
}

# Measured with `python -m attnkit_grader.copies ps2_relative_pe`: the innocent answers resemble a known solution
# by at most 0.12 (index), 0.51 (attention: the answer that follows the exercise's hints is close to the
# notebook's), 0.19 (skew) and 0.19 (causal).
THRESHOLDS = {"index_answer": 0.6, "attention_answer": 0.7, "skew_answer": 0.6, "causal_answer": 0.6}

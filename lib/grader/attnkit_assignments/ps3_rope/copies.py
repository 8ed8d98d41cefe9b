"""Problem set 3 and the copy flag: correct answers written apart from every solution the course holds, and the
threshold of each answer cell measured on them (see attnkit_grader.copies).

``ANSWERS`` holds, per answer cell, correct code in styles none of the known solutions use, the way a student
might write it: following the exercise's hints, with loops over pairs, heads or positions, with complex numbers,
einsum or other tensor operations. They are never compared with: the copy flag's false-positive rate is measured
on them (``python -m attnkit_grader.copies``), and a test proves each earns full marks. ``THRESHOLDS`` is what
that command derives; a test keeps the two in step.
"""

_ROPE_LOOP = '''def rotary_embedding(x, positions, base=10000):
    """(..., n, d), positions (n,) -> (..., n, d): pair (x_2i, x_2i+1) turned by positions * base^(-2i/d)."""
    d = x.shape[-1]
    if d % 2 == 1:
        raise ValueError("d = %d is odd: every feature needs a partner" % d)
    m = positions.to(x.device, x.dtype)                  # (n,)
    out = torch.empty_like(x)
    for i in range(d // 2):
        angle = m * base ** (-2.0 * i / d)               # (n,): the angle of pair i at each position
        c, s = torch.cos(angle), torch.sin(angle)
        a, b = x[..., 2 * i], x[..., 2 * i + 1]          # (..., n)
        out[..., 2 * i] = a * c - b * s
        out[..., 2 * i + 1] = a * s + b * c
    return out
'''

_ROPE_COMPLEX = '''def rotary_embedding(x, positions, base=10000):
    """(..., n, d), positions (n,) -> (..., n, d): pair (x_2i, x_2i+1) turned by positions * base^(-2i/d)."""
    if x.size(-1) % 2:
        raise ValueError(f"rotary_embedding: d must be even, got d={x.size(-1)}")
    half = x.size(-1) // 2
    freqs = 1.0 / base ** (torch.arange(half, dtype=x.dtype, device=x.device) * 2 / x.size(-1))
    t = positions.to(dtype=x.dtype, device=x.device)
    phase = torch.outer(t, freqs)                                            # (n, d/2)
    rot = torch.polar(torch.ones_like(phase), phase)                         # e^(i m theta)
    z = torch.view_as_complex(x.reshape(x.shape[:-1] + (half, 2)).contiguous())   # x_2i + i x_2i+1
    return torch.view_as_real(z * rot).reshape(x.shape)
'''

_ROPE_EVERY_TWO = '''def rotary_embedding(x, positions, base=10000):
    """(..., n, d), positions (n,) -> (..., n, d): pair (x_2i, x_2i+1) turned by positions * base^(-2i/d)."""
    dim = x.shape[-1]
    if dim % 2 != 0:
        raise ValueError("x's last dimension must be even for RoPE, got " + str(dim))
    inv = torch.pow(float(base), -torch.arange(0, dim, 2, device=x.device, dtype=x.dtype) / dim)
    ang = torch.einsum("n,f->nf", positions.to(device=x.device, dtype=x.dtype), inv)
    ang = ang.repeat_interleave(2, dim=-1)                                   # (n, d): theta_0, theta_0, theta_1, ...
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    partner = torch.stack([-x2, x1], dim=-1).flatten(start_dim=-2)           # (-x1, x0, -x3, x2, ...)
    return x * ang.cos() + partner * ang.sin()
'''

_ATTENTION_HEAD_LOOP = '''class RotaryMultiHeadAttention(nn.Module):
    """Multi-head attention whose queries and keys are rotated per head by their positions (RoPE)."""

    def __init__(self, num_hiddens, num_heads, dropout, base=10000, bias=False):
        super().__init__()
        if num_hiddens // num_heads % 2 == 1:
            raise ValueError("num_hiddens=%d / num_heads=%d gives an odd head size" % (num_hiddens, num_heads))
        self.n_heads = num_heads
        self.size = num_hiddens // num_heads
        self.rope_base = base
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_k = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_v = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.drop = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None, causal=False, position_offset=0):
        """(batch, q, num_hiddens), (batch, k, num_hiddens) x2 -> (batch, q, num_hiddens)."""
        Q, K, V = self.W_q(queries), self.W_k(keys), self.W_v(values)
        nq, nk = Q.shape[1], K.shape[1]
        dev = Q.device
        pos_q = torch.arange(position_offset, position_offset + nq, device=dev)
        pos_k = torch.arange(nk, device=dev)
        allowed = torch.ones(Q.shape[0], nq, nk, dtype=torch.bool, device=dev)
        if valid_lens is not None:
            lens = torch.as_tensor(valid_lens, device=dev).reshape(Q.shape[0], -1)   # (batch, 1 or q)
            allowed = allowed & (pos_k.view(1, 1, nk) < lens.unsqueeze(-1))
        if causal:
            allowed = allowed & (pos_k.view(1, nk) <= pos_q.view(nq, 1))
        heads, weights = [], []
        for h in range(self.n_heads):
            cols = slice(h * self.size, (h + 1) * self.size)
            q = rotary_embedding(Q[:, :, cols], pos_q, self.rope_base)
            k = rotary_embedding(K[:, :, cols], pos_k, self.rope_base)
            s = torch.bmm(q, k.transpose(1, 2)) / self.size ** 0.5
            s = s.masked_fill(allowed.logical_not(), -math.inf)
            top = s.max(dim=-1, keepdim=True).values
            top = torch.where(torch.isinf(top), torch.zeros_like(top), top)     # a row with nothing to see
            e = torch.exp(s - top)
            total = e.sum(dim=-1, keepdim=True)
            p = e / torch.where(total == 0, torch.ones_like(total), total)
            weights.append(p)
            heads.append(torch.bmm(self.drop(p), V[:, :, cols]))
        self.attention_weights = torch.stack(weights, dim=1).detach()          # (batch, num_heads, q, k)
        return self.W_o(torch.cat(heads, dim=-1))
'''

_ATTENTION_SDPA = '''class RotaryMultiHeadAttention(nn.Module):
    """Multi-head attention whose queries and keys are rotated per head by their positions (RoPE)."""

    def __init__(self, num_hiddens, num_heads, dropout, base=10000, bias=False):
        super().__init__()
        hd = num_hiddens // num_heads
        if hd % 2:
            raise ValueError(f"cannot rotate an odd head_dim: num_hiddens={num_hiddens}, num_heads={num_heads}")
        self.h, self.hd, self.base, self.p = num_heads, hd, base, dropout
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(num_hiddens, num_hiddens, bias=bias) for _ in range(4))
        self.attention_weights = None

    def forward(self, queries, keys, values, valid_lens=None, causal=False, position_offset=0):
        """(batch, q, num_hiddens), (batch, k, num_hiddens) x2 -> (batch, q, num_hiddens)."""
        B, Tq, C = queries.shape
        Tk = keys.shape[1]
        q = self.W_q(queries).view(B, Tq, self.h, self.hd).permute(0, 2, 1, 3)   # (B, h, Tq, hd)
        k = self.W_k(keys).view(B, Tk, self.h, self.hd).permute(0, 2, 1, 3)      # (B, h, Tk, hd)
        v = self.W_v(values).view(B, Tk, self.h, self.hd).permute(0, 2, 1, 3)    # (B, h, Tk, hd)
        q = rotary_embedding(q, torch.arange(Tq, device=q.device) + position_offset, self.base)
        k = rotary_embedding(k, torch.arange(Tk, device=k.device), self.base)
        mask = torch.ones(B, 1, Tq, Tk, dtype=torch.bool, device=q.device)
        if causal:
            mask = mask & torch.ones(Tq, Tk, dtype=torch.bool, device=q.device).tril(diagonal=position_offset)
        if valid_lens is not None:
            vl = torch.as_tensor(valid_lens, device=q.device)
            if vl.dim() == 1:
                vl = vl.unsqueeze(1)                                             # (B, 1)
            mask = mask & (torch.arange(Tk, device=q.device) < vl.unsqueeze(-1)).unsqueeze(1)
        att = torch.einsum("bhid,bhjd->bhij", q, k) * self.hd ** -0.5
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1).nan_to_num(0.0)
        self.attention_weights = att.detach()
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=self.p if self.training else 0.0)
        y = torch.where(mask.any(dim=-1, keepdim=True), y, torch.zeros_like(y))  # no key at all: zeros, not NaN
        return self.W_o(y.permute(0, 2, 1, 3).reshape(B, Tq, C))
'''

_ATTENTION_LIBRARY = '''class RotaryMultiHeadAttention(nn.Module):
    """Multi-head attention whose queries and keys are rotated per head by their positions (RoPE)."""

    def __init__(self, num_hiddens, num_heads, dropout, base=10000, bias=False):
        super().__init__()
        if (num_hiddens // num_heads) % 2 != 0:
            raise ValueError(f"num_hiddens / num_heads must be even for RoPE (num_hiddens={num_hiddens}, "
                             f"num_heads={num_heads})")
        self.num_heads = num_heads
        self.rotary_base = base
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_k = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_v = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None, causal=False, position_offset=0):
        """(batch, q, num_hiddens), (batch, k, num_hiddens) x2 -> (batch, q, num_hiddens)."""
        Q = attnkit.transpose_qkv(self.W_q(queries), self.num_heads)   # (batch * heads, q, head_dim)
        K = attnkit.transpose_qkv(self.W_k(keys), self.num_heads)      # (batch * heads, k, head_dim)
        V = attnkit.transpose_qkv(self.W_v(values), self.num_heads)    # (batch * heads, k, head_dim)
        n_q, n_k, head_dim = Q.shape[1], K.shape[1], Q.shape[2]
        Q = rotary_embedding(Q, torch.arange(n_q, device=Q.device) + position_offset, self.rotary_base)
        K = rotary_embedding(K, torch.arange(n_k, device=K.device), self.rotary_base)
        scores = torch.bmm(Q, K.transpose(1, 2)) / math.sqrt(head_dim)
        if causal:
            i = torch.arange(n_q, device=Q.device).unsqueeze(1)
            j = torch.arange(n_k, device=Q.device).unsqueeze(0)
            scores = scores.masked_fill(j > i + position_offset, float("-inf"))   # key 0 is always seen
        if valid_lens is not None:
            valid_lens = torch.repeat_interleave(torch.as_tensor(valid_lens, device=Q.device),
                                                 repeats=self.num_heads, dim=0)
        alpha = attnkit.masked_softmax(scores, valid_lens)
        self.attention_weights = alpha.detach().reshape(-1, self.num_heads, n_q, n_k)
        out = torch.bmm(self.dropout(alpha), V)
        return self.W_o(attnkit.transpose_output(out, self.num_heads))
'''

_SLOPES_LOOP = '''def alibi_slopes(num_heads):
    """(num_heads,) float32: the ALiBi slope of each head, by the paper's rule for any number of heads."""
    p = 2 ** int(math.floor(math.log2(num_heads)))
    result = []
    for h in range(1, p + 1):
        result.append(2 ** (-8 * h / p))
    h = 1
    while len(result) < num_heads:
        result.append(2 ** (-8 * h / (2 * p)))     # every other slope of 2p: h = 1, 3, 5, ...
        h += 2
    return torch.tensor(result, dtype=torch.float32)
'''

_SLOPES_BITS = '''def alibi_slopes(num_heads):
    """(num_heads,) float32: the ALiBi slope of each head, by the paper's rule for any number of heads."""
    power = 1 << (num_heads.bit_length() - 1)                     # the highest set bit of num_heads
    base_part = torch.arange(1, power + 1, dtype=torch.float64) * (8.0 / power)
    odd = 2 * torch.arange(num_heads - power, dtype=torch.float64) + 1     # 1, 3, 5, ...: every other slope of 2p
    extra_part = odd * (4.0 / power)
    return torch.exp2(-torch.cat([base_part, extra_part])).float()
'''

_SLOPES_RATIO = '''def alibi_slopes(num_heads):
    """(num_heads,) float32: the ALiBi slope of each head, by the paper's rule for any number of heads."""
    def geometric(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start ** k for k in range(n)]

    if math.log2(num_heads).is_integer():
        values = geometric(num_heads)
    else:
        closest = 2 ** math.floor(math.log2(num_heads))
        values = geometric(closest) + geometric(2 * closest)[::2][: num_heads - closest]
    return torch.tensor(values).to(torch.float32)
'''

_BIAS_LOOP = '''def alibi_bias(num_queries, num_keys, slopes):
    """(num_heads, num_queries, num_keys): slopes[h] * (j - i), query i at position num_keys - num_queries + i."""
    if num_queries > num_keys:
        raise ValueError(f"num_queries={num_queries} is larger than num_keys={num_keys}")
    shift = num_keys - num_queries
    d = torch.zeros(num_queries, num_keys, dtype=slopes.dtype, device=slopes.device)
    for i in range(num_queries):
        for j in range(num_keys):
            d[i, j] = j - (i + shift)
    return torch.stack([m * d for m in slopes])
'''

_BIAS_GRID = '''def alibi_bias(num_queries, num_keys, slopes):
    """(num_heads, num_queries, num_keys): slopes[h] * (j - i), query i at position num_keys - num_queries + i."""
    if num_keys < num_queries:
        raise ValueError("alibi_bias needs num_queries <= num_keys, got num_queries=%d and num_keys=%d"
                         % (num_queries, num_keys))
    rows, cols = torch.meshgrid(torch.arange(num_queries, device=slopes.device),
                                torch.arange(num_keys, device=slopes.device), indexing="ij")
    rel = (cols - rows - (num_keys - num_queries)).to(slopes.dtype)
    return torch.einsum("h,qk->hqk", slopes, rel)
'''

_BIAS_SQUARE = '''def alibi_bias(num_queries, num_keys, slopes):
    """(num_heads, num_queries, num_keys): slopes[h] * (j - i), query i at position num_keys - num_queries + i."""
    if num_queries > num_keys:
        raise ValueError("too many queries: num_queries = {} > num_keys = {}".format(num_queries, num_keys))
    idx = torch.arange(num_keys, dtype=slopes.dtype, device=slopes.device)
    square = idx.unsqueeze(0) - idx.unsqueeze(1)                  # (k, k): j - i for queries at every position
    last = square[num_keys - num_queries:]                        # the last num_queries rows
    return slopes.view(-1, 1, 1) * last.unsqueeze(0)
'''

_ALIBI_ADD_INF = '''def causal_alibi_attention(queries, keys, values, slopes):
    """(batch, h, q, d), (batch, h, k, d), (batch, h, k, value_dim), slopes (h,) -> (batch, h, q, value_dim)."""
    nq, nk = queries.size(2), keys.size(2)
    m = slopes.to(queries)
    blocked = torch.full((nq, nk), float("-inf"), dtype=queries.dtype, device=queries.device)
    blocked = torch.triu(blocked, diagonal=nk - nq + 1)           # -inf after each query's position, 0 elsewhere
    mask = alibi_bias(nq, nk, m) + blocked
    out = F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask.unsqueeze(0))
    return out
'''

_ALIBI_MANUAL = '''def causal_alibi_attention(queries, keys, values, slopes):
    """(batch, h, q, d), (batch, h, k, d), (batch, h, k, value_dim), slopes (h,) -> (batch, h, q, value_dim)."""
    b, h, lq, d = queries.shape
    lk = keys.shape[2]
    s = torch.einsum("bhqd,bhkd->bhqk", queries, keys) / math.sqrt(d)
    qpos = torch.arange(lk - lq, lk, device=queries.device)
    kpos = torch.arange(lk, device=queries.device)
    dist = (kpos[None, :] - qpos[:, None]).to(queries.dtype)               # (q, k)
    s = s + slopes.to(device=queries.device, dtype=queries.dtype).reshape(1, h, 1, 1) * dist
    s = s.masked_fill(kpos[None, :] > qpos[:, None], -float("inf"))
    w = s.softmax(dim=-1)
    return torch.einsum("bhqk,bhkv->bhqv", w, values)
'''

_ALIBI_WHERE = '''def causal_alibi_attention(queries, keys, values, slopes):
    """(batch, h, q, d), (batch, h, k, d), (batch, h, k, value_dim), slopes (h,) -> (batch, h, q, value_dim)."""
    n_q, n_k = queries.shape[-2], keys.shape[-2]
    dev, dt = queries.device, queries.dtype
    seen = torch.tril(torch.ones(n_q, n_k, device=dev, dtype=torch.bool), diagonal=n_k - n_q)
    b = alibi_bias(n_q, n_k, slopes.to(dev).to(dt))                         # (h, q, k)
    float_mask = torch.where(seen, b, torch.tensor(float("-inf"), dtype=dt, device=dev))
    return F.scaled_dot_product_attention(queries, keys, values, attn_mask=float_mask[None, :, :, :])
'''

ANSWERS = {
    "rope_answer": (_ROPE_LOOP, _ROPE_COMPLEX, _ROPE_EVERY_TWO),
    "rotary_attention_answer": (_ATTENTION_HEAD_LOOP, _ATTENTION_SDPA, _ATTENTION_LIBRARY),
    "slopes_answer": (_SLOPES_LOOP, _SLOPES_BITS, _SLOPES_RATIO),
    "bias_answer": (_BIAS_LOOP, _BIAS_GRID, _BIAS_SQUARE),
    "alibi_attention_answer": (_ALIBI_ADD_INF, _ALIBI_MANUAL, _ALIBI_WHERE),
}

# Measured with `python -m attnkit_grader.copies ps3_rope` (the notebook of 2026-11-28 13:40): the innocent answers
# resemble a known solution by at most 0.16 (rope), 0.33 (rotary attention: the notebook's solution against the
# reference's), 0.23 (slopes), 0.25 (bias) and 0.26 (ALiBi attention: the notebook's), so every cell has the floor.
THRESHOLDS = {"rope_answer": 0.6, "rotary_attention_answer": 0.6, "slopes_answer": 0.6, "bias_answer": 0.6,
              "alibi_attention_answer": 0.6}

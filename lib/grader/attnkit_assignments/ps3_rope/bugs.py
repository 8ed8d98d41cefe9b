"""Rotary position embeddings and ALiBi: the known-bug catalogue, as edits of reference.py (see attnkit_grader.authoring.Bug).

Each bug is a mistake students make, with the one line a student reads (``says``), the points it keeps at
grading in each test cell where it loses some (``points``; test_scores is worth 2), the checks it fails
(``fails``) and where the course teaches the right thing (``teaches``). tests/test_bug_catalogue.py holds
every bug to all of it; ``python -m attnkit_grader.catalogue --expected ps3_rope`` measures points and fails.
"""

from attnkit_grader.authoring import Bug

_SCORES = "return queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])"
_WHY_SQRT_D = "lectures/01_self_attention#4-why-divide-by-sqrt-d"
_EXERCISE = "assignments/ps3_rope#exercise-1--scaled-dot-product-scores-2-points"

BUGS = [
    Bug("unscaled",
        "the scores are q_i . k_j, never divided by sqrt(d)",
        ((_SCORES, "return queries @ keys.transpose(-2, -1)"),),
        points={"test_scores": 0}, fails=("scores", "scores_random"), teaches=(_WHY_SQRT_D, _EXERCISE)),
]

# Correct answers in other styles than the reference: each must pass every visible check and earn full marks.
ALTERNATIVES = [
    Bug("einsum", "the scores as an einsum",
        ((_SCORES, 'return torch.einsum("bqd,bkd->bqk", queries, keys) / math.sqrt(queries.shape[-1])'),
         ("import math\n", "import math\n\nimport torch\n"))),
    Bug("queries_scaled_first", "the queries divided by sqrt(d) before the product",
        ((_SCORES, "return (queries / math.sqrt(queries.shape[-1])) @ keys.transpose(1, 2)"),)),
]


# PS3's own mistakes, each an edit of reference.py. Not in BUGS yet: the checks that grade them (checks.py,
# probes/) are still the scaffold's, so their points and fails cannot be stated; tests/test_ps3_reference.py
# holds each to applying cleanly and to changing what the float64 loops there compute.
_EVEN_ODD = "even, odd = x[..., 0::2], x[..., 1::2]                                   # (..., n, d/2) each"
_INTERLEAVE = ("return torch.stack((turned_even, turned_odd), dim=-1).flatten(-2)"
               "        # (..., n, d): pairs interleaved")
_THETA = "theta = base ** (-2 * pair / d)                                          # (d/2,): base^(-2i/d)"
_TURN_EVEN = "turned_even = even * cos - odd * sin                                     # (..., n, d/2)"
_TURN_ODD = "turned_odd = even * sin + odd * cos                                      # (..., n, d/2)"
_QUERY_POSITIONS = "query_positions = torch.arange(num_queries, device=device) + position_offset   # (q,)"
_KEY_POSITIONS = "key_positions = torch.arange(num_keys, device=device)                          # (k,)"
_ROTATE_K = "k = rotary_embedding(self._heads(self.W_k(keys)), key_positions, self.base)       # (batch, h, k, hd)"
_VALUES = "v = self._heads(self.W_v(values))                                                # (batch, h, k, hd)"
_MHA_SCORES = "scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)                      # (batch, h, q, k)"
_ALLOWED = "allowed = key_positions[None, :] <= query_positions[:, None]        # (q, k)"
_GEOMETRIC = "return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]"
_POWER_OF_TWO = "p = 2 ** int(math.floor(math.log2(num_heads)))           # largest power of two <= num_heads"
_EVERY_OTHER = "slopes += _geometric_slopes(2 * p)[0::2][:num_heads - p]"
_SLOPES = "return torch.tensor(slopes, dtype=torch.float32)"
_BIAS_QUERIES = ("query_positions = torch.arange(num_queries, device=slopes.device) + (num_keys - num_queries)"
                 "  # (q,)")
_DISTANCE = ("distance = (key_positions[None, :] - query_positions[:, None]).to(slopes.dtype)"
             "              # (q, k): j - i")
_ATTN_MASK = 'attn_mask = bias.masked_fill(future, float("-inf"))                        # (h, q, k)'

PENDING_BUGS = [
    # rotary_embedding
    Bug("rope_split_halves",
        "the pairs are (x_i, x_{i+d/2}), the libraries' rotate_half convention, not the interleaved (x_2i, x_2i+1)",
        ((_EVEN_ODD, "even, odd = x[..., :d // 2], x[..., d // 2:]"),
         (_INTERLEAVE, "return torch.cat((turned_even, turned_odd), dim=-1)"))),
    Bug("rope_exponent_over_d",
        "theta_i = base^(-i/d): the exponent counts features, not pairs; it is base^(-2i/d)",
        ((_THETA, "theta = base ** (-pair / d)"),)),
    Bug("rope_base_misplaced",
        "theta_i = base^(2i/d): the frequencies grow with i instead of falling; it is base^(-2i/d)",
        ((_THETA, "theta = base ** (2 * pair / d)"),)),
    Bug("rope_turns_backwards",
        "the pairs turn by -m theta_i (the sine's sign is flipped): the rotation goes the wrong way",
        ((_TURN_EVEN, "turned_even = even * cos + odd * sin"), (_TURN_ODD, "turned_odd = odd * cos - even * sin"))),
    # RotaryMultiHeadAttention
    Bug("rope_rotates_values",
        "the values are rotated too; RoPE rotates queries and keys only",
        ((_VALUES, "v = rotary_embedding(self._heads(self.W_v(values)), key_positions, self.base)"),)),
    Bug("rope_keys_not_rotated",
        "only the queries are rotated, so the scores depend on the query's position, not on m - n",
        ((_ROTATE_K, "k = self._heads(self.W_k(keys))"),)),
    Bug("rope_positions_off_by_one",
        "the queries start at position_offset + 1, one ahead of the keys they are compared with",
        ((_QUERY_POSITIONS, "query_positions = torch.arange(num_queries, device=device) + position_offset + 1"),)),
    Bug("rope_offset_ignored",
        "position_offset is ignored: with a cache, the new queries are rotated as if they were the first positions",
        ((_QUERY_POSITIONS, "query_positions = torch.arange(num_queries, device=device)"),)),
    Bug("rope_keys_offset_too",
        "the keys get the queries' offset too; with a cache the keys are the whole past, at 0 .. num_keys - 1",
        ((_KEY_POSITIONS, "key_positions = torch.arange(num_keys, device=device) + position_offset"),)),
    Bug("rope_causal_ignores_offset",
        "the causal mask is the plain lower triangle: with a cache, queries cannot see the past keys before them",
        ((_ALLOWED, "allowed = key_positions[None, :] <= (query_positions - position_offset)[:, None]"),)),
    Bug("rope_scale_num_hiddens",
        "the scores are divided by sqrt(num_hiddens) instead of sqrt(head_dim)",
        ((_MHA_SCORES, "scores = q @ k.transpose(-1, -2) / math.sqrt(self.num_hiddens)"),)),
    # alibi_slopes
    Bug("alibi_heads_from_zero",
        "the heads are numbered from 0 in 2^(-8h/n), so the first slope is 1; the paper numbers them 1 .. n",
        ((_GEOMETRIC, "return [2.0 ** (-8.0 * h / n) for h in range(n)]"),)),
    Bug("alibi_formula_for_any_count",
        "2^(-8h/n) is used for every head count; for n not a power of two the paper interleaves the slopes of 2p",
        ((_POWER_OF_TWO, "p = num_heads"),)),
    Bug("alibi_wrong_half_of_2p",
        "the extra heads take the odd-numbered slopes of 2p, which repeat those of p; they take 2^-0.5, 2^-1.5, ...",
        ((_EVERY_OTHER, "slopes += _geometric_slopes(2 * p)[1::2][:num_heads - p]"),)),
    Bug("alibi_slopes_linear",
        "the slopes fall linearly from 1/2; they form a geometric sequence 2^(-8/n), 2^(-16/n), ...",
        ((_GEOMETRIC, "return [0.5 * (n + 1 - h) / n for h in range(1, n + 1)]"),)),
    Bug("alibi_slopes_reversed",
        "the slopes are given to the heads in reverse order, the gentlest first",
        ((_SLOPES, "return torch.tensor(slopes[::-1], dtype=torch.float32)"),)),
    # alibi_bias
    Bug("alibi_bias_sign",
        "the bias is m_h (i - j), positive on the causal side: distant keys get more weight, not less",
        ((_DISTANCE, "distance = (query_positions[:, None] - key_positions[None, :]).to(slopes.dtype)"),)),
    Bug("alibi_bias_query_axis",
        "the bias depends on the query's position only, a constant per row that the softmax removes",
        ((_DISTANCE, "distance = (0 * key_positions[None, :] - query_positions[:, None]).to(slopes.dtype)"),)),
    Bug("alibi_queries_first",
        "query i sits at position i when num_queries < num_keys; with a cache it is num_keys - num_queries + i",
        ((_BIAS_QUERIES, "query_positions = torch.arange(num_queries, device=slopes.device)"),)),
    # causal_alibi_attention
    Bug("alibi_bias_scaled",
        "the bias is divided by sqrt(d) with the scores; the paper adds it unscaled",
        ((_ATTN_MASK, 'attn_mask = (bias / math.sqrt(queries.shape[-1])).masked_fill(future, float("-inf"))'),)),
    Bug("alibi_no_causal_mask",
        "the causal mask is forgotten: the bias alone lets every query see the future keys",
        ((_ATTN_MASK, "attn_mask = bias"),)),
]

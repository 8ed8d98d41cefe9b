"""Problem set 3 (rotary embeddings and ALiBi): the known-bug catalogue, as edits of reference.py (see
attnkit_grader.authoring.Bug).

Each bug is a mistake students make (most of them reported in the trackers of the libraries students use),
with the one line a student reads (``says``), the points it keeps at grading in each test cell where it loses
some (``points``), the checks it fails (``fails``) and where the course teaches the right thing (``teaches``).
tests/test_bug_catalogue.py holds every bug to all of it; ``python -m attnkit_grader.catalogue --expected
ps3_rope`` measures points and fails.
"""

from dataclasses import replace

from attnkit_grader.authoring import Bug

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

BUGS = [
    # rotary_embedding
    Bug("rope_split_halves",
        "the pairs are (x_i, x_(i+d/2)), the libraries' rotate_half convention, not the interleaved (x_2i, x_2i+1)",
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
        "the slopes are 2^(-8h/n) for every head count; for n not a power of two the paper interleaves those of 2p",
        ((_POWER_OF_TWO, "p = num_heads"),)),
    Bug("alibi_wrong_half_of_2p",
        "the extra heads take the slopes of 2p with an even h, which repeat those of p; those with an odd h are right",
        ((_EVERY_OTHER, "slopes += _geometric_slopes(2 * p)[1::2][:num_heads - p]"),)),
    Bug("alibi_slopes_linear",
        "the slopes fall linearly from 1/2; they form a geometric sequence, 2^(-8/n), 2^(-16/n) and on",
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

# {bug: ({grade_id: points kept at grading}, the checks it fails)}, as `catalogue --expected ps3_rope` measures.
EXPECTED = {
    "rope_split_halves": ({"test_rope": 1.5, "test_rotary_attention": 1.5},
        "attn_cached attn_causal_parity attn_cross_parity attn_worked rope_edge rope_example rope_random"),
    "rope_exponent_over_d": ({"test_rope": 1.5, "test_rotary_attention": 1.5},
        "attn_cached attn_causal_parity attn_cross_parity attn_worked rope_edge rope_example rope_random"),
    "rope_base_misplaced": ({"test_rope": 1.5, "test_rotary_attention": 1.5},
        "attn_cached attn_causal_parity attn_cross_parity attn_worked rope_edge rope_example rope_random"),
    "rope_turns_backwards": ({"test_rope": 1.5, "test_rotary_attention": 1.5},
        "attn_cached attn_causal_parity attn_cross_parity attn_worked rope_edge rope_example rope_random"),
    "rope_rotates_values": ({"test_rotary_attention": 1.5},
        "attn_cached attn_causal_parity attn_cross_parity attn_worked"),
    "rope_keys_not_rotated": ({"test_rotary_attention": 1.5},
        "attn_cached attn_causal_parity attn_cross_parity attn_worked"),
    "rope_positions_off_by_one": ({"test_rotary_attention": 1.5},
        "attn_cached attn_causal_parity attn_cross_parity attn_worked"),
    "rope_offset_ignored": ({"test_rotary_attention": 3.25}, "attn_cached attn_cross_parity"),
    "rope_keys_offset_too": ({"test_rotary_attention": 3.25}, "attn_cached attn_cross_parity"),
    "rope_causal_ignores_offset": ({"test_rotary_attention": 4.0}, "attn_cached"),
    "rope_scale_num_hiddens": ({"test_rotary_attention": 1.5},
        "attn_cached attn_causal_parity attn_cross_parity attn_worked"),
    "alibi_heads_from_zero": ({"test_slopes": 0.0}, "slopes_edge slopes_other slopes_power slopes_random"),
    "alibi_formula_for_any_count": ({"test_slopes": 0.5}, "slopes_edge slopes_other slopes_random"),
    "alibi_wrong_half_of_2p": ({"test_slopes": 0.5}, "slopes_edge slopes_other slopes_random"),
    "alibi_slopes_linear": ({"test_slopes": 0.0}, "slopes_edge slopes_other slopes_power slopes_random"),
    "alibi_slopes_reversed": ({"test_slopes": 0.0}, "slopes_edge slopes_other slopes_power slopes_random"),
    "alibi_bias_sign": ({"test_bias": 0.25, "test_alibi_attention": 0.5},
        "alibi_cache alibi_random alibi_worked bias_cache bias_edge bias_random bias_square"),
    "alibi_bias_query_axis": ({"test_bias": 0.25, "test_alibi_attention": 0.5},
        "alibi_cache alibi_random alibi_worked bias_cache bias_edge bias_random bias_square"),
    "alibi_queries_first": ({"test_bias": 1.0}, "bias_cache bias_edge bias_random"),
    "alibi_bias_scaled": ({"test_alibi_attention": 0.5}, "alibi_cache alibi_random alibi_worked"),
    "alibi_no_causal_mask": ({"test_alibi_attention": 0.5}, "alibi_cache alibi_random alibi_worked"),
}

BUGS = [replace(bug, points=EXPECTED[bug.name][0], fails=tuple(EXPECTED[bug.name][1].split())) if bug.name in EXPECTED
        else bug for bug in BUGS]

# Where the course teaches the right thing (the insight report shows it beside each mistake; a test resolves
# every link to a heading of the lecture or of the exercise).
_ROTATION = "lectures/03_positional_encoding#6-relative-position-a-shift-is-a-rotation"
_TABLE = "lectures/03_positional_encoding#2-the-sinusoidal-table"
_SCALE = "lectures/01_self_attention#4-why-divide-by-sqrt-d"
_MASKS = "lectures/01_self_attention#61-padding-masks-and-causal-masks"
_ROPE = "assignments/ps3_rope#exercise-1--rotary-embeddings-4-points"
_ROPE_ATTENTION = "assignments/ps3_rope#exercise-2--rotary-multi-head-attention-5-points"
_SLOPES = "assignments/ps3_rope#exercise-3--alibi-slopes-2-points"
_BIAS = "assignments/ps3_rope#exercise-4--the-alibi-bias-2-points"
_ALIBI_ATTENTION = "assignments/ps3_rope#exercise-5--causal-alibi-attention-3-points"
TEACHES = {
    "rope_split_halves": (_ROTATION, _ROPE),
    "rope_exponent_over_d": (_TABLE, _ROPE),
    "rope_base_misplaced": (_TABLE, _ROPE),
    "rope_turns_backwards": (_ROTATION, _ROPE),
    "rope_rotates_values": (_ROTATION, _ROPE_ATTENTION),
    "rope_keys_not_rotated": (_ROTATION, _ROPE_ATTENTION),
    "rope_positions_off_by_one": (_ROTATION, _ROPE_ATTENTION),
    "rope_offset_ignored": (_ROTATION, _ROPE_ATTENTION),
    "rope_keys_offset_too": (_ROTATION, _ROPE_ATTENTION),
    "rope_causal_ignores_offset": (_MASKS, _ROPE_ATTENTION),
    "rope_scale_num_hiddens": (_SCALE, _ROPE_ATTENTION),
    "alibi_heads_from_zero": (_MASKS, _SLOPES),
    "alibi_formula_for_any_count": (_MASKS, _SLOPES),
    "alibi_wrong_half_of_2p": (_MASKS, _SLOPES),
    "alibi_slopes_linear": (_MASKS, _SLOPES),
    "alibi_slopes_reversed": (_MASKS, _SLOPES),
    "alibi_bias_sign": (_MASKS, _BIAS),
    "alibi_bias_query_axis": (_MASKS, _BIAS),
    "alibi_queries_first": (_MASKS, _BIAS),
    "alibi_bias_scaled": (_SCALE, _ALIBI_ATTENTION),
    "alibi_no_causal_mask": (_MASKS, _ALIBI_ATTENTION),
}
BUGS = [replace(bug, teaches=TEACHES[bug.name]) for bug in BUGS]

# Correct answers in other styles than the reference: each must pass every visible check and earn full marks.
_TURN_ALL = f"{_TURN_EVEN}\n    {_TURN_ODD}\n    {_INTERLEAVE}"
_SLOPE_RULE = ("slopes = _geometric_slopes(p)\n    if p < num_heads:\n"
               "        slopes += _geometric_slopes(2 * p)[0::2][:num_heads - p]")
ALTERNATIVES = [
    Bug("rope_complex", "RoPE as a product of complex numbers (the pairs as x_2i + i x_2i+1)",
        ((_TURN_ALL, "pairs = torch.complex(even, odd)                                         # (..., n, d/2)\n"
                     "    turned = pairs * torch.polar(torch.ones_like(angles), angles)\n"
                     "    return torch.view_as_real(turned).flatten(-2)"),)),
    Bug("alibi_slopes_loop", "the slopes' rule written with a loop over heads",
        ((_SLOPE_RULE, "slopes = []\n    for h in range(1, num_heads + 1):\n"
                       "        extra = 2 * (h - p) - 1                    # the odd-numbered slopes of 2p\n"
                       "        exponent = 8.0 * h / p if h <= p else 8.0 * extra / (2 * p)\n"
                       "        slopes.append(2.0 ** -exponent)"),)),
    Bug("alibi_mask_tril", "the causal ALiBi mask built with torch.ones(...).tril and where",
        ((_ATTN_MASK, "attn_mask = torch.where(torch.ones_like(bias, dtype=torch.bool).tril(num_keys - num_queries), "
                      'bias, float("-inf"))'),)),
]

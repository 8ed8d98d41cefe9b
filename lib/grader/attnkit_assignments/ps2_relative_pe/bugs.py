"""Known bugs of problem set 2, each as edits of reference.py (see attnkit_grader.authoring.Bug).

``points``: what the bug keeps at grading in each test cell where it loses some (test_index is worth 3,
test_rel_attention 8, test_skew 4, test_causal 5); ``fails``: checks it must fail. An index bug also
reaches the attention, which calls relative_position_index, as it would in a student's notebook.
"""

from dataclasses import replace

from attnkit_grader.authoring import Bug

_CLIP = "return torch.clamp(cols - rows, -max_distance, max_distance) + max_distance"
_SCORES = "scores = (content + position) / math.sqrt(self.head_dim)"
_SPLIT = '''        X = X.reshape(batch_size, n, self.num_heads, self.head_dim)   # (batch, n, num_heads, head_dim)
        return X.transpose(1, 2)                                     # (batch, num_heads, n, head_dim)'''
_MASKED_SOFTMAX = 'weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)'
_SOFTMAX = "weights = torch.softmax(scores, dim=-1)          # (batch, num_heads, q, k)"
_ZERO_ROWS = "            weights = weights.masked_fill(~mask, 0.0)        # fully masked rows: zeros, not NaN\n"
_DROP = "        weights = self.dropout(weights)\n"
_RETURN = "return self.W_o(output)                              # (batch, q, num_hiddens)"
_REL_V = "        output = output + per_distance_weight @ self.rel_v   # (batch, num_heads, q, head_dim)\n"
_INDEX = "index = relative_position_index(num_queries, num_keys, self.max_distance).to(queries.device)"
_TABLE_K = "self.rel_k = nn.Parameter(torch.randn(num_distances, self.head_dim))"
_TABLE_V = "self.rel_v = nn.Parameter(torch.randn(num_distances, self.head_dim))"
_PER_DISTANCE = "per_distance = q @ self.rel_k.transpose(0, 1)        # (batch, num_heads, q, 2k + 1)"
_PAD = "padded = F.pad(X, (1, 0))                              # (..., L, L + 1): a zero column on the left"
_TALL = "return tall[..., 1:, :]                                # (..., L, L)"
_ALLOWED = "allowed = torch.ones(L, L, dtype=torch.bool, device=scores.device).tril()   # (L, L)"
_SKEWED = "relative = skew(queries @ rel_k.transpose(0, 1))       # (batch, L, L), valid for j <= i"
_SKEWED_SOFTMAX = ("weights = _causal_softmax((content + relative) / math.sqrt(d))\n"
                   "    return weights @ values, weights                       # (batch, L, v), (batch, L, L)")
_ROWS = "rows = (distance.clamp(max=0) + L - 1).to(queries.device)                # (L, L): row of E"

BUGS = [
    # relative_position_index
    Bug("index_i_minus_j",
        "the index uses i - j (query minus key) instead of j - i, so every distance has the wrong sign",
        ((_CLIP, "return torch.clamp(rows - cols, -max_distance, max_distance) + max_distance"),)),
    Bug("index_not_shifted",
        "the index is clip(j - i, -k, k) without the + k, so it runs from -k to k instead of 0 to 2k",
        ((_CLIP, "return torch.clamp(cols - rows, -max_distance, max_distance)"),)),
    Bug("index_not_clipped",
        "the index is j - i + k without clipping to [-k, k], so distances beyond k get rows that do not exist",
        ((_CLIP, "return cols - rows + max_distance"),)),
    Bug("index_clipped_after_shift",
        "the index adds k before clipping to [-k, k], so the distances from 0 to k all share the row 2k",
        ((_CLIP, "return torch.clamp(cols - rows + max_distance, -max_distance, max_distance)"),)),
    Bug("index_int32",
        "the index is an int32 tensor; it selects table rows and must be int64 (torch.long)",
        ((_CLIP, _CLIP + ".to(torch.int32)"),)),
    # RelativeMultiHeadAttention
    Bug("scale_num_hiddens",
        "the scores are divided by sqrt(num_hiddens) instead of sqrt(head_dim), the size of one head",
        ((_SCORES, "scores = (content + position) / math.sqrt(self.num_hiddens)"),)),
    Bug("scale_num_hiddens_no_root",
        "the scores are divided by num_hiddens itself; the scale is 1/sqrt(head_dim)",
        ((_SCORES, "scores = (content + position) / self.num_hiddens"),)),
    Bug("scale_missing",
        "the scores are not divided by sqrt(head_dim)",
        ((_SCORES, "scores = content + position"),)),
    Bug("scale_content_only",
        "only the content term q.k is divided by sqrt(head_dim); the relative term q.a^K must be scaled too",
        ((_SCORES, "scores = content / math.sqrt(self.head_dim) + position"),)),
    Bug("relative_keys_missing",
        "the scores ignore rel_k: q_i . a^K_ij is never added to q_i . k_j",
        ((_SCORES, "scores = content / math.sqrt(self.head_dim)"),)),
    Bug("relative_values_missing",
        "the output ignores rel_v: the weighted sum of a^V_ij is never added to the weighted sum of the values",
        ((_REL_V, ""),)),
    Bug("relative_rows_reversed",
        "the relative table is read in reversed order: the row for distance j - i is taken for i - j",
        ((_INDEX, _INDEX.replace("index = ", "index = 2 * self.max_distance - ")),)),
    Bug("softmax_wrong_axis",
        "the softmax runs over the queries (dim=-2) instead of the keys (dim=-1)",
        ((_MASKED_SOFTMAX, _MASKED_SOFTMAX.replace("dim=-1", "dim=-2")),
         (_SOFTMAX, _SOFTMAX.replace("dim=-1", "dim=-2")))),
    Bug("heads_split_wrong",
        "the heads are split with reshape(batch, num_heads, n, head_dim), which mixes positions and heads; "
        "reshape to (batch, n, num_heads, head_dim) and then transpose",
        ((_SPLIT, "        return X.reshape(batch_size, self.num_heads, n, self.head_dim)\n"),)),
    Bug("valid_lens_ignored",
        "valid_lens is ignored: padded keys still get attention weight",
        (("mask = attention_mask(num_queries, num_keys, valid_lens, device=queries.device)", "mask = None"),)),
    Bug("empty_rows_nan",
        "a query whose valid length is 0 gets NaN weights (a softmax over nothing) instead of zeros",
        ((_ZERO_ROWS, ""),)),
    Bug("dropout_on_output",
        "dropout is applied to the output instead of the attention weights",
        ((_DROP, ""), (_RETURN, "return self.dropout(self.W_o(output))")),
        named_by="dropout acts on the output"),
    Bug("dropout_missing",
        "the attention weights never go through dropout",
        ((_DROP, ""),),
        named_by="changed nothing in train mode"),
    Bug("tables_are_buffers",
        "rel_k and rel_v are buffers (or plain tensors), not parameters: they never train",
        ((_TABLE_K, 'self.register_buffer("rel_k", torch.randn(num_distances, self.head_dim))'),
         (_TABLE_V, 'self.register_buffer("rel_v", torch.randn(num_distances, self.head_dim))'))),
    Bug("table_detached",
        "forward uses a detached rel_k (.detach() or .data), so no gradient reaches the table",
        ((_PER_DISTANCE, "per_distance = q @ self.rel_k.detach().transpose(0, 1)"),)),
    Bug("tables_num_hiddens_wide",
        "rel_k and rel_v have num_hiddens columns; each row is added to one head's vectors, so they need "
        "head_dim = num_hiddens // num_heads",
        ((_TABLE_K, "self.rel_k = nn.Parameter(torch.randn(num_distances, num_hiddens))"),
         (_TABLE_V, "self.rel_v = nn.Parameter(torch.randn(num_distances, num_hiddens))"))),
    Bug("bias_default_true",
        "the linear layers have a bias by default; the exercise fixes bias=False",
        (("def __init__(self, num_hiddens, num_heads, dropout, max_distance, bias=False):",
          "def __init__(self, num_hiddens, num_heads, dropout, max_distance, bias=True):"),),
        named_by="fixes bias=False"),
    # skew
    Bug("skew_pad_right",
        "skew pads the zero column on the right instead of the left",
        ((_PAD, "padded = F.pad(X, (0, 1))"),)),
    Bug("skew_wrong_rows",
        "skew keeps the first L rows of the reshaped (L + 1, L) tensor instead of the last L",
        ((_TALL, "return tall[..., :-1, :]"),)),
    Bug("skew_float32",
        "skew converts its input to float32, so a float64 X comes back float32",
        ((_PAD, "padded = F.pad(X.float(), (1, 0))"),),
        named_by="should be float64"),
    # causal relative attention
    Bug("causal_mask_off_by_one",
        "the causal mask lets query i see key i + 1 (tril(1) instead of tril())",
        ((_ALLOWED, "allowed = torch.ones(L, L, dtype=torch.bool, device=scores.device).tril(1)"),)),
    Bug("naive_rows_reversed",
        "the naive version reads E in reversed order: the row for distance j - i must be E[L - 1 + j - i]",
        ((_ROWS, "rows = (-distance.clamp(max=0)).to(queries.device)"),)),
    Bug("skewed_rows_reversed",
        "the skewed version multiplies by E flipped upside down; E's rows go from distance -(L-1) up to 0",
        ((_SKEWED, "relative = skew(queries @ rel_k.flip(0).transpose(0, 1))"),)),
    Bug("skewed_scale_value_width",
        "the skewed version divides by sqrt of the values' width instead of sqrt(head_dim) of the queries",
        ((_SKEWED_SOFTMAX, _SKEWED_SOFTMAX.replace("math.sqrt(d)", "math.sqrt(values.shape[-1])")),)),
    Bug("skewed_scale_missing",
        "the skewed version does not divide the scores by sqrt(head_dim)",
        ((_SKEWED_SOFTMAX, _SKEWED_SOFTMAX.replace(" / math.sqrt(d)", "")),)),
]

# What each bug keeps at grading in the cells where it loses points, and the checks it fails, on any
# inputs: measured with `python -m attnkit_grader.catalogue`, then read and explained one by one (closing
# note of issue 13). tests/test_bug_catalogue.py holds every bug to its row.
EXPECTED = {
    'index_i_minus_j': ({'test_index': 1, 'test_rel_attention': 3.5},
        "index_example index_saturation index_int64 attn_worked attn_empty_rows attn_gradient "
        "attn_self_weights attn_self_parity attn_cross_parity attn_one_head"),
    'index_not_shifted': ({'test_index': 0.5, 'test_rel_attention': 1.25},
        "index_example index_toeplitz index_saturation index_int64 attn_self_shape attn_cross_shape "
        "attn_weights_shape attn_mask_batch attn_worked attn_empty_rows attn_gradient attn_dropout "
        "attn_self_weights attn_self_parity attn_cross_parity attn_one_head attn_shift attn_mask_rows"),
    'index_not_clipped': ({'test_index': 1, 'test_rel_attention': 0},
        "index_example index_saturation index_int64 attn_tables attn_self_shape attn_cross_shape "
        "attn_weights_shape attn_defaults attn_mask_batch attn_worked attn_empty_rows attn_gradient "
        "attn_dropout attn_self_weights attn_self_parity attn_cross_parity attn_zero_distance attn_one_head "
        "attn_shift attn_mask_rows"),
    'index_clipped_after_shift': ({'test_index': 1, 'test_rel_attention': 1.5},
        "index_example index_saturation index_int64 attn_self_shape attn_cross_shape attn_weights_shape "
        "attn_mask_batch attn_worked attn_empty_rows attn_gradient attn_dropout attn_self_weights "
        "attn_self_parity attn_cross_parity attn_one_head attn_shift"),
    'index_int32': ({'test_index': 0, 'test_rel_attention': 0},
        "index_dtype index_example index_toeplitz index_saturation index_int64 attn_tables attn_self_shape "
        "attn_cross_shape attn_weights_shape attn_defaults attn_mask_batch attn_worked attn_empty_rows "
        "attn_gradient attn_dropout attn_self_weights attn_self_parity attn_cross_parity attn_zero_distance "
        "attn_one_head attn_shift attn_mask_rows"),
    'scale_num_hiddens': ({'test_rel_attention': 3.5},
        "attn_worked attn_empty_rows attn_gradient attn_self_weights attn_self_parity attn_cross_parity "
        "attn_zero_distance"),
    'scale_num_hiddens_no_root': ({'test_rel_attention': 3},
        "attn_worked attn_empty_rows attn_gradient attn_self_weights attn_self_parity attn_cross_parity "
        "attn_zero_distance attn_one_head"),
    'scale_missing': ({'test_rel_attention': 3},
        "attn_worked attn_empty_rows attn_gradient attn_self_weights attn_self_parity attn_cross_parity "
        "attn_zero_distance attn_one_head"),
    'scale_content_only': ({'test_rel_attention': 3.5},
        "attn_worked attn_empty_rows attn_gradient attn_self_weights attn_self_parity attn_cross_parity "
        "attn_one_head"),
    'relative_keys_missing': ({'test_rel_attention': 3.5},
        "attn_worked attn_empty_rows attn_gradient attn_self_weights attn_self_parity attn_cross_parity "
        "attn_one_head"),
    'relative_values_missing': ({'test_rel_attention': 3.5},
        "attn_worked attn_empty_rows attn_gradient attn_self_parity attn_cross_parity attn_zero_distance "
        "attn_one_head"),
    'relative_rows_reversed': ({'test_rel_attention': 3.5},
        "attn_worked attn_empty_rows attn_gradient attn_self_weights attn_self_parity attn_cross_parity "
        "attn_one_head"),
    'softmax_wrong_axis': ({'test_rel_attention': 1.75},
        "attn_weights_shape attn_mask_batch attn_worked attn_empty_rows attn_gradient attn_self_weights "
        "attn_self_parity attn_cross_parity attn_zero_distance attn_one_head attn_shift attn_mask_rows"),
    'heads_split_wrong': ({'test_rel_attention': 2.5},
        "attn_mask_batch attn_worked attn_empty_rows attn_gradient attn_self_weights attn_self_parity "
        "attn_cross_parity attn_zero_distance attn_shift attn_mask_rows"),
    'valid_lens_ignored': ({'test_rel_attention': 4.75},
        "attn_mask_batch attn_worked attn_empty_rows attn_cross_parity attn_zero_distance attn_mask_rows"),
    'empty_rows_nan': ({'test_rel_attention': 7.75},
        "attn_empty_rows"),
    'dropout_on_output': ({'test_rel_attention': 7.5},
        "attn_dropout"),
    'dropout_missing': ({'test_rel_attention': 7.5},
        "attn_dropout"),
    'tables_are_buffers': ({'test_rel_attention': 7.5},
        "attn_gradient"),
    'table_detached': ({'test_rel_attention': 7.5},
        "attn_gradient"),
    'tables_num_hiddens_wide': ({'test_rel_attention': 0.75},
        "attn_tables attn_self_shape attn_cross_shape attn_weights_shape attn_mask_batch attn_worked "
        "attn_empty_rows attn_gradient attn_dropout attn_self_weights attn_self_parity attn_cross_parity "
        "attn_zero_distance attn_shift attn_mask_rows"),
    'bias_default_true': ({'test_rel_attention': 7.75},
        "attn_defaults"),
    'skew_pad_right': ({'test_skew': 1.5, 'test_causal': 1.75},
        "skew_example skew_gather causal_agree causal_worked causal_skewed_parity causal_memory"),
    'skew_wrong_rows': ({'test_skew': 1.5, 'test_causal': 1.75},
        "skew_example skew_gather causal_agree causal_worked causal_skewed_parity causal_memory"),
    'skew_float32': ({'test_skew': 3.5},
        "skew_float64"),
    'causal_mask_off_by_one': ({'test_causal': 0.5},
        "causal_skewed_mask causal_agree causal_worked causal_naive_parity causal_skewed_parity causal_memory"),
    'naive_rows_reversed': ({'test_causal': 2.75},
        "causal_agree causal_worked causal_naive_parity"),
    'skewed_rows_reversed': ({'test_causal': 1.75},
        "causal_agree causal_worked causal_skewed_parity causal_memory"),
    'skewed_scale_value_width': ({'test_causal': 3.25},
        "causal_worked causal_skewed_parity"),
    'skewed_scale_missing': ({'test_causal': 1.75},
        "causal_agree causal_worked causal_skewed_parity causal_memory"),
}

BUGS = [replace(bug, points=EXPECTED[bug.name][0], fails=tuple(EXPECTED[bug.name][1].split()))
        for bug in BUGS]

# Where the course teaches the right thing (the insight report shows it beside each mistake; a test resolves
# every link to a heading of the lecture or of the exercise).
_INDEX = "assignments/ps2_relative_pe#exercise-1--the-relative-position-index-3-points"
_ATTENTION = "assignments/ps2_relative_pe#exercise-2--relative-multi-head-attention-8-points"
_SKEW = "assignments/ps2_relative_pe#exercise-3--skewing-4-points"
_CAUSAL = "assignments/ps2_relative_pe#exercise-4--causal-relative-attention-naive-and-skewed-5-points"
_RELATIVE = "lectures/03_positional_encoding#8-preview-learned-and-relative-encodings"
_SCALE = "lectures/01_self_attention#4-why-divide-by-sqrt-d"
_SOFTMAX = "lectures/01_self_attention#32-the-same-computation-in-pytorch"
_MASKS = "lectures/01_self_attention#61-padding-masks-and-causal-masks"
_EMPTY = "lectures/01_self_attention#63-a-query-that-may-see-nothing"
_FORMULAS = "lectures/04_multihead_attention#2-the-model-in-formulas"
_HEADS = "lectures/04_multihead_attention#4-all-heads-in-one-batched-product"
_ONE_HEAD = "lectures/04_multihead_attention#3-the-formula-one-head-at-a-time"
TEACHES = {
    "index_i_minus_j": (_RELATIVE, _INDEX),
    "index_not_shifted": (_RELATIVE, _INDEX),
    "index_not_clipped": (_RELATIVE, _INDEX),
    "index_clipped_after_shift": (_RELATIVE, _INDEX),
    "index_int32": (_RELATIVE, _INDEX),
    "scale_num_hiddens": (_SCALE, _FORMULAS, _ATTENTION),
    "scale_num_hiddens_no_root": (_SCALE, _FORMULAS, _ATTENTION),
    "scale_missing": (_SCALE, _ATTENTION),
    "scale_content_only": (_SCALE, _RELATIVE, _ATTENTION),
    "relative_keys_missing": (_RELATIVE, _ATTENTION),
    "relative_values_missing": (_RELATIVE, _ATTENTION),
    "relative_rows_reversed": (_RELATIVE, _ATTENTION),
    "softmax_wrong_axis": (_SOFTMAX, _ATTENTION),
    "heads_split_wrong": (_HEADS, _ATTENTION),
    "valid_lens_ignored": (_MASKS, _HEADS, _ATTENTION),
    "empty_rows_nan": (_EMPTY, _ATTENTION),
    "dropout_on_output": (_HEADS, _ATTENTION),
    "dropout_missing": (_HEADS, _ATTENTION),
    "tables_are_buffers": (_RELATIVE, _ATTENTION),
    "table_detached": (_RELATIVE, _ATTENTION),
    "tables_num_hiddens_wide": (_FORMULAS, _ATTENTION),
    "bias_default_true": (_ONE_HEAD, _ATTENTION),
    "skew_pad_right": (_RELATIVE, _SKEW),
    "skew_wrong_rows": (_RELATIVE, _SKEW),
    "skew_float32": (_RELATIVE, _SKEW),
    "causal_mask_off_by_one": (_MASKS, _CAUSAL),
    "naive_rows_reversed": (_RELATIVE, _CAUSAL),
    "skewed_rows_reversed": (_RELATIVE, _CAUSAL),
    "skewed_scale_value_width": (_SCALE, _CAUSAL),
    "skewed_scale_missing": (_SCALE, _CAUSAL),
}
BUGS = [replace(bug, teaches=TEACHES[bug.name]) for bug in BUGS]

# Correct answers in other styles than the reference: each must pass every visible check and earn full
# marks (no false alarm). The notebook's own solution (nn.Embedding tables, attnkit.masked_softmax,
# einsum over the gathered rows) is tested beside them.
ALTERNATIVES = [
    Bug("einsum_scores", "the content scores with einsum",
        (("content = q @ k.transpose(-1, -2)", 'content = torch.einsum("bhqd,bhkd->bhqk", q, k)'),)),
    Bug("minus_inf_then_nan_to_num", "-inf masking, then NaN rows set to zero",
        ((_ZERO_ROWS, "            weights = torch.nan_to_num(weights, nan=0.0)\n"),)),
    Bug("gathered_skew", "skew as a gather of column L - 1 - i + j",
        (('''    padded = F.pad(X, (1, 0))                              # (..., L, L + 1): a zero column on the left
    tall = padded.reshape(*X.shape[:-2], L + 1, L)         # (..., L + 1, L)
    return tall[..., 1:, :]                                # (..., L, L)''',
          '''    i = torch.arange(L, device=X.device).unsqueeze(1)
    j = torch.arange(L, device=X.device).unsqueeze(0)
    column = (L - 1 - i + j).clamp(max=L - 1).expand(*X.shape[:-2], L, L)
    return X.gather(-1, column)'''),)),
]

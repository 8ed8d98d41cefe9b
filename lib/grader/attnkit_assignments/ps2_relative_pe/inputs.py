"""Inputs of problem set 2's probes: random per submission, sizes where a bug class does not depend on them."""

import math

import numpy as np

# The memory probe: causal_relative_attention at this length and head_dim, batch 1, float32. The skewed
# path needs a few L x L float32 matrices (64 MiB each, a few hundred MiB at peak); the naive path's
# (L, L, head_dim) tensor of gathered rows alone is 4 GiB. The sandbox's memory cap must lie between.
MEMORY_LENGTH = 4096
MEMORY_HEAD_DIM = 64
MEMORY_ROWS = 6
LINEARS = ("W_q", "W_k", "W_v", "W_o")


def _weights(rng, num_hiddens, num_heads, max_distance, bias=False):
    """Random weights for RelativeMultiHeadAttention, keyed as the probes load them."""
    head_dim = num_hiddens // num_heads
    arrays = {}
    for name in LINEARS:
        arrays[f"{name}.weight"] = rng.standard_normal((num_hiddens, num_hiddens)) / math.sqrt(num_hiddens)
        if bias:
            arrays[f"{name}.bias"] = 0.1 * rng.standard_normal(num_hiddens)
    for name in ("rel_k", "rel_v"):
        arrays[name] = rng.standard_normal((2 * max_distance + 1, head_dim))
    return arrays


def make_inputs(rng, memory_length=MEMORY_LENGTH, memory_head_dim=MEMORY_HEAD_DIM):
    def integer(low, high):                     # inclusive
        return int(rng.integers(low, high + 1))

    def normal(*shape):
        return rng.standard_normal(shape)

    inputs = {}
    # relative_position_index: each case keeps the structure of a hidden-test case (clipping on both
    # sides, k = 0, k beyond every distance, one query, rectangular both ways), sizes drawn at random; the
    # empty sizes only in the check of the edges.
    inputs["index_dtype"] = {"arrays": {}, "params": {"cases": [[integer(2, 6), integer(3, 8), integer(1, 3)]]}}
    example = [[4, 6, 2]]
    for _ in range(3):
        q, n = integer(3, 9), integer(3, 9)
        n = n + 1 if n == q else n
        example.append([q, n, integer(1, max(1, min(q, n) - 2))])
    inputs["index_example"] = {"arrays": {}, "params": {"cases": example}}
    # The edges, each a check of its own in the notebook too: no query, no key, k = 0, one query, k beyond
    # every distance.
    edges = [[0, integer(1, 6), integer(0, 3)], [integer(1, 6), 0, integer(0, 3)], [integer(2, 6), integer(2, 6), 0],
             [1, integer(2, 8), integer(1, 3)], [integer(2, 5), integer(2, 5), integer(6, 12)]]
    inputs["index_edge"] = {"arrays": {}, "params": {"cases": edges}}
    L = integer(5, 9)
    cases = [[1, 1, 0], [L, L, integer(1, L - 3)], [integer(2, 4), integer(6, 10), integer(1, 2)],
             [integer(7, 10), integer(2, 4), integer(3, 5)], [integer(3, 8), integer(3, 8), 0],
             [integer(2, 6), integer(5, 10), integer(11, 25)], [integer(10, 14), integer(8, 12), integer(2, 4)]]
    inputs["index_cases"] = {"arrays": {}, "params": {"cases": cases}}

    # RelativeMultiHeadAttention: the sizes of the notebook's checks (every length exceeds k + 1, so a
    # missing clip always reaches a row that does not exist), weights and inputs random.
    heads, head_dim = integer(2, 4), integer(2, 6)
    s = {"num_hiddens": heads * head_dim, "num_heads": heads, "max_distance": integer(1, 4)}
    inputs["attn_tables"] = {"arrays": _weights(rng, **s), "params": s}
    s = {"num_hiddens": 16, "num_heads": 4, "max_distance": 3}
    X = normal(2, 5, 16)
    inputs["attn_self_shape"] = {"arrays": {"queries": X, "keys": X, "values": X}, "params": s}
    for name in ("attn_cross_shape", "attn_weights_shape"):
        queries, keys = normal(2, 5, 16), normal(2, 7, 16)
        inputs[name] = {"arrays": {"queries": queries, "keys": keys, "values": keys}, "params": s}
    # The masks: given weights, and other contents for the masked keys and values (the output must not move).
    keys = normal(2, 7, 16)
    inputs["attn_mask_batch"] = {
        "arrays": {**_weights(rng, 16, 4, 3), "queries": normal(2, 5, 16), "keys": keys, "values": keys,
                   "valid_lens": np.array([integer(1, 6), integer(1, 6)], dtype=np.int64),
                   "other_keys": normal(2, 7, 16), "other_values": normal(2, 7, 16)},
        "params": s}

    s = {"num_hiddens": 32, "num_heads": 4, "max_distance": 3, "bias": False}
    X = normal(2, 9, 32)
    inputs["attn_self_parity"] = {"arrays": {**_weights(rng, 32, 4, 3), "queries": X, "keys": X, "values": X},
                                  "params": s}
    s = {"num_hiddens": 24, "num_heads": 3, "max_distance": 2, "bias": True}
    valid_lens = rng.integers(1, 12, size=(2, 5)).astype(np.int64)
    valid_lens[0, 0], valid_lens[1, 1] = 11, integer(2, 10)          # some rows whole, some cut, none trivial
    inputs["attn_cross_parity"] = {
        "arrays": {**_weights(rng, 24, 3, 2, bias=True), "queries": normal(2, 5, 24), "keys": normal(2, 11, 24),
                   "values": normal(2, 11, 24), "valid_lens": valid_lens},
        "params": s}
    s = {"num_hiddens": 16, "num_heads": 4, "max_distance": 0, "bias": False}
    keys = normal(2, 6, 16)
    inputs["attn_zero_distance"] = {
        "arrays": {**_weights(rng, 16, 4, 0), "queries": normal(2, 4, 16), "keys": keys, "values": keys,
                   "valid_lens": np.array([integer(4, 6), integer(2, 5)], dtype=np.int64)},
        "params": s}
    s = {"num_hiddens": 16, "num_heads": 2, "max_distance": 3, "bias": False}
    inputs["attn_shift"] = {"arrays": {**_weights(rng, 16, 2, 3), "X": normal(1, 6, 16),
                                       "prefix": normal(1, integer(4, 6), 16), "other_value": normal(16)},
                            "params": {**s, "changed": integer(0, 5)}}
    s = {"num_hiddens": 16, "num_heads": 4, "max_distance": 2, "bias": False}
    keys = normal(2, 8, 16)
    inputs["attn_mask_rows"] = {
        "arrays": {**_weights(rng, 16, 4, 2), "queries": normal(2, 3, 16), "keys": keys, "values": keys,
                   "valid_lens": rng.integers(1, 8, size=(2, 3)).astype(np.int64),
                   "other_keys": normal(2, 8, 16), "other_values": normal(2, 8, 16)},
        "params": s}

    # The exercise's own 2-head case size (the notebook's worked case), with random weights and valid_lens.
    s = {"num_hiddens": 4, "num_heads": 2, "max_distance": 1, "bias": False}
    keys = normal(2, 4, 4)
    inputs["attn_worked"] = {
        "arrays": {**_weights(rng, 4, 2, 1), "queries": normal(2, 3, 4), "keys": keys, "values": keys,
                   "valid_lens": rng.integers(1, 5, size=(2, 3)).astype(np.int64)},
        "params": s}
    s = {"num_hiddens": 8, "num_heads": 1, "max_distance": 2, "bias": False}
    X = normal(2, 6, 8)
    inputs["attn_one_head"] = {"arrays": {**_weights(rng, 8, 1, 2), "queries": X, "keys": X, "values": X},
                               "params": s}
    s = {"num_hiddens": 12, "num_heads": 3, "max_distance": 2, "bias": False}
    keys = normal(2, 5, 12)
    lens = rng.integers(1, 6, size=(2, 4)).astype(np.int64)
    lens[0, integer(0, 3)], lens[1, integer(0, 3)] = 0, 0                 # one query of each sequence sees nothing
    inputs["attn_empty_rows"] = {
        "arrays": {**_weights(rng, 12, 3, 2), "queries": normal(2, 4, 12), "keys": keys, "values": keys,
                   "valid_lens": lens},
        "params": s}
    s = {"num_hiddens": 12, "num_heads": 3, "max_distance": 2, "bias": False}
    keys = normal(2, 6, 12)
    inputs["attn_gradient"] = {
        "arrays": {**_weights(rng, 12, 3, 2), "queries": normal(2, 5, 12), "keys": keys, "values": keys,
                   "G": normal(2, 5, 12)},
        "params": s}
    inputs["attn_defaults"] = {"arrays": {}, "params": {"num_hiddens": 4 * integer(2, 4), "num_heads": 4,
                                                        "max_distance": integer(1, 3)}}
    s = {"num_hiddens": 16, "num_heads": 4, "max_distance": 3, "bias": False, "samples": 200,
         "seed": integer(0, 2**31 - 1)}
    keys = normal(2, 7, 16)
    inputs["attn_dropout"] = {"arrays": {**_weights(rng, 16, 4, 3), "queries": normal(2, 5, 16), "keys": keys,
                                         "values": keys},
                              "params": s}

    # skew
    inputs["skew_shape"] = {"arrays": {"X": normal(2, 3, 5, 5)}, "params": {}}
    inputs["skew_example"] = {"arrays": {"example": np.arange(16.0).reshape(4, 4), "random": normal(4, 4),
                                         "one": normal(1, 1)},
                              "params": {}}
    inputs["skew_gather"] = {"arrays": {f"L{L}": normal(3, L, L) for L in (1, 2, 7, 32)}, "params": {}}
    inputs["skew_unchanged"] = {"arrays": {"X": normal(2, 6, 6)}, "params": {}}
    inputs["skew_float64"] = {"arrays": {"X": normal(2, 3, 5, 5)}, "params": {}}

    # causal relative attention
    def causal(L, suffix="", value_dim=8):
        return {f"queries{suffix}": normal(2, L, 8), f"keys{suffix}": normal(2, L, 8),
                f"values{suffix}": normal(2, L, value_dim), f"rel_k{suffix}": normal(L, 8)}

    for name in ("causal_shapes", "causal_skewed_mask", "causal_agree"):
        inputs[name] = {"arrays": causal(6), "params": {}}
    inputs["causal_worked"] = {"arrays": {"queries": normal(2, 4, 3), "keys": normal(2, 4, 3),
                                          "values": normal(2, 4, 5), "rel_k": normal(4, 3),
                                          **causal(1, "_one", value_dim=5)}, "params": {}}
    for name in ("causal_naive_parity", "causal_skewed_parity"):
        arrays = {}
        wide = integer(3, 12)
        for L, value_dim in ((1, 8), (6, 8), (17, wide + (wide >= 8))):      # values narrower or wider than d
            arrays.update(causal(L, f"_{L}", value_dim))
        inputs[name] = {"arrays": arrays, "params": {"lengths": [1, 6, 17]}}
    L, d = memory_length, memory_head_dim
    middle = rng.choice(np.arange(1, L - 1), size=MEMORY_ROWS - 2, replace=False)
    rows = np.sort(np.concatenate([[0, L - 1], middle])).astype(np.int64)
    inputs["causal_memory"] = {
        "arrays": {key: (0.1 * normal(1, L, d)).astype(np.float32) for key in ("queries", "keys", "values")}
        | {"rel_k": (0.1 * normal(L, d)).astype(np.float32), "rows": rows},
        "params": {"length": L, "head_dim": d}}
    return inputs

"""Rotary position embeddings and ALiBi: the reference solution (trusted: never staged into a sandbox)."""

import math


def scaled_scores(queries, keys):
    """(batch, num_queries, d), (batch, num_keys, d) -> (batch, num_queries, num_keys): q_i . k_j / sqrt(d)."""
    return queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])   # (batch, num_queries, num_keys)

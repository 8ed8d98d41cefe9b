"""Rotary position embeddings and ALiBi: the behaviour mutation testing compares (see attnkit_grader.mutation)."""

import numpy as np
import torch

SURVIVORS = {}


def behaviour(namespace, seed):
    """{key: float64 array}: scaled_scores on random inputs of a few sizes (d >= 2, where the scale shows)."""
    rng = np.random.default_rng(seed)
    seen = {}
    for case, (batch, num_queries, num_keys, d) in enumerate([(1, 2, 3, 2), (2, 1, 1, 5), (3, 4, 2, 3)]):
        queries = torch.from_numpy(rng.standard_normal((batch, num_queries, d)))
        keys = torch.from_numpy(rng.standard_normal((batch, num_keys, d)))
        seen[f"{case}/scores"] = namespace["scaled_scores"](queries, keys).numpy()
    return seen

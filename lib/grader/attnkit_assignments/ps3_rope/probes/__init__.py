"""Rotary position embeddings and ALiBi: how the grader calls the student's scaled_scores (runs in the sandbox; no reference here)."""

from attnkit_sandbox.probing import as_tensor, floats, lookup, probe


def _scores(namespace, arrays, params):
    """scaled_scores on the grader's queries and keys."""
    result = lookup(namespace, "scaled_scores")(as_tensor(arrays["queries"]), as_tensor(arrays["keys"]))
    return {"scores": floats(result, "scaled_scores(queries, keys)")}


PROBES = [probe("scores", "test_scores", _scores), probe("scores_random", "test_scores", _scores)]

"""Rotary position embeddings and ALiBi: its checks, decided by the trusted grader from the probes' numbers, and their inputs.

``CHECKS`` declares each check once: its test cell, the probe whose outputs it reads, what it checks (the text
students see), its points and whether it is hidden (absent from the released notebook). ``make_inputs`` draws
the probes' inputs, fresh for every submission.
"""

from attnkit_grader.authoring import Spec, as_tensor, close, sentence, shape_text, tolerance

from .reference import scaled_scores


def _check_scores(case, got):
    """The student's scores against the reference's in float64, within what float32 rounding explains."""
    queries, keys = case["arrays"]["queries"], case["arrays"]["keys"]
    shape = (queries.shape[0], queries.shape[1], keys.shape[1])            # (batch, num_queries, num_keys)
    # a message is a template and its values, never a finished sentence: it is rendered where it is read
    what = sentence("scaled_scores(queries, keys) for queries {queries} and keys {keys}",
                    queries=shape_text(queries.shape), keys=shape_text(keys.shape))
    scores = got.floats("scores", shape, what)
    ref64 = scaled_scores(as_tensor(queries), as_tensor(keys)).numpy()
    ref32 = scaled_scores(as_tensor(queries).float(), as_tensor(keys).float()).double().numpy()
    close(scores, ref64, tolerance(ref32, ref64), what)


CHECKS = [
    Spec("test_scores", "scores", "scaled_scores is queries @ keys^T / sqrt(d)", 1, _check_scores),
    Spec("test_scores", "scores_random", "the same on random sizes and values", 1, _check_scores, hidden=True),
]


def make_inputs(rng, **_sizes):
    """Fresh queries and keys for each probe, of random sizes. d is at least 2: with d = 1 the scale 1/sqrt(d)
    is 1, and an answer that forgets it (the catalogue's ``unscaled``) would keep full marks on that draw."""
    def pair():
        batch, num_queries, num_keys = (int(rng.integers(1, 6)) for _ in range(3))
        d = int(rng.integers(2, 9))
        return {"arrays": {"queries": rng.standard_normal((batch, num_queries, d)),
                           "keys": rng.standard_normal((batch, num_keys, d))}, "params": {}}

    return {"scores": pair(), "scores_random": pair()}

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

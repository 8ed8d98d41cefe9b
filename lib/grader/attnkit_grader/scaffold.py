"""A new assignment in one command: ``attnkit new-assignment NAME [--title TITLE]``.

It writes one folder of the grader and the assignment's notebooks, and nothing else:

- ``lib/grader/attnkit_assignments/NAME/``: the manifest (``assignment.py``), the reference solution, the
  checks (one visible, one hidden) with their inputs, the probes (``probes/``, the part staged into a
  sandbox), ``hidden.py`` (the hidden part of the test cell under plain nbgrader), an empty bug catalogue
  and the behaviour mutation testing compares;
- ``source/NAME/NAME.ipynb``: one exercise (``scaled_scores``), its test cell with the visible check and
  the hidden one, and a written answer graded by hand;
- ``translations/NAME_fr/`` and ``NAME_zh/``: copies of the English notebook marked untranslated in their
  metadata (``{"attnkit": {"untranslated": true}}``), which the drift test and the site accept until a
  translator replaces them.

Then ``attnkit release`` generates release/, and every test that runs over the registry's assignments
grades the new one too. Replace the exercise with yours, keeping the shapes of the files: the guide for
authors says how (site/pages/en/guide/authors.md).
"""

import json
from pathlib import Path

from . import editions, run_all
from .authoring import NAME

UNTRANSLATED = {"attnkit": {"untranslated": True}}       # notebook metadata of a copy awaiting its translator


def new_assignment(root, name, title=None):
    """Write the new assignment ``name`` into the kit's repository at ``root``; return the paths written."""
    root = Path(root)
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ValueError(f"name: expected lower-case letters, digits and '_' (a folder and module name), got {name!r}")
    if name.rpartition("_")[2] in editions.LANGUAGES:
        raise ValueError(f"name: {name!r} ends like a language edition (_{name.rpartition('_')[2]}); choose another")
    title = title or name.replace("_", " ").capitalize()
    folder = root / "lib" / "grader" / "attnkit_assignments" / name
    targets = [folder, root / "source" / name] + [root / editions.TRANSLATIONS / editions.edition_name(name, language)
                                                  for language in editions.LANGUAGES]
    if not (root / "lib" / "grader" / "attnkit_assignments").is_dir() or not (root / "source").is_dir():
        raise FileNotFoundError(f"root: {root} is not the kit's repository (no lib/grader/attnkit_assignments, source/)")
    taken = [str(t.relative_to(root)) for t in targets if t.exists()]
    if taken:
        raise FileExistsError(f"name: {name} exists already ({', '.join(taken)})")
    files = {folder / relative: text.format(name=name, title=title) for relative, text in GRADER_FILES.items()}
    english = notebook(name, title)
    files[root / "source" / name / f"{name}.ipynb"] = english
    for language in editions.LANGUAGES:
        copy = json.loads(english)
        copy["metadata"].update(UNTRANSLATED)
        files[root / editions.TRANSLATIONS / editions.edition_name(name, language) / f"{name}.ipynb"] = \
            json.dumps(copy, indent=1, ensure_ascii=False) + "\n"
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return sorted(files)


def untranslated(notebook):
    """True for an edition that is still the scaffold's copy of the English notebook (see UNTRANSLATED)."""
    return bool(notebook.get("metadata", {}).get("attnkit", {}).get("untranslated"))


def notebook(name, title):
    """The source notebook (nbformat 4.5 JSON text): one exercise, a setup cell and one test cell."""
    def cell(kind, source, grade_id=None, points=None, solution=False, locked=False):
        made = {"cell_type": kind, "id": f"{name[:40]}-{len(cells)}", "metadata": {}, "source": source}
        if grade_id:
            made["metadata"]["nbgrader"] = {"grade": points is not None, "grade_id": grade_id, "locked": locked,
                                            "schema_version": 3, "solution": solution, "task": False}
            if points is not None:
                made["metadata"]["nbgrader"]["points"] = points
        if kind == "code":
            made.update(execution_count=None, outputs=[])
        cells.append(made)

    cells = []
    cell("markdown", f"# {title}\n\nOne exercise: code graded automatically (2 points: a visible check you can run, "
                     f"and a hidden check that runs at grading on fresh random inputs) and a written answer graded "
                     f"by hand (1 point). (Written by `attnkit new-assignment {name}`: replace it with your "
                     f"exercise.)")
    cell("code", SETUP, "setup", locked=True)
    cell("markdown", EXERCISE)
    cell("code", ANSWER, "scores_answer", solution=True)
    cell("code", TEST.format(name=name), "test_scores", points=2, locked=True)
    cell("markdown", WRITTEN, "scores_written", points=1, solution=True)
    content = {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3 (ipykernel)",
                                                           "language": "python", "name": "python3"},
                                            "language_info": {"name": "python"}},
               "nbformat": 4, "nbformat_minor": 5}
    run_all.tag(content)                  # the answer and test cells: Run All goes past their errors
    return json.dumps(content, indent=1, ensure_ascii=False) + "\n"


SETUP = """import math

import torch

from attnkit.checking import Checks, expect_close

torch.manual_seed(0)"""

EXERCISE = """## Exercise 1 — Scaled dot-product scores (2 points)

Write `scaled_scores(queries, keys)`: for `queries` of shape `(batch, num_queries, d)` and `keys` of shape
`(batch, num_keys, d)`, return the `(batch, num_queries, num_keys)` tensor of the scores
$\\mathbf{q}_i \\cdot \\mathbf{k}_j / \\sqrt{d}$."""

ANSWER = """def scaled_scores(queries, keys):
    \"\"\"(batch, num_queries, d), (batch, num_keys, d) -> (batch, num_queries, num_keys).\"\"\"
    ### BEGIN SOLUTION
    return queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])   # (batch, num_queries, num_keys)
    ### END SOLUTION"""

WRITTEN = """**Question.** Why divide by $\\sqrt{d}$? (One or two sentences.)

### BEGIN SOLUTION
*Model answer.* With entries of unit variance, $\\mathbf{q} \\cdot \\mathbf{k}$ has variance $d$: without the
division, large $d$ pushes the softmax into saturation, where its gradients vanish.

*Grading (1 point):* the variance grows with $d$, and the softmax saturates.
### END SOLUTION"""

TEST = """\"\"\"Checks scaled_scores on a worked case; at grading, on random inputs too.\"\"\"
checks = Checks(points=2)

# Two queries and three keys of dimension 2: q_i . k_j, divided by sqrt(2).
queries = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]])
keys = torch.tensor([[[1.0, 1.0], [2.0, 0.0], [0.0, 1.0]]])

with checks("scaled_scores is queries @ keys^T / sqrt(d)", 1):
    expect_close(scaled_scores(queries, keys), torch.tensor([[[1.0, 2.0, 0.0], [2.0, 0.0, 2.0]]]) / math.sqrt(2),
                 "scaled_scores on the worked case", atol=1e-5)

### BEGIN HIDDEN TESTS
from attnkit_assignments.{name} import hidden as hidden_checks
hidden_checks.scores(checks, scaled_scores)
### END HIDDEN TESTS
checks.score()"""

GRADER_FILES = {
    "__init__.py": '"""{title}: probes/ (staged), the manifest and its trusted part (see assignment.py)."""\n',
    "assignment.py": '''"""{title}: the manifest the grader's registry reads (attnkit_grader.authoring)."""

from attnkit_grader.authoring import Assignment

from . import bugs, checks, mutation, reference

ASSIGNMENT = Assignment(
    name="{name}",
    title="{title}",
    checks=tuple(checks.CHECKS),
    make_inputs=checks.make_inputs,
    reference=reference,
    bugs=tuple(bugs.BUGS),
    alternatives=tuple(bugs.ALTERNATIVES),
    behaviour=mutation.behaviour,
    survivors=mutation.SURVIVORS,
)
''',
    "reference.py": '''"""{title}: the reference solution (trusted: never staged into a sandbox)."""

import math


def scaled_scores(queries, keys):
    """(batch, num_queries, d), (batch, num_keys, d) -> (batch, num_queries, num_keys): q_i . k_j / sqrt(d)."""
    return queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])   # (batch, num_queries, num_keys)
''',
    "checks.py": '''"""{title}: its checks, decided by the trusted grader from the probes' numbers, and their inputs."""

from attnkit_grader.authoring import Spec, as_tensor, close, sentence, shape_text, tolerance

from .reference import scaled_scores


def _check_scores(case, got):
    queries, keys = case["arrays"]["queries"], case["arrays"]["keys"]
    shape = (queries.shape[0], queries.shape[1], keys.shape[1])
    # a message is a template and its values, never a finished sentence: it is rendered where it is read
    what = sentence("scaled_scores(queries, keys) for queries {{queries}} and keys {{keys}}",
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
    """Fresh queries and keys for each probe, of random sizes."""
    def pair():
        batch, num_queries, num_keys, d = (int(rng.integers(1, 6)) for _ in range(4))
        return {{"arrays": {{"queries": rng.standard_normal((batch, num_queries, d)),
                            "keys": rng.standard_normal((batch, num_keys, d))}}, "params": {{}}}}

    return {{"scores": pair(), "scores_random": pair()}}
''',
    "probes/__init__.py": '''"""{title}: how the grader calls the student's scaled_scores (runs in the sandbox; no reference here)."""

from attnkit_sandbox.probing import as_tensor, floats, lookup, probe


def _scores(namespace, arrays, params):
    """scaled_scores on the grader's queries and keys."""
    result = lookup(namespace, "scaled_scores")(as_tensor(arrays["queries"]), as_tensor(arrays["keys"]))
    return {{"scores": floats(result, "scaled_scores(queries, keys)")}}


PROBES = [probe("scores", "test_scores", _scores), probe("scores_random", "test_scores", _scores)]
''',
    "hidden.py": '''"""{title}: the hidden part of its test cell under plain nbgrader (see attnkit_grader.judging.in_kernel)."""

from attnkit_grader.authoring import run

from .assignment import ASSIGNMENT


def scores(checks, function):
    run(checks, ASSIGNMENT, "test_scores", {{"scaled_scores": function}})
''',
    "bugs.py": '''"""{title}: the known-bug catalogue, as edits of reference.py (see attnkit_grader.authoring.Bug).

Empty for now: add the mistakes students make, each with the one line a student reads; the catalogue's
tests then require that every one loses points and is named by the feedback.
"""

BUGS = []
ALTERNATIVES = []       # correct answers in other styles, which every visible check must accept
''',
    "mutation.py": '''"""{title}: the behaviour mutation testing compares (see attnkit_grader.mutation)."""

import numpy as np
import torch

SURVIVORS = {{}}


def behaviour(namespace, seed):
    """{{key: float64 array}}: scaled_scores on random inputs of a few sizes."""
    rng = np.random.default_rng(seed)
    seen = {{}}
    for case, (batch, num_queries, num_keys, d) in enumerate([(1, 2, 3, 2), (2, 1, 1, 5), (3, 4, 2, 1)]):
        queries = torch.from_numpy(rng.standard_normal((batch, num_queries, d)))
        keys = torch.from_numpy(rng.standard_normal((batch, num_keys, d)))
        seen[f"{{case}}/scores"] = namespace["scaled_scores"](queries, keys).numpy()
    return seen
''',
}

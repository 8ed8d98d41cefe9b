"""Trusted verdicts: the assignments' probes on the example class, judged by attnkit_grader.judging.

The probes run here in the test process, on namespaces built by executing the setup and answer cells
of each fixture notebook (never its test cells), with the trusted code unimportable while student
code runs, as in the sandbox. The judge then decides every check from the returned arrays alone.
The memory probe runs at a small length here; the slow test runs it at full size under the same
address-space cap as the sandbox, in a subprocess.
"""

import ast
import contextlib
import copy
import json
import re
import subprocess
import sys
import time
from functools import lru_cache
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch

import attnkit_assignments
from attnkit_grader.judging import engine as judges
from attnkit_grader import registry
from attnkit_sandbox import probe_sets
from attnkit_sandbox.probe_sets import probes_of

ASSIGNMENTS = registry.assignments()

REPO = Path(__file__).resolve().parents[1]
CLASS = REPO / "examples" / "example_class"
EXPECTED = json.loads((CLASS / "expected_scores.json").read_text())
NOT_RUN = {"infinite_loop", "broken_json"}     # a timeout and unreadable JSON: the runner's business
SLOW_CELLS = {"experiment_answer"}             # trains two models for a hand-graded answer; no probe uses it
SMALL = 192                                    # the memory probe's length in-process (no cap here)
SUBMISSIONS = [(student, assignment) for student, per in sorted(EXPECTED.items()) if student not in NOT_RUN
               for assignment in sorted(per)]

# Checks that arrays with the right structure satisfy without computing the exercise's function:
# shapes, dtypes, parameter count and trainability, row sums, an input left alone. They are worth
# the same in the notebooks' visible checks, where trivial code earns them too (see test_forger_...).
STRUCTURAL = {assignment: {check["id"] for check in registry.describe(assignment) if check["kind"] == "structure"}
              for assignment in ASSIGNMENTS}

# The checks each known bug must fail, and no others (ids from registry.check_ids).
ALL_PS1 = {"pe_parameters", "pe_default", "pe_trainable", "pe_gradient", "pe_gradient_random", "pe_train_forward",
           "pe_train_output", "pe_shape", "pe_known_table", "pe_edge", "pe_too_long", "pe_parity", "pe_dropout"}
INDEX = {"index_dtype", "index_example", "index_edge", "index_toeplitz", "index_saturation"}
ATTENTION = {"attn_tables", "attn_self_shape", "attn_cross_shape", "attn_weights_shape", "attn_defaults",
             "attn_mask_batch", "attn_worked", "attn_empty_rows", "attn_gradient", "attn_dropout",
             "attn_self_weights", "attn_self_parity", "attn_cross_parity", "attn_zero_distance", "attn_one_head",
             "attn_shift", "attn_mask_rows"}
SKEW = {"skew_shape", "skew_example", "skew_gather", "skew_unchanged", "skew_float64"}
CAUSAL = {"causal_shapes", "causal_skewed_mask", "causal_agree", "causal_worked", "causal_naive_parity",
          "causal_skewed_parity", "causal_memory"}
# The comparisons with the reference that a wrong attention fails, whatever the bug.
ATTENTION_VALUES = {"attn_worked", "attn_empty_rows", "attn_gradient", "attn_self_parity", "attn_cross_parity",
                    "attn_one_head"}
# Every assignment's instructor answers fail nothing and its blank release every check.
EVERY_CHECK = {a: {i for ids in registry.check_ids(a).values() for i in ids} for a in ASSIGNMENTS}
FAILED = {
    **{("ref_solution", a): set() for a in ASSIGNMENTS},
    **{("blank", a): EVERY_CHECK[a] for a in ASSIGNMENTS},
    ("deleted_test_cell", "ps1_learnable_pe"): set(),
    ("cheat_exec", "ps1_learnable_pe"): ALL_PS1,
    ("cheat_import", "ps2_relative_pe"): ATTENTION | SKEW | CAUSAL,
    # a structure or property check that passed in a cell where no comparison with the reference passed
    # (and none failed with a catalogued bug's numbers) is reported failed ("right, but counts only ...")
    ("bug_frozen_table", "ps1_learnable_pe"): {"pe_trainable", "pe_gradient", "pe_gradient_random"},
    ("partial", "ps1_learnable_pe"): {"pe_too_long", "pe_dropout"},
    ("partial", "ps2_relative_pe"): {"attn_mask_batch", "attn_worked", "attn_empty_rows", "attn_cross_parity",
                                     "attn_zero_distance", "attn_mask_rows", "causal_shapes", "causal_agree",
                                     "causal_worked", "causal_naive_parity"},
    ("bug_no_clip", "ps2_relative_pe"): {"index_example", "index_edge", "index_saturation"} | ATTENTION,
    ("bug_sign_flip", "ps2_relative_pe"): {"index_example", "index_edge", "index_saturation", "attn_self_weights"}
    | ATTENTION_VALUES,
    ("bug_no_value_term", "ps2_relative_pe"): ATTENTION_VALUES | {"attn_zero_distance"},
    ("bug_num_hiddens_scale", "ps2_relative_pe"): ATTENTION_VALUES | {"attn_self_weights", "attn_zero_distance"},
    ("bug_skew_reversed", "ps2_relative_pe"): SKEW | {"causal_agree", "causal_worked", "causal_skewed_parity",
                                                      "causal_memory"},
    ("import_error", "ps2_relative_pe"): INDEX | ATTENTION,
    ("cheat_import", "ps3_rope"): EVERY_CHECK["ps3_rope"],
    # the slopes 2^(-8h/n) for any head count (right for powers of two) and no causal mask in the ALiBi attention
    ("partial", "ps3_rope"): {"slopes_edge", "slopes_other", "slopes_random", "alibi_worked", "alibi_cache",
                              "alibi_random"},
    ("bug_sign_flip", "ps3_rope"): {"bias_square", "bias_cache", "bias_edge", "bias_random", "alibi_worked",
                                    "alibi_cache", "alibi_random"},
}


# ---------------------------------------------------------------------------------------------------
# Running student code in-process as the sandbox would, without the reference solutions

@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """The notebooks' setup cells ask for one thread; keep it so for the whole module (switching the
    thread count back and forth makes the tiny matrix products here wait on idle threads)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def is_trusted(name):
    """The grader and the trusted part of every assignment folder: never importable in the sandbox."""
    parts = name.split(".")
    return parts[0] == "attnkit_grader" or (parts[0] == "attnkit_assignments" and len(parts) > 2
                                            and parts[2] != "probes")


class _NoSolutions:
    """Meta-path finder that makes the trusted code unimportable, as it is in the sandbox."""

    def find_spec(self, name, path=None, target=None):
        if is_trusted(name):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


@contextlib.contextmanager
def without_solutions():
    """While student code runs: no trusted code; torch's global settings put back afterwards."""
    hidden = {name: sys.modules.pop(name) for name in list(sys.modules) if is_trusted(name)}
    attributes = {(name, child): vars(sys.modules[name]).pop(child) for name, child in
                  (module.rpartition(".")[::2] for module in hidden)
                  if name in sys.modules and child in vars(sys.modules[name])}
    finder = _NoSolutions()
    sys.meta_path.insert(0, finder)
    threads, grad, dtype = torch.get_num_threads(), torch.is_grad_enabled(), torch.get_default_dtype()
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        sys.modules.update(hidden)
        for (name, child), value in attributes.items():
            setattr(sys.modules[name], child, value)
        torch.set_num_threads(threads)
        torch.set_grad_enabled(grad)
        torch.set_default_dtype(dtype)


def execute(sources):
    """A namespace from running ``sources`` (code strings) in order; a cell that raises is skipped over."""
    namespace = {"__name__": "__main__"}
    with without_solutions():
        for index, source in enumerate(sources):
            try:
                exec(compile(source, f"<cell {index}>", "exec"), namespace)
            except Exception:       # noqa: BLE001 - as in the runner: the next cell still runs
                pass
    return namespace


def answer_cells(student, assignment):
    """The setup cell and the answer cells of a fixture notebook (no test cells)."""
    notebook = nbformat.read(CLASS / student / assignment / f"{assignment}.ipynb", as_version=4)
    sources = []
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or meta.get("grade") or meta.get("grade_id") in SLOW_CELLS:
            continue
        if meta.get("grade_id") == "setup" or meta.get("solution"):
            sources.append(cell.source)
    return sources


@lru_cache(maxsize=None)
def fixture_namespace(student, assignment):
    return execute(answer_cells(student, assignment))


def run_probes(namespace, assignment, inputs):
    """What the runner does after the cells: every probe on a fresh copy of its inputs."""
    with without_solutions():
        return probe_sets.run_here(namespace, assignment, inputs)


def inputs_for(assignment, seed):
    return registry.make_inputs(assignment, seed, memory_length=SMALL)


@lru_cache(maxsize=None)
def graded(student, assignment, seed):
    """(inputs, outputs, errors, verdicts) of a fixture submission."""
    inputs = inputs_for(assignment, seed)
    outputs, errors = run_probes(fixture_namespace(student, assignment), assignment, inputs)
    return inputs, outputs, errors, judges.judge(registry.get(assignment), inputs, outputs, errors)


def by_id(assignment, verdicts):
    """{check id: Check}."""
    ids = registry.check_ids(assignment)
    return {check_id: check for grade_id, checks in verdicts.items()
            for check_id, check in zip(ids[grade_id], checks, strict=True)}


def passed_ids(assignment, verdicts):
    return {check_id for check_id, check in by_id(assignment, verdicts).items() if check.passed}


def total(verdicts):
    return sum(judges.scores(verdicts).values())


# ---------------------------------------------------------------------------------------------------
# The contract between probes and checks

def notebook_points(assignment):
    notebook = nbformat.read(REPO / "source" / assignment / f"{assignment}.ipynb", as_version=4)
    return {cell.metadata["nbgrader"]["grade_id"]: float(cell.metadata["nbgrader"]["points"])
            for cell in notebook.cells
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade")}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_checks_carry_the_points_of_the_notebook_cells(assignment):
    assert registry.max_points(assignment) == notebook_points(assignment)
    ids = [check_id for cell in registry.check_ids(assignment).values() for check_id in cell]
    assert len(ids) == len(set(ids))
    kinds = {check["id"]: check["kind"] for check in registry.describe(assignment)}
    assert set(kinds) == set(ids) and set(kinds.values()) <= {"values", "property", "structure"}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_checks_not_hidden_carry_the_points_of_the_visible_checks(assignment):
    """The registry's visible checks are the student's visible checks, one for one and in order: the same
    points and kind, so the hidden part of a cell (the registry's hidden checks) completes it exactly."""
    notebook = nbformat.read(REPO / "release" / assignment / f"{assignment}.ipynb", as_version=4)
    visible = {}
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.cell_type == "code" and cell.metadata["nbgrader"].get("grade"):
            calls = [item.context_expr for node in ast.walk(ast.parse(cell.source)) if isinstance(node, ast.With)
                     for item in node.items]
            visible[grade_id] = [(float(call.args[1].value), _kind_of(call)) for call in calls
                                 if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "checks"]
    judged = {grade_id: [] for grade_id in visible}
    for check in registry.describe(assignment):
        if not check["hidden"]:
            judged[check["grade_id"]].append((check["points"], check["kind"]))
    assert judged == visible


def _kind_of(call):
    """The ``kind=`` of a ``checks(what, points, kind=...)`` call in a notebook ("values" by default)."""
    return next((keyword.value.value for keyword in call.keywords if keyword.arg == "kind"), "values")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_probe_feeds_checks_of_its_own_cell(assignment):
    probe_cells = {probe.name: probe.grade_id for probe in probes_of(assignment)}
    spec_cells = {spec.probe: spec.grade_id for spec in registry.specs(assignment)}
    assert probe_cells == spec_cells
    assert all(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}", name) for name in probe_cells)
    assert set(inputs_for(assignment, 0)) == set(probe_cells)
    if assignment == "ps2_relative_pe":      # the one probe that may run out of memory runs last
        assert probes_of(assignment)[-1].name == "causal_memory"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_probes_hold_no_reference_code(assignment):
    """What the sandbox imports never imports the grader or an assignment's trusted part (they are not
    staged, so it could not; this keeps the probes readable as documentation of the API)."""
    import attnkit_sandbox.probing
    paths = [Path(attnkit_sandbox.probing.__file__), Path(next(iter(attnkit_assignments.__path__))) / assignment /
             "probes" / "__init__.py"]
    for path in paths:
        tree = ast.parse(path.read_text())
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert imported <= {"dataclasses", "typing", "re", "numpy", "torch", "attnkit.checking",
                            "attnkit_sandbox.probing"}, (path, imported)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_inputs_are_reproducible_fresh_and_plain(assignment):
    first, again, other = (registry.make_inputs(assignment, seed) for seed in (11, 11, 12))
    for probe, entry in first.items():
        assert set(entry) == {"arrays", "params"}
        assert json.loads(json.dumps(entry["params"])) == entry["params"]
        for key, value in entry["arrays"].items():
            assert type(value) is np.ndarray and value.dtype.kind in "biuf", (probe, key)
            assert np.array_equal(value, again[probe]["arrays"][key])
        random_arrays = [key for key, value in entry["arrays"].items() if value.dtype.kind == "f"
                         and key != "example"]
        if random_arrays:   # a new seed: new numbers (or new sizes) for every probe that takes any
            assert any(value.shape != other[probe]["arrays"][key].shape
                       or not np.array_equal(value, other[probe]["arrays"][key])
                       for key, value in entry["arrays"].items()), probe
    if assignment == "ps2_relative_pe":
        memory = first["causal_memory"]["params"]
        from attnkit_assignments.ps2_relative_pe.inputs import MEMORY_HEAD_DIM, MEMORY_LENGTH
        assert (memory["length"], memory["head_dim"]) == (MEMORY_LENGTH, MEMORY_HEAD_DIM)


# ---------------------------------------------------------------------------------------------------
# The example class: same scores as plain nbgrader, each bug losing exactly its checks

def score_table(seed):
    """Rows (student, assignment, grade_id, judged, expected) for every fixture that runs."""
    rows = []
    for student, assignment in SUBMISSIONS:
        judged = judges.scores(graded(student, assignment, seed)[3])
        for grade_id in sorted(judged):
            rows.append((student, assignment, grade_id, judged[grade_id], EXPECTED[student][assignment][grade_id]))
    return rows


@pytest.mark.parametrize("seed", [0, 1])
def test_judged_scores_equal_expected_scores(seed):
    rows = score_table(seed)
    table = "\n".join(f"{s:22s} {a:17s} {g:19s} judged {j:4g}  expected {e:4g}{'' if j == e else '  <--'}"
                      for s, a, g, j, e in rows)
    print(table)
    assert all(judged == expected for *_, judged, expected in rows), table


@pytest.mark.parametrize("student, assignment", SUBMISSIONS)
def test_each_known_bug_loses_exactly_its_checks(student, assignment):
    verdicts = graded(student, assignment, 0)[3]
    failed = {check_id for check_id, check in by_id(assignment, verdicts).items() if not check.passed}
    assert failed == FAILED[(student, assignment)]
    for check in by_id(assignment, verdicts).values():
        assert check.points == (check.max_points if check.passed else 0.0)
        assert check.passed == (check.text() == "")
        assert "grader could not" not in check.text()


def test_failed_checks_say_what_to_fix():
    checks = by_id("ps2_relative_pe", graded("bug_skew_reversed", "ps2_relative_pe", 0)[3])
    assert "skew(X) on and below the diagonal" in checks["skew_gather"].text()
    checks = by_id("ps1_learnable_pe", graded("bug_frozen_table", "ps1_learnable_pe", 0)[3])
    assert "requires_grad=False" in checks["pe_trainable"].text()
    assert "no gradient reached the table" in checks["pe_gradient"].text()
    checks = by_id("ps2_relative_pe", graded("blank", "ps2_relative_pe", 0)[3])
    assert checks["skew_shape"].text() == "not implemented yet: your code still raises NotImplementedError"
    checks = by_id("ps1_learnable_pe", graded("partial", "ps1_learnable_pe", 0)[3])
    assert "expected ValueError, got another exception" in checks["pe_too_long"].text()


def test_judged_scores_equal_expected_scores_for_many_seeds():
    for seed in range(2, 12):
        mismatches = [row for row in score_table(seed) if row[3] != row[4]]
        assert not mismatches, (seed, mismatches)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_a_notebook_that_never_got_there_scores_zero(assignment):
    inputs = inputs_for(assignment, 0)
    for outputs, errors in (({}, {}), ({}, {"*": "outputs.npz is not a zip file"}), (None, None)):
        verdicts = judges.judge(registry.get(assignment), inputs, outputs, errors)
        assert total(verdicts) == 0
        assert set(verdicts) == set(registry.max_points(assignment))
    message = judges.judge(registry.get(assignment), inputs, {}, {"*": "outputs.npz is not a zip file"})
    assert all("could not be used" in c.text() for checks in message.values() for c in checks)
    not_run = judges.judge(registry.get(assignment), inputs, {}, {probe.name: "not run: not valid JSON (line 3)"
                                                    for probe in probes_of(assignment)})
    assert all(c.text().startswith("this check did not run: not valid JSON (line 3)")
               for checks in not_run.values() for c in checks)


# ---------------------------------------------------------------------------------------------------
# Forgery: lies, patched comparisons, malformed or forged outputs earn nothing

LIAR = '''
import torch
from torch import nn

class Liar:
    """Equal to everything, close to everything, true, and any shape you like."""
    shape = property(lambda self: torch.Size([2, 5, 16]))
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __bool__(self): return True
    def __getattr__(self, name): return lambda *args, **kwargs: self
    def __array__(self, *args, **kwargs): raise TypeError("no")

def relative_position_index(num_queries, num_keys, max_distance):
    return Liar()

class RelativeMultiHeadAttention(nn.Module):
    def __init__(self, num_hiddens, num_heads, dropout, max_distance, bias=False):
        super().__init__()
        self.rel_k = self.rel_v = Liar()
        self.attention_weights = Liar()
    def forward(self, queries, keys, values, valid_lens=None):
        return Liar()

def skew(X):
    return Liar()

def causal_relative_attention(queries, keys, values, rel_k):
    return Liar(), Liar()

causal_relative_attention_naive = causal_relative_attention
'''

SUBCLASS = '''
import torch
from torch import nn

class Fake(torch.Tensor):
    """Holds zeros; every Python-level way of reading it claims the right answer, every comparison is True."""
    answer = None
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in ("eq", "__eq__", "allclose", "equal", "isclose", "ne", "__ne__"):
            return True if name in ("allclose", "equal") else torch.tensor(name not in ("ne", "__ne__"))
        return super().__torch_function__(func, types, args, kwargs or {})
    def numpy(self, *args, **kwargs): return Fake.answer.numpy()
    def tolist(self): return Fake.answer.tolist()
    def __array__(self, *args, **kwargs): return Fake.answer.numpy()
    def detach(self): return Fake.answer
    def cpu(self): return Fake.answer
    def double(self): return Fake.answer.double()
    def to(self, *args, **kwargs): return Fake.answer.to(*args, **kwargs)

class LearnablePositionalEncoding(nn.Module):
    def __init__(self, num_hiddens, dropout, max_len=1000):
        super().__init__()
        self.P = nn.Parameter(torch.zeros(max_len, num_hiddens))
    def forward(self, X):
        Fake.answer = (X + self.P[:X.shape[1]]).detach()        # the right numbers, shown only to readers
        return torch.zeros_like(X).as_subclass(Fake)
'''


def test_objects_that_lie_about_equality_earn_nothing():
    namespace = execute([LIAR])
    inputs = inputs_for("ps2_relative_pe", 3)
    outputs, errors = run_probes(namespace, "ps2_relative_pe", inputs)
    verdicts = judges.judge(registry.get("ps2_relative_pe"), inputs, outputs, errors)
    assert total(verdicts) == 0
    assert not outputs                       # no probe could turn a Liar into numbers


def test_a_tensor_subclass_is_read_for_what_it_holds():
    namespace = execute([SUBCLASS])
    inputs = inputs_for("ps1_learnable_pe", 3)
    outputs, errors = run_probes(namespace, "ps1_learnable_pe", inputs)
    verdicts = judges.judge(registry.get("ps1_learnable_pe"), inputs, outputs, errors)
    # Zeros of the right shape: right structure, no right value, so nothing counts.
    assert not passed_ids("ps1_learnable_pe", verdicts) and total(verdicts) == 0
    assert all(by_id("ps1_learnable_pe", verdicts)[i].text().startswith("right, but counts only once")
               for i in STRUCTURAL["ps1_learnable_pe"])
    assert np.array_equal(outputs["pe_known_table"]["output"], np.zeros_like(inputs["pe_known_table"]["arrays"]["X"]))


PATCHES = '''
import numpy as np
import torch
import attnkit.checking

torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.isclose = lambda a, b, *args, **kwargs: torch.ones_like(a, dtype=torch.bool)
torch.testing.assert_close = lambda *args, **kwargs: None
torch.Tensor.__eq__ = lambda self, other: torch.ones_like(self, dtype=torch.bool)
np.allclose = lambda *args, **kwargs: True
np.array_equal = lambda *args, **kwargs: True
np.testing.assert_allclose = lambda *args, **kwargs: None
for name in ("expect", "expect_close", "expect_equal", "expect_shape", "expect_raises"):
    setattr(attnkit.checking, name, lambda *args, **kwargs: None)
'''


@contextlib.contextmanager
def patches_undone():
    """Put back everything PATCHES replaces (in the sandbox the process just ends)."""
    import attnkit.checking as checking
    saved = [(torch, "allclose"), (torch, "equal"), (torch, "isclose"), (torch.testing, "assert_close"),
             (torch.Tensor, "__eq__"), (np, "allclose"), (np, "array_equal"), (np.testing, "assert_allclose")]
    saved += [(checking, name)
              for name in ("expect", "expect_close", "expect_equal", "expect_shape", "expect_raises")]
    values = [(owner, name, owner.__dict__[name] if name in owner.__dict__ else getattr(owner, name))
              for owner, name in saved]
    try:
        yield
    finally:
        for owner, name, value in values:
            setattr(owner, name, value)


def test_monkeypatched_comparisons_change_nothing():
    """The bug_sign_flip answers plus every comparison patched to say 'equal': still 3.5/8 on attention."""
    honest = judges.scores(graded("bug_sign_flip", "ps2_relative_pe", 5)[3])
    with patches_undone():
        namespace = execute(answer_cells("bug_sign_flip", "ps2_relative_pe") + [PATCHES])
        assert torch.allclose(torch.zeros(1), torch.ones(1))          # the patches are live...
        inputs = inputs_for("ps2_relative_pe", 5)
        outputs, errors = run_probes(namespace, "ps2_relative_pe", inputs)
        verdicts = judges.judge(registry.get("ps2_relative_pe"), inputs, outputs, errors)   # ...even while judging here
    assert judges.scores(verdicts) == honest
    assert judges.scores(verdicts)["test_rel_attention"] == 3.5


def _replace_every_array(outputs, make):
    return {probe: {key: make(value) for key, value in arrays.items()} for probe, arrays in outputs.items()}


MALFORMED = {
    "object dtype": lambda v: np.array([object()] * max(v.size, 1), dtype=object),
    "strings": lambda v: np.full(v.shape, "1.0"),
    "complex": lambda v: v.astype(np.complex128),
    "a list": lambda v: v.tolist(),
    "a matrix subclass": lambda v: v.reshape(v.shape[0] if v.ndim and v.size else 1, -1).view(np.matrix),
    "a masked array": lambda v: np.ma.masked_array(v),
    "NaN": lambda v: np.full(v.shape, np.nan),
    "inf": lambda v: np.full(v.shape, np.inf),
    "one more row": lambda v: np.concatenate([v, v[:1]]) if v.ndim else v[None],
    "a scalar": lambda v: np.float64(v.ravel()[0] if v.size else 0.0),
    "huge": lambda v: np.broadcast_to(np.float64(0.0), (10**6, 10**4)),
    "None": lambda v: None,
}


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_malformed_outputs_fail_their_checks_and_never_raise(kind):
    for assignment in ASSIGNMENTS:
        inputs, outputs, _, _ = graded("ref_solution", assignment, 0)
        start = time.perf_counter()
        verdicts = judges.judge(registry.get(assignment), inputs, _replace_every_array(outputs, MALFORMED[kind]), {})
        assert time.perf_counter() - start < 5
        passed = passed_ids(assignment, verdicts)
        if kind == "one more row":       # "count" and "outcome" are scalars there: unchanged, not read alone
            passed -= {"pe_parameters", "pe_too_long"}
        assert not passed, (kind, passed)


def test_odd_containers_never_raise():
    inputs = inputs_for("ps2_relative_pe", 0)
    for outputs, errors in [({"skew_shape": "not a dict"}, {"skew_shape": 12345}), ([1, 2], "no"),
                            ({"skew_shape/output_X": np.zeros((2, 3, 5, 5))}, {}),
                            ({"skew_shape": {"output_X": np.zeros((2, 3, 5, 5))}}, {"skew_shape": None})]:
        verdicts = judges.judge(registry.get("ps2_relative_pe"), inputs, outputs, errors)
        assert total(verdicts) <= 0.5
    flat = judges.judge(registry.get("ps2_relative_pe"), inputs, {"skew_shape/output_X": np.zeros((2, 3, 5, 5))}, {})
    # the flat "probe/key" layout is read too: the shape is right (alone in its cell, it counts for nothing)
    assert by_id("ps2_relative_pe", flat)["skew_shape"].text().startswith("right, but counts only once")
    assert not judges.judge(registry.get("ps2_relative_pe"), {}, {"skew_shape": {"output_X": np.zeros((2, 3, 5, 5))}},
                            {})["test_skew"][0].passed


def test_garbage_of_every_shape_and_dtype_never_raises():
    rng = np.random.default_rng(0)
    for assignment in ASSIGNMENTS:
        inputs = inputs_for(assignment, 0)
        reference = graded("ref_solution", assignment, 0)[1]
        for _ in range(20):
            outputs = {}
            for probe, arrays in reference.items():
                outputs[probe] = {}
                for key in arrays:
                    shape = tuple(int(s) for s in rng.integers(0, 4, size=rng.integers(0, 4)))
                    dtype = rng.choice([np.float64, np.float32, np.int64, np.int8, np.bool_, np.uint8])
                    outputs[probe][key] = (rng.standard_normal(shape) * 3).astype(dtype)
            judges.judge(registry.get(assignment), inputs, outputs, {})


# Checks decided by comparing with the reference on the grader's inputs (the others test a property
# of the submission's own numbers: structure, masks, shift invariance, agreement of its two versions).
AGAINST_REFERENCE = {
    "ps1_learnable_pe": {"pe_gradient", "pe_known_table", "pe_edge", "pe_too_long", "pe_parity", "pe_dropout"},
    "ps2_relative_pe": {"index_example", "index_edge", "index_saturation", "attn_self_parity", "attn_cross_parity",
                        "attn_zero_distance", "skew_example", "skew_gather", "causal_agree", "causal_naive_parity",
                        "causal_skewed_parity", "causal_memory"},
    # the slopes are a function of the head count alone, and the edge cases' inputs are fixed: left out
    "ps3_rope": {"rope_example", "rope_edge", "rope_random", "attn_worked", "attn_cached", "attn_causal_parity",
                 "attn_cross_parity", "bias_square", "bias_cache", "bias_random", "alibi_worked", "alibi_cache",
                 "alibi_random"},
}


def test_answers_precomputed_for_other_inputs_fail_every_comparison_with_the_reference():
    for assignment in ASSIGNMENTS:
        _, outputs, errors, _ = graded("ref_solution", assignment, 1)
        verdicts = judges.judge(registry.get(assignment), inputs_for(assignment, 2), outputs, errors)
        assert not passed_ids(assignment, verdicts) & AGAINST_REFERENCE[assignment]


def forged_outputs(assignment, inputs):
    """What a submission in full control of its sandbox can write without computing the exercise:
    zeros, echoes of its inputs, uniform or one-hot weights, and any flag it likes."""
    if assignment == "ps3_rope":
        return _forged_ps3(inputs)
    forged = {}
    for probe, entry in inputs.items():
        a, p = entry["arrays"], entry["params"]
        out = {}
        if probe == "pe_parameters":
            out = {"count": np.array(1), "shapes": np.array([[*a["table"].shape, -1, -1]]), "table": a["table"]}
        elif probe == "pe_trainable":
            out = {"table": a["table"] - p["lr"] * a["direction"]}
        elif probe == "pe_default":
            out = {"count": np.array(1), "shapes": np.array([[1000, p["num_hiddens"], -1, -1]])}
        elif probe == "pe_gradient":
            out = {"grad": np.zeros_like(a["table"]), "output": a["X"].copy()}
        elif probe in ("pe_shape", "pe_known_table", "pe_edge"):
            out = {"output": np.zeros_like(a["X"])}
        elif probe == "pe_too_long":
            out = {"boundary_output": np.zeros_like(a["X_boundary"]), "outcome": np.array(1)}
        elif probe == "pe_parity":
            out = {f"output_{i}": np.zeros_like(a[f"X_{i}"]) for i in range(len(p["cases"]))}
        elif probe == "pe_dropout":
            out = {"train_output": np.zeros_like(a["X"]), "eval_output": np.zeros_like(a["X"])}
        elif probe.startswith("index"):
            out = {f"index_{i}": np.full((q, n), k, dtype=np.int64) for i, (q, n, k) in enumerate(p["cases"])}
        elif probe == "attn_tables":
            out = {"rel_k_shape": np.array(a["rel_k"].shape), "rel_v_shape": np.array(a["rel_v"].shape),
                   "rel_k": a["rel_k"], "rel_v": a["rel_v"]}
        elif probe == "attn_defaults":
            out = {"has_bias": np.zeros(4, dtype=np.int64)}
        elif probe == "attn_gradient":
            out = {"rel_k_grad": np.zeros_like(a["rel_k"]), "rel_v_grad": np.zeros_like(a["rel_v"]),
                   "rel_k_is_parameter": np.array(1), "rel_v_is_parameter": np.array(1)}
        elif probe == "attn_dropout":                    # a train-mode spread around the eval output
            batch, q = a["queries"].shape[:2]
            noise = np.random.default_rng(0).standard_normal((p["samples"], batch, q, p["num_hiddens"]))
            out = {"eval_output": np.zeros((batch, q, p["num_hiddens"])), "train_outputs": noise - noise.mean(0)}
        elif probe.startswith("attn") and probe != "attn_shift":
            batch, q, k = a["queries"].shape[0], a["queries"].shape[1], a["keys"].shape[1]
            out = {"output": np.zeros((batch, q, p["num_hiddens"])),
                   "attention_weights": np.full((batch, p["num_heads"], q, k), 1.0 / k)}
        elif probe == "attn_shift":
            n, s, h = a["X"].shape[1], a["prefix"].shape[1], p["num_heads"]
            out = {"weights_X": np.full((1, h, n, n), 1.0 / n), "weights_Y": np.full((1, h, n + s, n + s), 1.0 / n)}
        elif probe == "skew_unchanged":
            out = {"input_after": a["X"].astype(np.float32).astype(np.float64), "output": a["X"].copy()}
        elif probe.startswith("skew"):
            out = {f"output_{key}": value.copy() for key, value in a.items()}
        elif probe in ("causal_shapes", "causal_skewed_mask", "causal_agree"):
            L = a["queries"].shape[1]
            eye = np.broadcast_to(np.eye(L), (2, L, L)).copy()
            values = a["values"].astype(np.float32).astype(np.float64)
            out = {f"{v}_{k}": x for v in ("naive", "skewed") for k, x in (("output", values), ("weights", eye))}
        elif probe == "causal_worked":
            L, width = a["queries"].shape[1], a["values"].shape[2]
            out = {f"{v}_{k}": np.zeros((2, L, L if k == "weights" else width)) for v in ("naive", "skewed")
                   for k in ("output", "weights")}
        elif probe.startswith("causal") and probe != "causal_memory":
            out = {f"{k}_{L}": np.zeros((2, L, L if k == "weights" else a[f"values_{L}"].shape[2]))
                   for L in p["lengths"] for k in ("output", "weights")}
        elif probe == "causal_memory":
            L, d = p["length"], p["head_dim"]
            out = {"shapes": np.array([[1, L, d], [1, L, L]]), "output_rows": np.zeros((len(a["rows"]), d)),
                   "weight_rows": np.zeros((len(a["rows"]), L))}
        forged[probe] = out
    return forged


def _forged_ps3(inputs):
    """Problem set 3's: zeros for every tensor, uniform weights, the same scores before and after a shift,
    a constant slope, and ValueError wherever one is required."""
    forged = {}
    for probe, entry in inputs.items():
        a, p = entry["arrays"], entry["params"]
        if probe in ("rope_odd", "attn_odd", "bias_too_many"):
            out = {"outcome": np.array(1)}
        elif probe == "rope_shape":
            out = {"output": np.zeros_like(a["x"])}
        elif probe in ("rope_example", "rope_edge"):
            out = {f"output_{i}": np.zeros_like(a[f"x_{i}"]) for i in range(p["cases"])}
        elif probe == "rope_relative":
            n = a["q"].shape[0]
            out = {"scores_positions": np.zeros((n, n)), "scores_shifted": np.zeros((n, n))}
        elif probe == "rope_random":
            out = {"output32": np.zeros_like(a["x"]), "output64": np.zeros_like(a["x"])}
        elif probe == "attn_cached":
            out = {"full": np.zeros(a["queries"].shape), "step": np.zeros(a["step_queries"].shape)}
        elif probe.startswith("attn"):
            batch, q, k = a["queries"].shape[0], a["queries"].shape[1], a["keys"].shape[1]
            out = {"output": np.zeros((batch, q, p["num_hiddens"])),
                   "attention_weights": np.full((batch, p["num_heads"], q, k), 1.0 / k)}
        elif probe.startswith("slopes"):
            out = {f"slopes_{n}": np.full(n, 0.5) for n in p["counts"]}
        elif probe.startswith("bias"):
            out = {f"bias_{i}": np.zeros((a[f"slopes_{i}"].shape[0], q, n)) for i, (q, n) in enumerate(p["cases"])}
        else:                                                           # the causal ALiBi attention
            out = {f"output_{i}": np.zeros(a[f"queries_{i}"].shape[:3] + a[f"values_{i}"].shape[3:])
                   for i in range(p["cases"])}
        forged[probe] = out
    return forged


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_forger_in_full_control_of_the_sandbox_earns_nothing_from_structure(assignment):
    """Arrays of the right structure (zeros, echoes, uniform weights, any flag) pass the structure checks,
    which then count for nothing, since no check of the values in the same cell passes."""
    inputs = inputs_for(assignment, 4)
    verdicts = judges.judge(registry.get(assignment), inputs, forged_outputs(assignment, inputs), {})
    assert total(verdicts) == 0 and not passed_ids(assignment, verdicts)
    checks = by_id(assignment, verdicts)
    assert all(checks[i].text().startswith("right, but counts only once") for i in STRUCTURAL[assignment])
    if assignment == "ps1_learnable_pe":
        # the ValueError flag of pe_too_long, forged with a right output at n = max_len (as if the forger had
        # computed it), is a property: it counts only beside a passing check of the values, so forging it gains
        # nothing that writing the one-line raise into a solved exercise would not
        forged = forged_outputs(assignment, inputs)
        a = inputs["pe_too_long"]["arrays"]
        forged["pe_too_long"]["boundary_output"] = a["X_boundary"] + a["table"][None]
        checks = by_id(assignment, judges.judge(registry.get(assignment), inputs, forged, {}))
        assert checks["pe_too_long"].max_points > 0 and checks["pe_too_long"].points == 0
        assert checks["pe_too_long"].text().startswith("right, but counts only once")


def test_structure_counts_beside_a_passing_check_of_the_values():
    """The reference solution keeps every structural point; a bug that fails only the values loses them."""
    for assignment in ASSIGNMENTS:
        verdicts = graded("ref_solution", assignment, 0)[3]
        assert all(check.passed for cells in verdicts.values() for check in cells)
    skew = by_id("ps2_relative_pe", graded("bug_skew_reversed", "ps2_relative_pe", 0)[3])
    assert [skew[i].passed for i in ("skew_shape", "skew_unchanged", "skew_float64")] == [False] * 3
    assert judges.scores(graded("bug_skew_reversed", "ps2_relative_pe", 0)[3])["test_skew"] == 0.0


def test_probes_return_fresh_plain_arrays():
    _, outputs, errors, _ = graded("ref_solution", "ps2_relative_pe", 0)
    assert not errors
    for arrays in outputs.values():
        for value in arrays.values():
            assert type(value) is np.ndarray and value.dtype.kind in "biuf" and value.flags.owndata


# ---------------------------------------------------------------------------------------------------
# The memory probe at full size, under the sandbox's address-space cap, in a subprocess

MEMORY_RUN = '''
import json, resource, sys
import numpy as np
cap = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
import torch
torch.set_num_threads(1)
from attnkit_sandbox.probe_sets import probes_of
namespace = {"__name__": "__main__"}
exec(open(sys.argv[2]).read(), namespace)
probe = next(p for p in probes_of("ps2_relative_pe") if p.name == "causal_memory")
with np.load(sys.argv[3]) as data:
    arrays = {key: data[key] for key in data.files}
try:
    result = probe.run(namespace, arrays, json.loads(sys.argv[4]))
    np.savez(sys.argv[5], **result)
except Exception as exc:
    print(f"{type(exc).__name__}: {exc}")
'''

MEMORY_CAP = 3 * 2**30          # the sandbox's default RLIMIT_AS (attnkit_grader.isolation.limits.Limits.memory)


def _memory_run(tmp_path, sources, inputs):
    code = tmp_path / "answers.py"
    code.write_text("\n\n".join(sources))
    entry = inputs["causal_memory"]
    np.savez(tmp_path / "in.npz", **entry["arrays"])
    result = subprocess.run([sys.executable, "-c", MEMORY_RUN, str(MEMORY_CAP), str(code), str(tmp_path / "in.npz"),
                             json.dumps(entry["params"]), str(tmp_path / "out.npz")],
                            capture_output=True, text=True, timeout=300, cwd=REPO)
    if (tmp_path / "out.npz").exists():
        with np.load(tmp_path / "out.npz") as data:
            return {"causal_memory": {key: data[key] for key in data.files}}, {}
    return {}, {"causal_memory": result.stdout.strip() or result.stderr.strip()[-300:] or "no result"}


@pytest.mark.slow
def test_memory_probe_separates_skewed_from_naive_under_the_sandbox_cap(tmp_path):
    inputs = registry.make_inputs("ps2_relative_pe", 9)
    answers = answer_cells("ref_solution", "ps2_relative_pe")
    outputs, errors = _memory_run(tmp_path, answers, inputs)
    checks = by_id("ps2_relative_pe", judges.judge(registry.get("ps2_relative_pe"), inputs, outputs, errors))
    assert checks["causal_memory"].passed, checks["causal_memory"].text()

    (tmp_path / "out.npz").unlink()
    naive = answers + ["causal_relative_attention = causal_relative_attention_naive"]
    outputs, errors = _memory_run(tmp_path, naive, inputs)
    checks = by_id("ps2_relative_pe", judges.judge(registry.get("ps2_relative_pe"), inputs, outputs, errors))
    assert not checks["causal_memory"].passed
    assert "allocate" in checks["causal_memory"].text() and "skew(queries @ rel_k.T)" in checks[
        "causal_memory"].text()


def test_memory_probe_message_without_any_result():
    inputs = inputs_for("ps2_relative_pe", 0)
    checks = by_id("ps2_relative_pe", judges.judge(registry.get("ps2_relative_pe"), inputs, {}, {}))
    assert "memory" in checks["causal_memory"].text() and "GiB" in checks["causal_memory"].text()


def test_judge_leaves_its_inputs_alone():
    inputs, outputs, errors, _ = graded("ref_solution", "ps1_learnable_pe", 0)
    before = copy.deepcopy((inputs, outputs))
    judges.judge(registry.get("ps1_learnable_pe"), inputs, outputs, errors)
    for probe in inputs:
        for key, value in inputs[probe]["arrays"].items():
            assert np.array_equal(value, before[0][probe]["arrays"][key])
    assert all(np.array_equal(v, before[1][p][k]) for p in outputs for k, v in outputs[p].items())



def test_the_public_probes_load_without_nbgrader():
    """The sandbox and in-process users of the probes never pay for nbgrader's import (seconds)."""
    code = ("import sys, attnkit_sandbox.probing, attnkit_sandbox.runner, attnkit_assignments.ps2_relative_pe.probes; "
            "print('nbgrader' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == "False"

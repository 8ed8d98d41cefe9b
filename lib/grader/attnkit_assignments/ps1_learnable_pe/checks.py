"""Checks of problem set 1, decided by the trusted grader (never staged into a sandbox).

``CHECKS`` declares every check of the assignment once: the test cell it belongs to, the probe whose
outputs it reads, what it checks (shown to students), its points, its kind (``values``, ``structure`` or
``property``: see the grading policy, site/pages/en/guide/grading.md) and whether it is hidden (absent
from the released notebook). ``make_inputs`` draws the probes' inputs, fresh for every submission. See
``attnkit_grader.judging.engine`` for how they are decided; ``assignment.py`` declares them in the
manifest.
"""

import numpy as np
import torch

from attnkit_grader.authoring import N_, Spec, as_tensor, close, expect, fmt, scaled, sentence, shape_text, tolerance

from .reference import LearnablePositionalEncoding as ReferencePE


def _reference_pe(sizes, table, X):
    """Reference outputs in eval mode: (float64 on the float64 inputs, float32 on the float32 inputs)."""
    results = []
    for dtype in (torch.float64, torch.float32):
        module = ReferencePE(sizes["num_hiddens"], 0.0, max_len=sizes["max_len"]).to(dtype).eval()
        with torch.no_grad():
            module.P.copy_(as_tensor(table, dtype))
            results.append(module(as_tensor(X, dtype)).double().numpy())
    return results


def _parameter_shapes(got, shape, default=False):
    count = got.integer("count", sentence("the number of parameters"))
    shapes = got.native("shapes", None, "the parameter shapes")
    listed = [tuple(int(s) for s in row if s >= 0) for row in shapes.reshape(-1, 4)[:count]] \
        if shapes.ndim == 2 and shapes.shape[1] == 4 and shapes.dtype.kind in "iu" else []
    expect(count != 0, "the module should have exactly one parameter (the table), found 0; a table stored with "
                       "register_buffer or as a plain tensor attribute is not an nn.Parameter: the optimizer never "
                       "sees it")
    expect(count == 1 or not listed, "the module should have exactly one parameter (the table), found {count} with "
                                     "shapes {shapes}", count=count, shapes=", ".join(map(shape_text, listed)))
    expect(count == 1, "the module should have exactly one parameter (the table), found {count}", count=count)
    found = shape_text(listed[0]) if listed else sentence("another shape")
    if default:
        expect(len(listed) == 1 and listed[0] == shape,
               "the positional table should have shape (max_len, num_hiddens) = {shape} when max_len is not given "
               "(the exercise fixes max_len=1000), got {found}", shape=shape_text(shape), found=found)
    expect(len(listed) == 1 and listed[0] == shape,
           "the positional table should have shape (max_len, num_hiddens) = {shape}, got {found}",
           shape=shape_text(shape), found=found)


def _check_default(case, got):
    _parameter_shapes(got, (1000, case["params"]["num_hiddens"]), default=True)


def _check_one_parameter(case, got):
    p, a = case["params"], case["arrays"]
    shape = (p["max_len"], p["num_hiddens"])
    _parameter_shapes(got, shape)
    table = got.floats("table", shape, "the table read back after loading values into it")
    close(table, a["table"], scaled(a["table"], 1e-6), "the table read back after loading values into it")


def _check_trainable(case, got):
    p, a = case["params"], case["arrays"]
    shape = (p["max_len"], p["num_hiddens"])
    after = got.floats("table", shape, "the table after one SGD step")
    expected = a["table"] - p["lr"] * a["direction"]
    expect(np.abs(after - a["table"]).max() > scaled(a["table"], 1e-6),
            "one SGD step did not change the table: it has requires_grad=False (or is not an nn.Parameter), "
            "so training would never change it")
    close(after, expected, scaled(expected, 1e-5),
          sentence("the table after one SGD step (lr={lr}) on sum(P * D)", lr=fmt(p["lr"])))


def _check_gradient(case, got):
    p, a = case["params"], case["arrays"]
    shape, n = (p["max_len"], p["num_hiddens"]), p["num_steps"]
    grad = got.floats("grad", shape, "the gradient of the table")
    want = np.asarray(a["G"], dtype=np.float64).sum(axis=0)              # (n, num_hiddens)
    expect(np.abs(grad).max() > 0,
            "no gradient reached the table: is it an nn.Parameter with requires_grad=True, and is it used "
            "in forward (not a detached copy)?")
    close(grad[:n], want, scaled(want, 1e-5),
          sentence("the gradient of sum(pe(X) * G) for the rows 0..{last} used by a length-{n} input (each should "
                   "be the sum of G over the batch)", last=n - 1, n=n))
    expect(bool((grad[n:] == 0).all()),
           "rows {n}..{last} were not used by a length-{n} input but received a gradient", n=n, last=p["max_len"] - 1)


def _check_train_forward(case, got):
    p, a = case["params"], case["arrays"]
    out = got.floats("output", a["X"].shape, "pe(X) in train mode with dropout=0")
    ref64, ref32 = _reference_pe(p, a["table"], a["X"])
    close(out, ref64, max(tolerance(ref32, ref64), scaled(ref64, 1e-6)),
           "pe(X) in train mode with dropout=0, through which the gradient flows (should be X + P[:n])")


def _check_pe_shape(case, got):
    X = case["arrays"]["X"]
    got.floats("output", X.shape, sentence("pe(X) for X of shape {shape}", shape=shape_text(X.shape)))


def _check_known_table(case, got):
    p, a = case["params"], case["arrays"]
    X = a["X"]
    out = got.floats("output", X.shape, "pe(X)")
    ref64, ref32 = _reference_pe(p, a["table"], X)
    close(out, ref64, max(tolerance(ref32, ref64), scaled(ref64, 1e-6)),
           "pe(X) with a known table (row i should be added to position i)")


def _check_edge(case, got):
    p, a = case["params"], case["arrays"]
    X = a["X"]
    what = sentence("pe(X) with num_hiddens = 1 and max_len = n = 1 (an edge case: the smallest sizes must work)")
    out = got.floats("output", X.shape, what)
    ref64, ref32 = _reference_pe(p, a["table"], X)
    close(out, ref64, max(tolerance(ref32, ref64), scaled(ref64, 1e-6)), what)


def _check_too_long(case, got):
    p, a = case["params"], case["arrays"]
    boundary = got.floats("boundary_output", a["X_boundary"].shape,
                          sentence("pe(X) with n = max_len = {max_len}", max_len=p["max_len"]))
    ref64, ref32 = _reference_pe(p, a["table"], a["X_boundary"])
    close(boundary, ref64, max(tolerance(ref32, ref64), scaled(ref64, 1e-6)),
          sentence("pe(X) with n = max_len = {max_len} (an edge case: the longest input allowed must work)",
                   max_len=p["max_len"]))
    outcome = got.integer("outcome", sentence("what happened with n = max_len + 1"))
    what = sentence("pe(X) with {n} positions, max_len={max_len}", n=p["max_len"] + 1, max_len=p["max_len"])
    expect(outcome != 0, "{what}: expected ValueError, but it returned an output", what=what)
    expect(outcome == 1, "{what}: expected ValueError, got another exception (check n > max_len yourself and raise "
                         "ValueError naming the argument and both lengths)", what=what)


def _check_pe_parity(case, got):
    p, a = case["params"], case["arrays"]
    for index, (batch, num_steps, num_hiddens, max_len) in enumerate(p["cases"]):
        X = a[f"X_{index}"]
        template = (N_("output for X of shape {shape}, max_len={max_len} (an edge case: num_hiddens = 1)")
                    if num_hiddens == 1 else N_("output for X of shape {shape}, max_len={max_len}"))
        what = sentence(template, shape=shape_text(X.shape), max_len=max_len)
        out = got.floats(f"output_{index}", X.shape, what)
        ref64, ref32 = _reference_pe({"num_hiddens": num_hiddens, "max_len": max_len}, a[f"table_{index}"], X)
        close(out, ref64, tolerance(ref32, ref64), what)


def _check_dropout(case, got):
    """Eval mode: X + P exactly as the reference. Train mode (p = 0.5): every entry 0 or twice the module's own
    eval output, about half of them 0. Which entries are zeroed is random, the messages are not (the notebook's
    check, attnkit.checking.expect_dropout, words them alike)."""
    a = case["arrays"]
    X = a["X"]
    expected = X + a["table"][:X.shape[1]]
    kept = got.floats("eval_output", X.shape, "pe(X) in eval mode")
    close(kept, expected, scaled(expected, 1e-5), "pe(X) in eval mode (dropout must be off)")
    out = got.floats("train_output", X.shape, "pe(X) in train mode")
    zero = out == 0
    usable = ~zero & (np.abs(kept) > 1e-6 * max(1.0, float(np.abs(kept).max())))
    ratio = out[usable] / kept[usable]                      # what dropout multiplied the surviving entries by
    expect(bool(zero.any()) or not bool((np.abs(ratio - 1) <= 1e-6).all()),
           "pe(X) in train mode with dropout=0.5: no entry is 0 and the others are X + P unchanged: dropout does "
           "nothing in train mode (apply the module's nn.Dropout(dropout) to X + P)")
    expect(ratio.size == 0 or float(ratio.max() - ratio.min()) <= 1e-4 * float(np.abs(ratio).max()),
           "pe(X) in train mode with dropout=0.5: the entries that are not 0 are not X + P times one number: dropout "
           "must act on X + P itself, after the table is added")
    expect(ratio.size == 0 or abs(float(ratio[0]) - 2.0) <= 2e-4,
           "pe(X) in train mode with dropout=0.5: the entries that are not 0 are X + P times {ratio}, expected times "
           "1 / (1 - dropout) = 2: does the module use its dropout argument?",
           ratio=fmt(float(ratio[0])) if ratio.size else "")
    fraction = float(zero.mean())
    expect(abs(fraction - 0.5) <= 0.1, "pe(X) in train mode with dropout=0.5: a fraction {fraction:.2f} of the entries "
                                       "are 0, expected about 0.5", fraction=fraction)


CHECKS = [
    Spec("test_pe_table", "pe_parameters", "exactly one parameter, of shape (max_len, num_hiddens)", 0.5,
         _check_one_parameter,
         kind="structure"),
    Spec("test_pe_table", "pe_default", "max_len defaults to 1000", 0.25, _check_default,
         kind="structure"),
    Spec("test_pe_table", "pe_trainable", "the table is trainable: one SGD step moves it", 0.25,
         _check_trainable,
         kind="structure"),
    Spec("test_pe_table", "pe_gradient", "pe(X) in train mode with dropout=0 is X + P[:n] (not scored here: "
                                         "the hidden check below scores it)", 0,
         _check_train_forward, key="pe_train_output"),
    Spec("test_pe_table", "pe_gradient", "the gradient of sum(pe(X) * G) reaches exactly the rows 0..n-1 of "
                                         "the table", 0.5,
         _check_gradient),
    Spec("test_pe_table", "pe_gradient", "the same on random sizes and values: the gradient of each used row is "
                                         "the sum of G over the batch, the other rows get none", 0.25,
         _check_gradient, key="pe_gradient_random", hidden=True),
    Spec("test_pe_table", "pe_gradient", "the output the gradient flows through is X + P[:n] (train mode, "
                                         "dropout=0)", 0.25,
         _check_train_forward, key="pe_train_forward", hidden=True),
    Spec("test_pe_forward", "pe_shape", "the output has the input's shape", 0.5, _check_pe_shape,
         kind="structure"),
    Spec("test_pe_forward", "pe_known_table", "row i of the table is added to position i (dropout=0)", 1,
         _check_known_table),
    Spec("test_pe_forward", "pe_edge", "edge cases: one feature and one position (num_hiddens = 1, max_len = n = 1)",
         0.5, _check_edge),
    Spec("test_pe_forward", "pe_too_long", "n = max_len positions work and a longer sequence raises ValueError "
                                           "(counts once a check of the values in this cell passes)", 0.5,
         _check_too_long, kind="property"),
    Spec("test_pe_forward", "pe_parity",
         "same output as the reference for several shapes (n = max_len, n = 1, odd num_hiddens, num_hiddens = 1)", 0.5,
         _check_pe_parity,
         hidden=True),
    Spec("test_pe_forward", "pe_dropout", "dropout: in train mode about half the entries are zeroed and "
                                          "the rest scaled by 2 (p=0.5); none in eval mode", 1, _check_dropout),
]


# Inputs: random per submission, sizes where a bug class does not depend on them
def make_inputs(rng, **_sizes):                # problem set 1 has no size to choose
    def integer(low, high):                     # inclusive
        return int(rng.integers(low, high + 1))

    def normal(*shape):
        return rng.standard_normal(shape)

    def sizes():
        return {"num_hiddens": integer(5, 24), "max_len": integer(20, 60)}

    inputs = {}
    s = sizes()
    inputs["pe_parameters"] = {"arrays": {"table": normal(s["max_len"], s["num_hiddens"])}, "params": s}
    inputs["pe_default"] = {"arrays": {}, "params": {"num_hiddens": integer(5, 24)}}
    s = sizes()
    inputs["pe_trainable"] = {
        "arrays": {"table": normal(s["max_len"], s["num_hiddens"]),
                   "direction": normal(s["max_len"], s["num_hiddens"])},
        "params": {**s, "lr": round(float(rng.uniform(0.1, 1.0)), 3)}}
    s = sizes()
    batch, n = integer(2, 4), integer(2, s["max_len"] - 2)
    inputs["pe_gradient"] = {
        "arrays": {"table": normal(s["max_len"], s["num_hiddens"]), "X": normal(batch, n, s["num_hiddens"]),
                   "G": normal(batch, n, s["num_hiddens"])},
        "params": {**s, "num_steps": n, "seed": integer(0, 2**31 - 1)}}
    s = sizes()
    inputs["pe_shape"] = {"arrays": {"X": normal(integer(1, 3), integer(1, s["max_len"]), s["num_hiddens"])},
                          "params": s}
    s = sizes()
    inputs["pe_known_table"] = {
        "arrays": {"table": normal(s["max_len"], s["num_hiddens"]),
                   "X": normal(integer(1, 3), integer(2, s["max_len"] - 1), s["num_hiddens"])},
        "params": s}
    inputs["pe_edge"] = {"arrays": {"table": normal(1, 1), "X": normal(integer(1, 3), 1, 1)},
                         "params": {"num_hiddens": 1, "max_len": 1}}
    s = sizes()
    batch = integer(1, 3)
    inputs["pe_too_long"] = {
        "arrays": {"table": normal(s["max_len"], s["num_hiddens"]),
                   "X_boundary": normal(batch, s["max_len"], s["num_hiddens"]),
                   "X_long": normal(batch, s["max_len"] + 1, s["num_hiddens"])},
        "params": s}
    # The shapes of the hidden parity check: a middle length, n = max_len with odd num_hiddens,
    # max_len = n = 1, a large odd num_hiddens, and one feature (num_hiddens = 1).
    max_len = integer(30, 60)
    cases = [[integer(1, 3), integer(2, 20), 2 * integer(3, 10), integer(21, 60)],
             [1, max_len, 2 * integer(2, 6) + 1, max_len],
             [integer(1, 3), 1, integer(2, 8), 1],
             [integer(1, 3), integer(5, 20), 2 * integer(12, 20) + 1, integer(21, 60)],
             [integer(1, 3), integer(2, 10), 1, integer(10, 30)]]
    arrays = {}
    for index, (batch, n, num_hiddens, max_len) in enumerate(cases):
        arrays[f"table_{index}"] = normal(max_len, num_hiddens)
        arrays[f"X_{index}"] = normal(batch, n, num_hiddens)
    inputs["pe_parity"] = {"arrays": arrays, "params": {"cases": cases}}
    s = {"num_hiddens": integer(32, 64), "max_len": integer(60, 100)}
    inputs["pe_dropout"] = {
        "arrays": {"table": normal(s["max_len"], s["num_hiddens"]),
                   "X": normal(4, integer(40, s["max_len"]), s["num_hiddens"])},
        "params": {**s, "seed": integer(0, 2**31 - 1)}}
    return inputs

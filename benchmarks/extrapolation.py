"""Problem set 3's length-extrapolation experiment (attnkit.extrapolation), with the reference solutions.

Usage: .venv/bin/python benchmarks/extrapolation.py [--seeds N]     (or: make benchmark-extrapolation)

First the notebook's cells as a student's notebook runs them (seed 0, one thread): the CPU seconds of each
training and their sum, the notebook's share of every graded submission. Then the experiment over N seeds
(default 5): each encoding's lowest and highest accuracy at every evaluation length, overall and on the positions
past the training length, which is what tests/test_extrapolation.py's margins were read from. Not a test: the
seconds depend on the machine.
"""

import argparse
import contextlib
import io
import time

import torch

from attnkit.extrapolation import ENCODINGS, EVAL_LENS, TRAIN_LEN, Experiment
from attnkit_assignments.ps3_rope import experiment as kit, reference

CELLS = [(encoding, 1) for encoding in ENCODINGS] + [("rope", 8), ("alibi", 8)]


def experiment(seed):
    return Experiment(rotary_embedding=reference.rotary_embedding, alibi_slopes=reference.alibi_slopes,
                      causal_alibi_attention=reference.causal_alibi_attention, learned_table=kit.LearnedTable,
                      seed=seed, budget_s=600)


def main(argv=None):
    options = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    options.add_argument("--seeds", type=int, default=5, help="seeds for the accuracy ranges (default: 5)")
    args = options.parse_args(argv)
    torch.set_num_threads(1)

    print("The notebook's cells, seed 0, one thread (CPU seconds of each cell, training and evaluation):")
    first, total = experiment(0), 0.0
    for encoding, lag in CELLS:
        cpu = time.process_time()
        with contextlib.redirect_stdout(io.StringIO()):
            first.run(encoding, lag)
        cpu = time.process_time() - cpu
        total += cpu
        print(f"  {encoding:>10s}, token {lag} back: {cpu:5.2f} s")
    print(f"  {'in all':>24s}: {total:5.2f} s")

    found = {cell: [] for cell in CELLS}
    for seed in range(args.seeds):
        run = first if seed == 0 else experiment(seed)
        for cell in CELLS:
            if seed:
                with contextlib.redirect_stdout(io.StringIO()):
                    run.run(*cell)
            found[cell].append(run.results[cell])
    print(f"\nAccuracy over {args.seeds} seeds, lowest-highest (all positions | past position {TRAIN_LEN - 1}):")
    print(f"  {'':>22s}" + "".join(f"{n:>24d}" for n in EVAL_LENS))
    for encoding, lag in CELLS:
        results = found[(encoding, lag)]
        line = f"  {encoding:>10s}, token {lag} back"
        for n in EVAL_LENS:
            overall = [r["accuracy"][n] for r in results]
            beyond = [r["beyond"][n] for r in results if n in r["beyond"]]
            past = f"{min(beyond):.2f}-{max(beyond):.2f}" if beyond else "-"
            line += f"{f'{min(overall):.2f}-{max(overall):.2f} | {past}':>24s}"
        print(line)


if __name__ == "__main__":
    main()

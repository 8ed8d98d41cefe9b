"""Forward+backward time of attnkit.MultiHeadAttention against torch.nn.MultiheadAttention on CPU.

Baseline: torch.nn.MultiheadAttention(..., need_weights=False), which takes PyTorch's fused
scaled-dot-product path. Both run in this one process, interleaved, median of repeated runs after
warm-up. Run: `make benchmark` or `python benchmarks/attention.py [--repeats N]`.
"""

import argparse
import statistics
import time

import torch
from torch import nn

from attnkit import MultiHeadAttention


def step_seconds(forward, X):
    """Seconds for one forward + backward pass."""
    start = time.perf_counter()
    forward(X).sum().backward()
    return time.perf_counter() - start


def measure(batch_size, num_steps, num_hiddens, num_heads, repeats, warmup=3):
    torch.manual_seed(0)
    ours = MultiHeadAttention(num_hiddens, num_heads)
    theirs = nn.MultiheadAttention(num_hiddens, num_heads, bias=False, batch_first=True)
    X = torch.randn(batch_size, num_steps, num_hiddens, requires_grad=True)
    runs = {
        "attnkit (fused)": lambda X: ours(X, X, X),
        "attnkit (need_weights=True)": lambda X: ours(X, X, X, need_weights=True),
        "torch nn.MultiheadAttention": lambda X: theirs(X, X, X, need_weights=False)[0],
    }
    times = {name: [] for name in runs}
    for i in range(warmup + repeats):
        for name, forward in runs.items():   # interleaved, so drift hits every variant alike
            seconds = step_seconds(forward, X)
            if i >= warmup:
                times[name].append(seconds)
    return {name: statistics.median(t) for name, t in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    baseline = "torch nn.MultiheadAttention"
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, median of {args.repeats} runs")
    print(f"{'shape (batch, seq, hiddens, heads)':<36}{'variant':<30}{'ms':>9}{'ratio':>8}")
    for num_steps in (128, 512):
        shape = (32, num_steps, 256, 8)
        medians = measure(*shape, repeats=args.repeats)
        for name, seconds in medians.items():
            print(f"{str(shape):<36}{name:<30}{seconds * 1e3:>9.1f}{seconds / medians[baseline]:>8.2f}")


if __name__ == "__main__":
    main()

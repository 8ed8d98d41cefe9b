"""Forward+backward time of attnkit.MultiHeadAttention against torch.nn.MultiheadAttention, causal or not.

Baseline: torch.nn.MultiheadAttention holding the same weights, called with need_weights=False, which
takes PyTorch's fused scaled-dot-product path. Causal rows give it the mask its docs ask for with the
hint, attn_mask=nn.Transformer.generate_square_subsequent_mask(n) and is_causal=True: without a key
padding mask it then drops the mask and passes is_causal=True to the kernel, as attnkit does. Every
variant runs in this one process, interleaved, median of repeated runs after warm-up; ratio = time /
the baseline's time on the same row. CPU rows always (float32); GPU rows (float32 and bfloat16 at
sequence lengths 512, 2048 and 8192) where CUDA is present. Run: `make benchmark` or
`python benchmarks/attention.py [--repeats N]`.

Target: attnkit's default (fused) path within 1.1x of the baseline on every row. The
`need_weights=True` rows are not held to it and cannot reach it with the API unchanged: that path
exists to keep every head's (batch, heads, n, n) weights for plots, so it runs the explicit softmax and
materialises them, while the baseline (need_weights=False) never forms them; they are shown on CPU
only, as the price of asking for the weights.
"""

import argparse
import os
import statistics
import time

import torch
from torch import nn

from attnkit import MultiHeadAttention

BASELINE = "torch nn.MultiheadAttention"


def torch_twin(model):
    """torch.nn.MultiheadAttention (batch first, no bias) holding the weights of attnkit's ``model``."""
    twin = nn.MultiheadAttention(model.num_hiddens, model.num_heads, bias=False, batch_first=True)
    with torch.no_grad():
        twin.in_proj_weight.copy_(torch.cat([model.W_q.weight, model.W_k.weight, model.W_v.weight]))
        twin.out_proj.weight.copy_(model.W_o.weight)
    return twin


def variants(num_steps, num_hiddens, num_heads, causal, device, dtype, need_weights):
    """{name: forward(X)} for attnkit's paths and the baseline, on the same weights."""
    torch.manual_seed(0)
    ours = MultiHeadAttention(num_hiddens, num_heads)
    theirs = torch_twin(ours).to(device, dtype)
    ours = ours.to(device, dtype)
    mask = nn.Transformer.generate_square_subsequent_mask(num_steps, device=device, dtype=dtype) if causal else None
    runs = {"attnkit (fused)": lambda X: ours(X, X, X, causal=causal)}
    if need_weights:
        runs["attnkit (need_weights=True)"] = lambda X: ours(X, X, X, causal=causal, need_weights=True)
    runs[BASELINE] = lambda X: theirs(X, X, X, need_weights=False, attn_mask=mask, is_causal=causal)[0]
    return runs


def step_seconds(forward, X):
    """Seconds for one forward + backward pass (waiting for the GPU, if any)."""
    if X.is_cuda:
        torch.cuda.synchronize()
    start = time.perf_counter()
    forward(X).sum().backward()
    if X.is_cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - start


def measure(batch_size, num_steps, num_hiddens, num_heads, causal, repeats, device="cpu", dtype=torch.float32,
            need_weights=True, warmup=3):
    """Median seconds per variant of one shape; checks once that every variant gives the baseline's output."""
    runs = variants(num_steps, num_hiddens, num_heads, causal, device, dtype, need_weights)
    X = torch.randn(batch_size, num_steps, num_hiddens, device=device, dtype=dtype, requires_grad=True)
    with torch.no_grad():
        expected = runs[BASELINE](X).float()
        tol = 1e-4 if dtype == torch.float32 else 5e-2
        for name, forward in runs.items():
            torch.testing.assert_close(forward(X).float(), expected, atol=tol, rtol=tol, msg=name)
    times = {name: [] for name in runs}
    for i in range(warmup + repeats):
        for name, forward in runs.items():   # interleaved, so drift hits every variant alike
            seconds = step_seconds(forward, X)
            if i >= warmup:
                times[name].append(seconds)
    return {name: statistics.median(t) for name, t in times.items()}


def print_rows(label, shape, causal, medians):
    """One line per variant: time and ratio to the baseline."""
    for name, seconds in medians.items():
        print(f"{label:<7}{str(shape):<26}{'causal' if causal else '-':<8}{name:<30}"
              f"{seconds * 1e3:>9.1f}{seconds / medians[BASELINE]:>7.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, CPU: {torch.get_num_threads()} threads on {os.cpu_count()} cores "
          f"(load average {os.getloadavg()[0]:.1f}), median of {args.repeats} runs, "
          f"ratio = time / {BASELINE} (need_weights=False) on the same row")
    print(f"{'device':<7}{'(batch, seq, hid, heads)':<26}{'mask':<8}{'variant':<30}{'ms':>9}{'ratio':>7}")
    for num_steps in (128, 512):
        for causal in (False, True):
            shape = (32, num_steps, 256, 8)
            print_rows("cpu", shape, causal, measure(*shape, causal, args.repeats))
    print("need_weights=True keeps every head's weights, so it forms (batch, heads, n, n) tensors the baseline "
          "never does: shown for its price, not held to the 1.1x target.")
    if not torch.cuda.is_available():
        print("GPU rows skipped: CUDA is not available on this machine.")
        return
    print(f"GPU: {torch.cuda.get_device_name()}")
    for dtype, label in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
        for num_steps in (512, 2048, 8192):
            for causal in (False, True):
                shape = (16384 // num_steps, num_steps, 1024, 16)   # 16,384 tokens a batch
                medians = measure(*shape, causal, args.repeats, "cuda", dtype, need_weights=False)
                print_rows(label, shape, causal, medians)


if __name__ == "__main__":
    main()

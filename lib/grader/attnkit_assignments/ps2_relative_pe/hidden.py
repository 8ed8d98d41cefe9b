"""Hidden part of problem set 2's test cells under plain nbgrader: one function per test cell.

Called from the hidden part of a cell with the student's objects, e.g. ``hidden.attention(checks,
RelativeMultiHeadAttention)``; see ``attnkit_grader.judging.in_kernel``.

The kernel has no memory cap, so the memory check runs smaller here (L = 2048, head_dim = 32, where
the (L, L, head_dim) tensor of gathered rows takes 512 MiB) and measures the largest tensor the
student's code creates instead of relying on the sandbox's cap to stop it.
"""

from attnkit.checking import human_bytes
from attnkit_grader.authoring import run

from .assignment import ASSIGNMENT
KERNEL_MEMORY_LENGTH, KERNEL_MEMORY_HEAD_DIM = 2048, 32


def index(checks, fn):
    run(checks, ASSIGNMENT, "test_index", {"relative_position_index": fn})


def attention(checks, cls):
    run(checks, ASSIGNMENT, "test_rel_attention", {"RelativeMultiHeadAttention": cls})


def skew(checks, fn):
    run(checks, ASSIGNMENT, "test_skew", {"skew": fn})


def causal(checks, naive_fn, skewed_fn):
    run(checks, ASSIGNMENT, "test_causal",
        {"causal_relative_attention_naive": naive_fn, "causal_relative_attention": skewed_fn},
        sizes={"memory_length": KERNEL_MEMORY_LENGTH, "memory_head_dim": KERNEL_MEMORY_HEAD_DIM},
        measured={"causal_memory": memory_verdict})


def memory_verdict(passed, message, largest):
    """(name, passed, message) of the memory check in the kernel: the judge's verdict on the rows, then
    the largest tensor the skewed version created, measured since no cap stops it here."""
    L, d = KERNEL_MEMORY_LENGTH, KERNEL_MEMORY_HEAD_DIM
    gathered = L * L * d * 4                                   # float32 (L, L, head_dim)
    name = (f"memory: at L = {L}, head_dim = {d} the skewed version creates no tensor anywhere near "
            f"L * L * head_dim elements and gives the reference's rows")
    hint = (f"the (L, L, head_dim) tensor of gathered rows would be {human_bytes(gathered)} and the L x L "
            f"logits {human_bytes(L * L * 4)}: compute the relative term as skew(queries @ rel_k.T)")
    if not passed:
        return name, False, f"{message} ({hint})"
    if largest is not None and largest >= gathered // 8:
        return name, False, f"the largest tensor created was {human_bytes(largest)}; {hint}"
    return name, True, ""

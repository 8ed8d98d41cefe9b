"""Reference solutions of the graded assignments and their hidden checks (instructors only).

Excluded from every built wheel (see pyproject.toml): a student install never contains this package.
The notebooks' own solution cells are written independently; the hidden tests compare against these.
"""

from .learnable_pe import LearnablePositionalEncoding
from .relative import RelativeMultiHeadAttention, relative_position_index
from .skew import causal_relative_attention, causal_relative_attention_naive, skew

__all__ = [
    "LearnablePositionalEncoding", "RelativeMultiHeadAttention", "causal_relative_attention",
    "causal_relative_attention_naive", "relative_position_index", "skew",
]

"""attnkit: building blocks, plots and checks for the attention course kit."""

from ._checks import check_shape
from .attention import (DotProductAttention, MultiHeadAttention, attention_mask, masked_softmax,
                        transpose_output, transpose_qkv)
from .plotting import plot, show_heatmaps
from .positional import PositionalEncoding, relative_rotation, sinusoidal_table

__all__ = [
    "DotProductAttention", "MultiHeadAttention", "PositionalEncoding", "attention_mask", "check_shape",
    "masked_softmax", "plot", "relative_rotation", "show_heatmaps", "sinusoidal_table",
    "transpose_output", "transpose_qkv",
]
__version__ = "0.1.0"

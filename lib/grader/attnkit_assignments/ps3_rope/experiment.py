"""Exercise 6's learned table (the length-extrapolation experiment, attnkit.extrapolation), for the kit's tests and
benchmark. The notebook's experiment_setup cell defines it word for word (tests/test_extrapolation.py compares
them); it is not in the student package because it is problem set 1's answer, and students hold that package
before problem set 1's deadline."""

import torch
from torch import nn


class LearnedTable(nn.Module):
    """Problem set 1's learned positional encoding, as the experiment uses it: X + P[:n], P a (max_len,
    num_hiddens) table starting from N(0, 1) and trained with the model; rows no training sequence reaches
    never get a gradient."""

    def __init__(self, num_hiddens, max_len):
        super().__init__()
        self.P = nn.Parameter(torch.randn(max_len, num_hiddens))

    def forward(self, X):
        """(batch, n, num_hiddens) -> (batch, n, num_hiddens): X + P[:n]."""
        return X + self.P[:X.shape[1]]

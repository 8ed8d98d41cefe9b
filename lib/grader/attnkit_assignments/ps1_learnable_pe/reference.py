"""Reference solution, problem set 1: a learned absolute positional encoding."""

import torch
from torch import nn

from attnkit._checks import check_dim, check_dropout, check_rank


class LearnablePositionalEncoding(nn.Module):
    """Adds a trainable table P (max_len, num_hiddens) to X (batch, n, num_hiddens), then dropout."""

    def __init__(self, num_hiddens, dropout, max_len=1000):
        super().__init__()
        check_dropout(dropout)
        # Every size from 1 up works (the grader probes num_hiddens = 1 and max_len = 1); rejecting 0 is not asked
        # for, so the mutants that accept it survive, listed in mutation.py's SURVIVORS.
        if max_len < 1 or num_hiddens < 1:
            raise ValueError(f"need max_len >= 1 and num_hiddens >= 1, "
                             f"got max_len={max_len}, num_hiddens={num_hiddens}")
        self.num_hiddens, self.max_len = num_hiddens, max_len
        # A random start, N(0, 1) as nn.Embedding's: the exercise accepts any start (no check can see it),
        # and the rows learn their values from the task.
        self.P = nn.Parameter(torch.randn(max_len, num_hiddens))
        self.dropout = nn.Dropout(dropout)

    def forward(self, X):
        """(batch, n, num_hiddens) -> (batch, n, num_hiddens), n <= max_len."""
        check_rank("X", X, 3, "(batch, num_steps, num_hiddens)")
        check_dim("X", X, 2, self.num_hiddens)
        num_steps = X.shape[1]
        if num_steps > self.max_len:
            raise ValueError(f"sequence length X.shape[1]={num_steps} exceeds max_len={self.max_len}: "
                             f"the table has no row for positions >= {self.max_len}")
        return self.dropout(X + self.P[:num_steps].unsqueeze(0))   # (batch, n, num_hiddens)

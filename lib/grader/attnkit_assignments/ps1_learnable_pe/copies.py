"""Problem set 1 and the copy flag: correct answers written apart from every solution the course holds, and the
threshold of each answer cell measured on them (see attnkit_grader.copies).

``ANSWERS`` holds, per answer cell, correct code in styles none of the known solutions use, the way a student
might write it: following the exercise's hints, from a textbook's habits, or plainly. They are never compared
with: the copy flag's false-positive rate is measured on them (``python -m attnkit_grader.copies``), and a test
proves each earns full marks. ``THRESHOLDS`` is what that command derives; a test keeps the two in step.
"""

_PLAIN = '''class LearnablePositionalEncoding(nn.Module):
    """X (batch, n, num_hiddens) + a learned table P[:n], then dropout; n <= max_len."""

    def __init__(self, num_hiddens, dropout, max_len=1000):
        super().__init__()
        self.longest = max_len
        self.positions = nn.Parameter(torch.zeros(max_len, num_hiddens))
        nn.init.normal_(self.positions, std=0.02)
        self.drop = nn.Dropout(p=dropout)

    def forward(self, X):
        """(batch, n, num_hiddens) -> (batch, n, num_hiddens)."""
        length = X.size(1)
        if length > self.longest:
            raise ValueError(f"got {length} positions, the table only has {self.longest}")
        X = X + self.positions[:length]
        return self.drop(X)
'''

_FUNCTIONAL = '''class LearnablePositionalEncoding(nn.Module):
    """X (batch, n, num_hiddens) + a learned table P[:n], then dropout; n <= max_len."""

    def __init__(self, num_hiddens, dropout, max_len=1000):
        super().__init__()
        self.p, self.max_len = dropout, max_len
        self.weight = nn.Parameter(torch.empty(max_len, num_hiddens).uniform_(-0.1, 0.1))

    def forward(self, X):
        """(batch, n, num_hiddens) -> (batch, n, num_hiddens)."""
        _, steps, _ = X.shape
        if not steps <= self.max_len:
            raise ValueError("X.shape[1] = %d exceeds max_len = %d" % (steps, self.max_len))
        rows = torch.index_select(self.weight, 0, torch.arange(steps, device=X.device))
        return nn.functional.dropout(X + rows[None], p=self.p, training=self.training)
'''

_LOOKUP = '''class LearnablePositionalEncoding(nn.Module):
    """X (batch, n, num_hiddens) + a learned table P[:n], then dropout; n <= max_len."""

    def __init__(self, num_hiddens, dropout, max_len=1000):
        super().__init__()
        self.max_len = max_len
        self.pos_emb = nn.Embedding(num_embeddings=max_len, embedding_dim=num_hiddens)
        self.dropout = nn.Dropout(dropout)

    def forward(self, X):
        """(batch, n, num_hiddens) -> (batch, n, num_hiddens)."""
        batch_size, n = X.shape[0], X.shape[1]
        if n > self.max_len:
            raise ValueError(f"n={n} > max_len={self.max_len}")
        ids = torch.arange(n, device=X.device).expand(batch_size, n)   # (batch, n)
        out = X + self.pos_emb(ids)
        out = self.dropout(out)
        return out
'''

_EXPERIMENT = '''curves = {}
for label, encoding in (("learned", LearnablePositionalEncoding), ("sinusoidal", attnkit.PositionalEncoding)):
    torch.manual_seed(0)
    net = PreviousTokenModel(encoding(NUM_HIDDENS, 0.0, max_len=MAX_LEN))
    start = [p.detach().clone() for p in net.positional_encoding.parameters()]
    last = train(net)
    curves[label] = accuracy_by_position(net)
    print(label, "loss", round(last, 3), "seen", curves[label][:TRAIN_LEN - 1].mean().item(),
          "unseen", curves[label][TRAIN_LEN - 1:].mean().item())
    if start:
        moved = (list(net.positional_encoding.parameters())[0].detach() - start[0]).abs().amax(dim=1)
        print("rows < TRAIN_LEN moved up to", moved[:TRAIN_LEN].max().item(),
              "rows >= TRAIN_LEN up to", moved[TRAIN_LEN:].max().item())
steps = list(range(1, TEST_LEN))
figure = attnkit.plot(steps, [curves["learned"], curves["sinusoidal"]], xlabel="position", ylabel="accuracy",
                      legend=["learned", "sinusoidal"])
figure.axes[0].axvline(TRAIN_LEN, color="k", linewidth=0.5)
'''

ANSWERS = {
    "pe_answer": (_PLAIN, _FUNCTIONAL, _LOOKUP),
    "experiment_answer": (_EXPERIMENT,),
}

# Measured with `python -m attnkit_grader.copies ps1_learnable_pe`: the innocent answers resemble a known solution
# by at most 0.34 (pe_answer) and 0.16 (experiment_answer), so both get the floor.
THRESHOLDS = {"pe_answer": 0.6, "experiment_answer": 0.6}

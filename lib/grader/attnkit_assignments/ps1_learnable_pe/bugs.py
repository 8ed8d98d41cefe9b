"""Known bugs of problem set 1, each as edits of reference.py (see attnkit_grader.authoring.Bug).

``points``: what the bug keeps at grading in each test cell where it loses some (test_pe_table is worth
2, test_pe_forward 4); ``fails``: the checks it must fail. The tests hold the catalogue to both.
"""

from dataclasses import replace

from attnkit_grader.authoring import Bug

_TABLE = "self.P = nn.Parameter(torch.randn(max_len, num_hiddens))"
_ADD = "return self.dropout(X + self.P[:num_steps].unsqueeze(0))"
_DROPOUT = "self.dropout = nn.Dropout(dropout)"
_CHECK_LENGTH = '''        if num_steps > self.max_len:
            raise ValueError(f"sequence length X.shape[1]={num_steps} exceeds max_len={self.max_len}: "
                             f"the table has no row for positions >= {self.max_len}")
'''

BUGS = [
    Bug("table_buffer",
        "the table is registered as a buffer, not an nn.Parameter: it has no gradient and training never "
        "changes it",
        ((_TABLE, 'self.register_buffer("P", torch.randn(max_len, num_hiddens))'),)),
    Bug("table_plain_tensor",
        "the table is a plain tensor attribute, not an nn.Parameter: the optimizer never sees it",
        ((_TABLE, "self.P = torch.randn(max_len, num_hiddens)"),)),
    Bug("table_frozen",
        "the table is an nn.Parameter with requires_grad=False, so it never trains",
        ((_TABLE, "self.P = nn.Parameter(torch.randn(max_len, num_hiddens), requires_grad=False)"),)),
    Bug("table_detached",
        "forward adds a detached copy of the table (.detach() or .data), so no gradient reaches it",
        ((_ADD, "return self.dropout(X + self.P[:num_steps].detach().unsqueeze(0))"),)),
    Bug("table_not_sliced",
        "forward adds the whole table instead of its first n rows P[:n]",
        ((_ADD, "return self.dropout(X + self.P.unsqueeze(0))"),)),
    Bug("table_last_rows",
        "forward takes the last n rows of the table, P[-n:], instead of the first n, P[:n]",
        ((_ADD, "return self.dropout(X + self.P[-num_steps:].unsqueeze(0))"),)),
    Bug("table_off_by_one",
        "forward takes rows 1..n of the table, P[1:n+1], instead of rows 0..n-1",
        ((_ADD, "return self.dropout(X + self.P[1:num_steps + 1].unsqueeze(0))"),)),
    Bug("input_scaled",
        "forward multiplies X by sqrt(num_hiddens) before adding the table (the exercise adds X and P "
        "unchanged)",
        ((_ADD, "return self.dropout(X * math.sqrt(self.num_hiddens) + self.P[:num_steps].unsqueeze(0))"),
         ("import torch\n", "import math\n\nimport torch\n"))),
    Bug("dropout_before_add",
        "dropout is applied to X before the table is added, not to the sum X + P",
        ((_ADD, "return self.dropout(X) + self.P[:num_steps].unsqueeze(0)"),)),
    Bug("dropout_missing",
        "the module never applies dropout (the dropout argument is ignored)",
        ((_ADD, "return X + self.P[:num_steps].unsqueeze(0)"),)),
    Bug("dropout_fixed",
        "the dropout probability is fixed (nn.Dropout(0.1)) instead of the dropout argument",
        ((_DROPOUT, "self.dropout = nn.Dropout(0.1)"),)),
    Bug("default_max_len",
        "the default max_len is 512; the exercise fixes max_len=1000",
        (("def __init__(self, num_hiddens, dropout, max_len=1000):",
          "def __init__(self, num_hiddens, dropout, max_len=512):"),), named_by="max_len=1000"),
    Bug("no_length_check",
        "forward does not raise ValueError when X is longer than max_len",
        ((_CHECK_LENGTH, ""),), named_by="expected ValueError"),
]

# What each bug keeps at grading in the cells where it loses points, and the checks it fails, on any
# inputs: measured with `python -m attnkit_grader.catalogue`, then read and explained one by one (closing
# note of issue 13). tests/test_bug_catalogue.py holds every bug to its row.
EXPECTED = {
    'table_buffer': ({'test_pe_table': 0.25},
        "pe_parameters pe_default pe_trainable pe_gradient pe_gradient_random"),
    'table_plain_tensor': ({'test_pe_table': 0.25},
        "pe_parameters pe_default pe_trainable pe_gradient pe_gradient_random"),
    'table_frozen': ({'test_pe_table': 1},
        "pe_trainable pe_gradient pe_gradient_random"),
    'table_detached': ({'test_pe_table': 1.25},
        "pe_gradient pe_gradient_random"),
    'table_not_sliced': ({'test_pe_table': 0, 'test_pe_forward': 0},
        "pe_parameters pe_default pe_trainable pe_train_output pe_gradient pe_gradient_random "
        "pe_train_forward pe_shape pe_known_table pe_parity pe_dropout"),
    'table_last_rows': ({'test_pe_table': 1, 'test_pe_forward': 0.5},
        "pe_train_output pe_gradient pe_gradient_random pe_train_forward pe_known_table pe_parity pe_dropout"),
    'table_off_by_one': ({'test_pe_table': 1, 'test_pe_forward': 0.5},
        "pe_train_output pe_gradient pe_gradient_random pe_train_forward pe_known_table pe_too_long pe_parity "
        "pe_dropout"),
    'input_scaled': ({'test_pe_table': 1.75, 'test_pe_forward': 0.5},
        "pe_train_output pe_train_forward pe_known_table pe_too_long pe_parity pe_dropout"),
    'dropout_before_add': ({'test_pe_forward': 3},
        "pe_dropout"),
    'dropout_missing': ({'test_pe_forward': 3},
        "pe_dropout"),
    'dropout_fixed': ({'test_pe_table': 1, 'test_pe_forward': 3},
        "pe_train_output pe_gradient pe_gradient_random pe_train_forward pe_dropout"),
    'default_max_len': ({'test_pe_table': 1.75},
        "pe_default"),
    'no_length_check': ({},
        "pe_too_long"),
}

BUGS = [replace(bug, points=EXPECTED[bug.name][0], fails=tuple(EXPECTED[bug.name][1].split()))
        for bug in BUGS]

# Where the course teaches the right thing (the insight report shows it beside each mistake; a test resolves
# every link to a heading of the lecture or of the exercise).
_EXERCISE = "assignments/ps1_learnable_pe#exercise-1--learnablepositionalencoding-6-points"
_LEARNED = "lectures/03_positional_encoding#8-preview-learned-and-relative-encodings"
_TABLE_ADDED = "lectures/03_positional_encoding#2-the-sinusoidal-table"
TEACHES = {
    "table_buffer": (_LEARNED, _EXERCISE),
    "table_plain_tensor": (_LEARNED, _EXERCISE),
    "table_frozen": (_LEARNED, _EXERCISE),
    "table_detached": (_LEARNED, _EXERCISE),
    "table_not_sliced": (_TABLE_ADDED, _EXERCISE),
    "table_last_rows": (_TABLE_ADDED, _EXERCISE),
    "table_off_by_one": (_TABLE_ADDED, _EXERCISE),
    "input_scaled": (_TABLE_ADDED, _EXERCISE),
    "dropout_before_add": (_TABLE_ADDED, _EXERCISE),
    "dropout_missing": (_TABLE_ADDED, _EXERCISE),
    "dropout_fixed": (_TABLE_ADDED, _EXERCISE),
    "default_max_len": (_TABLE_ADDED, _EXERCISE),
    "no_length_check": (_LEARNED, _EXERCISE),
}
BUGS = [replace(bug, teaches=TEACHES[bug.name]) for bug in BUGS]

# Correct answers in other styles than the reference: each must pass every visible check and earn full
# marks (no false alarm). The notebook's own solution (an nn.Embedding table) is tested beside them.
ALTERNATIVES = [
    Bug("zeros_and_narrow", "a zero-initialised parameter, sliced with narrow",
        ((_TABLE, "self.P = nn.Parameter(torch.zeros(max_len, num_hiddens))"),
         (_ADD, "return self.dropout(X + self.P.narrow(0, 0, num_steps))"))),
    Bug("functional_dropout", "torch.nn.functional.dropout with the module's training flag",
        ((_DROPOUT, "self.p = dropout"),
         (_ADD, "return torch.nn.functional.dropout(X + self.P[:num_steps], self.p, self.training)"))),
]

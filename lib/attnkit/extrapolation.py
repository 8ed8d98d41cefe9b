"""Train short, test long: problem set 3's length-extrapolation experiment, a toy version of the ALiBi paper's
Figure 1 (Press, Smith and Lewis 2022) that runs on one CPU thread in seconds.

The task: a sequence of random tokens, and at each position the token ``lag`` places back is the answer (lag 1:
repeat the previous token). Position matters, content does not: the model has to find *where* the answer is.
The model: a token embedding (plus the absolute encoding, for the sinusoidal and learned ones), one causal
multi-head attention layer (RoPE or ALiBi inside it), a residual connection and a linear read-out. It is trained
on sequences of ``TRAIN_LEN`` tokens and evaluated on sequences up to 16 times longer.

The student's own functions come in: ``rotary_embedding`` (exercise 1) for RoPE, ``alibi_slopes`` and
``causal_alibi_attention`` (exercises 3 and 5) for ALiBi. The sinusoidal table is the lectures'. The learned one
comes from the notebook (``learned_table``: a class taking ``(num_hiddens, max_len)``), not from this package:
it is problem set 1's answer, which the student package must not give away before that set's deadline (the
kit releases problem set 3 after it). A function that is missing, wrong or too slow ends its cell with one
sentence saying so, and the experiment goes on without that encoding.
"""

import math
import signal
import threading
import time

import torch
import torch.nn.functional as F
from torch import nn

from .i18n import N_, Text
from .positional import sinusoidal_table
from .text import pad

ENCODINGS = ("sinusoidal", "learned", "rope", "alibi")
VOCAB, NUM_HIDDENS, NUM_HEADS = 16, 32, 8
TRAIN_LEN = 32
EVAL_LENS = (32, 64, 128, 256, 512)
MAX_LEN = max(EVAL_LENS)
NUM_STEPS, BATCH_SIZE, LEARNING_RATE = 400, 32, 1e-2
PREDICTIONS_PER_LENGTH = 4096        # each evaluation length scores about this many predictions
BUDGET_S = 10.0                      # the longest a training may take (the reference: 1 to 2 s on one thread)
IGNORE = -100                        # cross_entropy's ignore_index: positions with no token `lag` places back

# Which of the student's functions each encoding uses, and the exercise that asks for it.
NEEDS = {"learned": ("learned_table",), "rope": ("rotary_embedding",),
         "alibi": ("alibi_slopes", "causal_alibi_attention")}
EXERCISE = {"rotary_embedding": 1, "alibi_slopes": 3, "causal_alibi_attention": 5}
NAMES = {"sinusoidal": N_("sinusoidal"), "learned": N_("learned"), "rope": "RoPE", "alibi": "ALiBi"}   # names: no translation


def lagged_copy_batch(batch_size, num_steps, lag, generator):
    """Random tokens (batch_size, num_steps) and their targets: the token ``lag`` places back (IGNORE before)."""
    tokens = torch.randint(VOCAB, (batch_size, num_steps), generator=generator)
    targets = torch.full_like(tokens, IGNORE)
    targets[:, lag:] = tokens[:, :-lag]
    return tokens, targets


class TinyCausalLM(nn.Module):
    """Embedding (+ absolute encoding) -> one causal attention layer with NUM_HEADS heads -> residual -> logits."""

    def __init__(self, encoding, functions):
        super().__init__()
        self.encoding = encoding
        self.head_dim = NUM_HIDDENS // NUM_HEADS
        self.embedding = nn.Embedding(VOCAB, NUM_HIDDENS)
        self.W_qkv = nn.Linear(NUM_HIDDENS, 3 * NUM_HIDDENS, bias=False)
        self.W_o = nn.Linear(NUM_HIDDENS, NUM_HIDDENS, bias=False)
        self.output = nn.Linear(NUM_HIDDENS, VOCAB)
        if encoding == "learned":       # one row per position; rows past TRAIN_LEN never get a gradient
            self.learned = functions["learned_table"](NUM_HIDDENS, MAX_LEN)
        elif encoding == "sinusoidal":
            self.register_buffer("table", sinusoidal_table(MAX_LEN, NUM_HIDDENS))
        elif encoding == "rope":
            self.rotary_embedding = functions["rotary_embedding"]
        elif encoding == "alibi":
            self.causal_alibi_attention = functions["causal_alibi_attention"]
            self.register_buffer("slopes", torch.as_tensor(functions["alibi_slopes"](NUM_HEADS), dtype=torch.float32))

    def forward(self, tokens):
        """(batch, n) token ids -> (batch, n, VOCAB) logits."""
        batch_size, n = tokens.shape
        X = self.embedding(tokens)                                                # (batch, n, NUM_HIDDENS)
        if self.encoding == "sinusoidal":
            X = X + self.table[:n]
        elif self.encoding == "learned":
            X = self.learned(X)
        q, k, v = (self.W_qkv(X).reshape(batch_size, n, 3, NUM_HEADS, self.head_dim)
                   .permute(2, 0, 3, 1, 4))                                       # 3 x (batch, heads, n, head_dim)
        if self.encoding == "rope":
            positions = torch.arange(n)
            q, k = self.rotary_embedding(q, positions), self.rotary_embedding(k, positions)
        if self.encoding == "alibi":
            heads = self.causal_alibi_attention(q, k, v, self.slopes)
        else:
            heads = F.scaled_dot_product_attention(q, k, v, is_causal=True)      # (batch, heads, n, head_dim)
        X = X + self.W_o(heads.transpose(1, 2).reshape(batch_size, n, NUM_HIDDENS))
        return self.output(X)                                                     # (batch, n, VOCAB)


class _OutOfTime(BaseException):
    """Raised by the timer inside a training that ran past its budget (a BaseException: a student's ``except
    Exception`` cannot swallow it)."""


class _StudentError(Exception):
    """A student's function raised: which one, and what."""

    def __init__(self, function, error):
        super().__init__(function)
        self.function, self.error = function, error


class _Unusable(Exception):
    """A student's function returned something RoPE or ALiBi would not: which one, and a sentence saying what."""

    def __init__(self, function, what):
        super().__init__(function)
        self.function, self.what = function, what


def _blamed(name, function, calling):
    """``function``, whose exceptions come out as _StudentError naming it; while it runs, ``calling[0]`` is its
    name (the one to blame if the timer rings)."""
    def call(*args, **kwargs):
        outer, calling[0] = calling[0], name
        try:
            return function(*args, **kwargs)
        except Exception as error:
            raise _StudentError(name, error) from error
        finally:
            calling[0] = outer
    return call


class _deadline:
    """A context in which the code is interrupted (_OutOfTime) after ``seconds`` of wall time, where the platform
    allows it (a Unix timer in the main thread); elsewhere the training's own clock is the only limit."""

    def __init__(self, seconds):
        self.seconds, self.previous = seconds, None

    def __enter__(self):
        if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGALRM, self._ring)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    @staticmethod
    def _ring(signum, frame):
        raise _OutOfTime

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)
        return False


def _tensor(name, value, shape):
    if not isinstance(value, torch.Tensor):
        raise _Unusable(name, Text(N_("it returns {kind}, not a tensor"), kind=type(value).__name__))
    if tuple(value.shape) != tuple(shape):
        raise _Unusable(name, Text(N_("it returns shape {got} for shape {expected}"),
                                   got=tuple(value.shape), expected=tuple(shape)))
    if not torch.isfinite(value).all():
        raise _Unusable(name, Text(N_("it returns values that are not finite")))
    return value


def _probe_rope(rotary_embedding):
    """What RoPE must do, on a small input: keep the shape and the vectors' lengths, turn the vectors past
    position 0, and give scores that depend on the offset between positions only."""
    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 2, 6, 4, generator=generator), torch.randn(2, 2, 6, 4, generator=generator)
    positions = torch.arange(6)
    turned_q = _tensor("rotary_embedding", rotary_embedding(q, positions), q.shape)
    turned_k = _tensor("rotary_embedding", rotary_embedding(k, positions), k.shape)
    if torch.allclose(turned_q[..., 1:, :], q[..., 1:, :], atol=1e-4):
        raise _Unusable("rotary_embedding", Text(N_("it leaves the vectors as they are at positions 1 to 5")))
    if not torch.allclose(turned_q.norm(dim=-1), q.norm(dim=-1), atol=1e-4):
        raise _Unusable("rotary_embedding", Text(N_("it changes the vectors' lengths, which a rotation keeps")))
    moved_q = rotary_embedding(q, positions + 5)
    moved_k = rotary_embedding(k, positions + 5)
    if not torch.allclose(turned_q @ turned_k.transpose(-1, -2), moved_q @ moved_k.transpose(-1, -2), atol=1e-4):
        raise _Unusable("rotary_embedding", Text(N_("its scores change when every position moves by 5")))


def _probe_alibi(alibi_slopes, causal_alibi_attention):
    """What ALiBi must do, on a small input: NUM_HEADS positive slopes; with every score 0, weights proportional
    to exp(slope * (j - i)) over the keys j <= i."""
    slopes = _tensor("alibi_slopes", torch.as_tensor(alibi_slopes(NUM_HEADS)), (NUM_HEADS,)).float()
    if not (slopes > 0).all():
        raise _Unusable("alibi_slopes", Text(N_("its slopes are not all positive")))
    n = 5
    zeros = torch.zeros(1, NUM_HEADS, n, 2)
    values = torch.eye(n).expand(1, NUM_HEADS, n, n)            # output row i = the weights of query i
    weights = _tensor("causal_alibi_attention", causal_alibi_attention(zeros, zeros, values, slopes),
                      (1, NUM_HEADS, n, n))
    distance = torch.arange(n)[None, :] - torch.arange(n)[:, None]                       # (n, n): j - i
    expected = torch.softmax((slopes[:, None, None] * distance).masked_fill(distance > 0, -math.inf), dim=-1)
    if not torch.allclose(weights[0], expected, atol=1e-4):
        raise _Unusable("causal_alibi_attention",
                        Text(N_("with every score 0 its weights are not proportional to exp(m_h (j - i)) "
                                "over the keys j <= i")))


def _one_line(error):
    """'ValueError: the first line of its message' (at most 100 characters)."""
    message = str(error).strip().splitlines()[0] if str(error).strip() else ""
    line = f"{type(error).__name__}: {message}" if message else type(error).__name__
    return line if len(line) <= 100 else line[:99] + "…"


def train(model, lag, seed, num_steps=NUM_STEPS, budget_s=BUDGET_S):
    """Adam on batches of BATCH_SIZE sequences of TRAIN_LEN tokens; returns the last loss. Stops with _OutOfTime
    as soon as the first steps show that ``num_steps`` would take longer than ``budget_s`` seconds."""
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    model.train()
    start = time.perf_counter()
    for step in range(num_steps):
        tokens, targets = lagged_copy_batch(BATCH_SIZE, TRAIN_LEN, lag, generator)
        loss = F.cross_entropy(model(tokens).reshape(-1, VOCAB), targets.reshape(-1), ignore_index=IGNORE)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        elapsed = time.perf_counter() - start
        if step >= 9 and elapsed / (step + 1) * num_steps > budget_s:
            raise _OutOfTime(elapsed / (step + 1))
    return loss.item()


@torch.no_grad()
def accuracy_by_length(model, lag, seed=1234):
    """For each length of EVAL_LENS: (accuracy on every position with a target, accuracy on the positions past
    TRAIN_LEN (None at TRAIN_LEN itself)), on fresh sequences (about PREDICTIONS_PER_LENGTH predictions each)."""
    generator = torch.Generator().manual_seed(seed)
    model.eval()
    found = {}
    for length in EVAL_LENS:
        tokens, targets = lagged_copy_batch(max(8, PREDICTIONS_PER_LENGTH // length), length, lag, generator)
        right = model(tokens).argmax(dim=-1) == targets
        scored = targets != IGNORE
        beyond = scored[:, TRAIN_LEN:]
        found[length] = (right[scored].float().mean().item(),
                         right[:, TRAIN_LEN:][beyond].float().mean().item() if beyond.any() else None)
    return found


class Experiment:
    """The four encodings trained on TRAIN_LEN tokens and evaluated up to MAX_LEN, with the student's functions.

    ``run(encoding, lag)`` trains one model and prints one line (its result, or why it was left out);
    ``plot(lag)`` draws the accuracy against the evaluation length for every encoding run with that lag.
    ``results[(encoding, lag)]`` keeps what each run found (``accuracy``, ``beyond``: {length: accuracy}).
    """

    def __init__(self, rotary_embedding=None, alibi_slopes=None, causal_alibi_attention=None, learned_table=None,
                 seed=0, budget_s=BUDGET_S):
        given = {"rotary_embedding": rotary_embedding, "alibi_slopes": alibi_slopes,
                 "causal_alibi_attention": causal_alibi_attention, "learned_table": learned_table}
        self._calling = [None]
        self.functions = {name: _blamed(name, f, self._calling) if name in EXERCISE else f    # the student's
                          for name, f in given.items() if f is not None}
        self.seed, self.budget_s = seed, budget_s
        self.results, self.refusals = {}, {}
        self.undefined = set()          # the student's functions a notebook did not define (from_notebook)

    @classmethod
    def from_notebook(cls, namespace, learned_table, **options):
        """The experiment with the student's functions found by name in ``namespace`` (the notebook's
        ``globals()``): a function whose cell did not run, or failed, is left out with a sentence, not a
        NameError."""
        found = {name: namespace.get(name) for name in EXERCISE}
        experiment = cls(**found, learned_table=learned_table, **options)
        experiment.undefined = {name for name, function in found.items() if function is None}
        return experiment

    def run(self, encoding, lag=1):
        """Train and evaluate ``encoding`` on the task of repeating the token ``lag`` places back; print one line
        (and keep the result in ``results``)."""
        if encoding not in ENCODINGS:
            raise ValueError(f"encoding: expected one of {', '.join(ENCODINGS)}, got {encoding!r}")
        if isinstance(lag, bool) or not isinstance(lag, int) or not 1 <= lag < TRAIN_LEN:
            raise ValueError(f"lag: expected an int from 1 to {TRAIN_LEN - 1}, got {lag!r}")
        outcome = self._attempt(encoding, lag)
        if isinstance(outcome, Text):
            self.refusals[(encoding, lag)] = outcome
            self.results.pop((encoding, lag), None)
        print((outcome if isinstance(outcome, Text) else self._summary(encoding, lag)).render())

    def _attempt(self, encoding, lag):
        """The run's result stored in self.results, or the Text saying why the encoding is left out."""
        name = Text(NAMES[encoding])
        missing = [f for f in NEEDS.get(encoding, ()) if f not in self.functions]
        if missing and missing[0] in self.undefined:
            return Text(N_("{encoding} is left out: {function} is not defined in this notebook; run the cell of "
                           "exercise {exercise} first (it did not run, or failed)."),
                        encoding=name, function=missing[0], exercise=EXERCISE[missing[0]])
        if missing:
            return Text(N_("{encoding} is left out: the experiment was not given {function}."),
                        encoding=name, function=missing[0])
        try:
            with _deadline(self.budget_s * 1.5):
                if encoding == "rope":
                    _probe_rope(self.functions["rotary_embedding"])
                elif encoding == "alibi":
                    _probe_alibi(self.functions["alibi_slopes"], self.functions["causal_alibi_attention"])
                with torch.random.fork_rng(devices=[]):        # the notebook's own random state stays as it was
                    torch.manual_seed(self.seed)
                    model = TinyCausalLM(encoding, self.functions)
                    cpu = time.process_time()
                    loss = train(model, lag, self.seed, budget_s=self.budget_s)
                    cpu = time.process_time() - cpu
                found = accuracy_by_length(model, lag)
        except _OutOfTime:
            if encoding not in NEEDS or NEEDS[encoding][-1] not in EXERCISE:
                return Text(N_("{encoding} is left out: its training would take over {budget} s, several times "
                               "the usual 1 to 2 s; the computer is busy with something else."),
                            encoding=name, budget=round(self.budget_s))
            function = self._calling[0] or NEEDS[encoding][-1]
            self._calling[0] = None
            return Text(N_("{encoding} is left out: with your {function} (exercise {exercise}) the training would take "
                           "over {budget} s, several times the reference's 1 to 2 s; loops over positions or "
                           "heads are the usual cause."),
                        encoding=name, function=function, exercise=EXERCISE[function],
                        budget=round(self.budget_s))
        except _StudentError as blamed:
            if isinstance(blamed.error, NotImplementedError):
                return Text(N_("{encoding} is left out: {function} is not written yet (exercise {exercise})."),
                            encoding=name, function=blamed.function, exercise=EXERCISE[blamed.function])
            return Text(N_("{encoding} is left out: {function} (exercise {exercise}) failed on the experiment's "
                           "inputs with {error}."),
                        encoding=name, function=blamed.function, exercise=EXERCISE[blamed.function],
                        error=_one_line(blamed.error))
        except _Unusable as unusable:
            return Text(N_("{encoding} is left out: {function} (exercise {exercise}) does not do what the "
                           "experiment needs, {what}."),
                        encoding=name, function=unusable.function, exercise=EXERCISE[unusable.function],
                        what=unusable.what)
        except Exception as error:      # the kit's code choking on what a student's function returned
            students = [f for f in NEEDS.get(encoding, ()) if f in EXERCISE]
            if not students:
                raise                       # the sinusoidal and learned runs are the kit's code alone: a bug
            return Text(N_("{encoding} is left out: with your {function} (exercise {exercise}) the model failed "
                           "with {error}."),
                        encoding=name, function=students[-1], exercise=EXERCISE[students[-1]],
                        error=_one_line(error))
        if not math.isfinite(loss):
            return Text(N_("{encoding} is left out: its training loss became {loss}, so its model learned nothing."),
                        encoding=name, loss=loss)
        self.results[(encoding, lag)] = {"loss": loss, "cpu_s": cpu, "accuracy": {n: a for n, (a, _) in found.items()},
                                         "beyond": {n: b for n, (_, b) in found.items() if b is not None}}
        return None

    def _summary(self, encoding, lag):
        result = self.results[(encoding, lag)]
        # No seconds here: a graded notebook's outputs must be the same each time it is graded (the grader's
        # tests compare them); `make benchmark-extrapolation` prints the time.
        return Text(N_("{encoding}, token {lag} back: final training loss {loss:.3f}; accuracy {first:.2f} at "
                       "length {train_len}, {last:.2f} at length {max_len}."),
                    encoding=Text(NAMES[encoding]), lag=lag, loss=result["loss"],
                    first=result["accuracy"][TRAIN_LEN], train_len=TRAIN_LEN,
                    last=result["accuracy"][MAX_LEN], max_len=MAX_LEN)

    def plot(self, lag=1):
        """Accuracy against the evaluation length (log scale) for every encoding run with ``lag``, with a table."""
        from .plotting import plot        # matplotlib loads here, not on import

        runs = [encoding for encoding in ENCODINGS if (encoding, lag) in self.results]
        if not runs:
            print(Text(N_("Nothing to plot for the token {lag} back: run the cells above first."), lag=lag).render())
            return None
        rows = [pad(Text(N_("accuracy by evaluation length")).render(), 30) + "".join(f"{n:>7d}" for n in EVAL_LENS)]
        for encoding in runs:
            accuracy = self.results[(encoding, lag)]["accuracy"]
            rows.append(pad(Text(NAMES[encoding]).render(), 30) + "".join(f"{accuracy[n]:7.2f}" for n in EVAL_LENS))
        print("\n".join(rows))
        names = [Text(NAMES[encoding]).render() for encoding in runs]
        figure = plot(list(EVAL_LENS), [[self.results[(e, lag)]["accuracy"][n] for n in EVAL_LENS] for e in runs],
                      xlabel=Text(N_("evaluation length (tokens)")).render(),
                      ylabel=Text(N_("accuracy")).render(),
                      ylim=(0, 1.05), xscale="log", fmts=("-o", "m--s", "g-.^", "r:d"), figsize=(5.5, 3.6),
                      title=Text(N_("trained on {train_len} tokens; the token {lag} back"),
                                 train_len=TRAIN_LEN, lag=lag).render())
        axes = figure.axes[0]
        axes.set_xticks(list(EVAL_LENS), [str(n) for n in EVAL_LENS])
        axes.minorticks_off()
        axes.axhline(1 / VOCAB, color="gray", linestyle=":", linewidth=1)
        axes.axvline(TRAIN_LEN, color="gray", linestyle="--", linewidth=1)
        axes.legend(axes.get_lines()[:len(runs)], names, loc="center left")
        figure.tight_layout()
        return figure

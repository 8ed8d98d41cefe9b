"""The result record: what grading decided, one typed record from the judge to every page and report.

- :class:`Message`: a sentence as data. Its ``template`` is the English text with named placeholders
  (``"{what} is off by up to {worst:.3g}"``), which is also its id in translation catalogues (gettext's
  msgid); its ``args`` are the values (numbers, shapes, names, nested messages). It becomes text only where a
  person reads it (:meth:`Message.render`), in the reader's language once a catalogue translates the template.
- :class:`CheckResult`: one check the trusted judge decided: points, kind, the message of a failure, and the
  catalogued mistakes (bug names) its numbers matched, so a report can count a class's results by mistake.
- :class:`CellResult`: one graded cell of a submission: its score (None while a written answer awaits the
  formgrader) and its checks.
- :class:`SubmissionResult`: one student's submission of one assignment, from the pre-check to the reports:
  status, issues, cells, the feedback page, and what the journal keys it by.

Every record has ``to_json``/``from_json``; the journal (:mod:`.journal`) stores ``SubmissionResult`` lines
of :data:`VERSION`, and refuses to reuse lines of another version.
"""

import string
from dataclasses import dataclass, field, replace
from numbers import Integral, Real

from attnkit.i18n import fill

VERSION = 2                      # of the records' JSON; the journal's lines carry it
# A check's kind, the words of attnkit.checking.Checks (tests/test_results.py holds the two equal): "values":
# compared with the reference on the grader's inputs; "property": a property of the submission's own numbers;
# "structure": shapes, dtypes, parameters.
KINDS = ("values", "structure", "property")
STATUSES = ("pending", "graded", "rejected", "failed", "missing")
MESSAGE_LIMIT = 400              # characters of a check's message on one line; twice that with a diagnosis
_FORMATTER = string.Formatter()


@dataclass(frozen=True)
class Message:
    """A sentence as data: ``template`` (English, named placeholders) and ``args`` ((name, value) pairs)."""

    template: str
    args: tuple = ()

    @classmethod
    def make(cls, template, **args):
        """A Message whose values keep the text an f-string would give: a value with a format spec is kept a
        number (numpy scalars become Python numbers), any other is kept as it is if JSON can hold it
        (str, int, float, bool, None, Message) and as its text otherwise (a tuple becomes "(0, 1)")."""
        if not isinstance(template, str):
            raise TypeError(f"template: expected text, got {type(template).__name__}")
        specs = {name: spec for _, name, spec, _ in _FORMATTER.parse(template) if name is not None}
        missing = set(specs) - set(args)
        if missing:
            raise ValueError(f"args: the template {template!r} needs {sorted(missing)}")
        return cls(template, tuple(sorted((name, _plain(value, bool(specs.get(name)))) for name, value in args.items())))

    @classmethod
    def text(cls, text):
        """Text made elsewhere (an untrusted error, a lower layer's sentence): shown as it is, never translated."""
        return cls("{text}", (("text", str(text)),))

    def render(self, translate=None):
        """The text; ``translate(template) -> template`` gives another language's (default: English)."""
        template = translate(self.template) if translate else self.template
        values = {name: value.render(translate) if isinstance(value, Message) else value for name, value in self.args}
        return fill(template, values)          # template.format, with Chinese spacing (attnkit.i18n.fill)

    def __str__(self):
        return self.render()

    def to_json(self):
        return {"template": self.template,
                "args": {name: value.to_json() if isinstance(value, Message) else value for name, value in self.args}}

    @classmethod
    def from_json(cls, data):
        if not isinstance(data, dict) or not isinstance(data.get("template"), str) or not isinstance(data.get("args"), dict):
            raise ValueError(f"not a message: {str(data)[:80]}")
        args = {name: cls.from_json(value) if isinstance(value, dict) else value for name, value in data["args"].items()}
        return cls(data["template"], tuple(sorted(args.items())))


def message(value):
    """``value`` as a Message (text made elsewhere stays as it is); None stays None."""
    if value is None or isinstance(value, Message):
        return value
    return Message.text(value)


def _plain(value, formatted):
    if isinstance(value, (Message, str, bool)) or value is None:
        return value
    if isinstance(value, Integral):
        return int(value) if formatted or type(value) is int else str(value)
    if isinstance(value, Real):
        return float(value) if formatted or isinstance(value, float) else str(value)
    if formatted and hasattr(value, "item"):              # a numpy scalar of another kind
        return value.item()
    return str(value)


def one_line(text, limit=MESSAGE_LIMIT):
    """``text`` on one line (white space folded), at most ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def check_text(message, mistakes=(), translate=None):
    """A check's ``message`` on one line: at most MESSAGE_LIMIT characters, twice that when it names
    ``mistakes`` of the catalogue ('' for no message)."""
    if message is None:
        return ""
    return one_line(message.render(translate), 2 * MESSAGE_LIMIT if mistakes else MESSAGE_LIMIT)


@dataclass(frozen=True)
class CheckResult:
    """One decided check. ``id``: its short id (stable across runs); ``name``: what it checks (its own text,
    a message id too); ``points`` is ``max_points`` when it passed, else 0; ``message``: why it failed;
    ``mistakes``: the names of the catalogued bugs whose numbers (or exception) the result matched."""

    id: str
    name: str
    points: float
    max_points: float
    passed: bool
    kind: str = "values"
    message: Message = None
    mistakes: tuple = ()
    hidden: bool = False

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind: expected one of {KINDS}, got {self.kind!r}")

    def text(self, translate=None):
        """The failure's message on one line ('' when it passed)."""
        return check_text(self.message, self.mistakes, translate)

    def to_json(self):
        return {"id": self.id, "name": self.name, "points": self.points, "max_points": self.max_points,
                "passed": self.passed, "kind": self.kind,
                "message": self.message.to_json() if self.message else None,
                "mistakes": list(self.mistakes), "hidden": self.hidden}

    @classmethod
    def from_json(cls, data):
        return cls(str(data["id"]), str(data["name"]), float(data["points"]), float(data["max_points"]),
                   bool(data["passed"]), str(data.get("kind", "values")),
                   Message.from_json(data["message"]) if data.get("message") else None,
                   tuple(str(m) for m in data.get("mistakes", ())), bool(data.get("hidden", False)))


@dataclass(frozen=True)
class CellResult:
    """One graded cell: ``kind`` 'test' (autograded) or 'written' (graded by hand); ``score`` None while it
    awaits the formgrader; ``checks`` the judge's, in its order; ``answered``: a written answer changed since
    the release (None where it does not apply)."""

    grade_id: str
    kind: str
    max_points: float
    score: float = None
    checks: tuple = ()
    answered: bool = None

    def first_failure(self, translate=None):
        """The message of the first failed check ('' when none failed)."""
        return next((check.text(translate) for check in self.checks if not check.passed), "")

    def to_json(self):
        return {"grade_id": self.grade_id, "kind": self.kind, "max_points": self.max_points, "score": self.score,
                "checks": [check.to_json() for check in self.checks], "answered": self.answered}

    @classmethod
    def from_json(cls, data):
        return cls(str(data["grade_id"]), str(data["kind"]), float(data["max_points"]),
                   None if data.get("score") is None else float(data["score"]),
                   tuple(CheckResult.from_json(c) for c in data.get("checks", ())), data.get("answered"))


@dataclass
class SubmissionResult:
    """One student's submission of one assignment, and what became of it.

    ``status``: 'pending' (before grading), 'graded', 'rejected' (the pre-check found it ungradable),
    'failed' (the grader gave up) or 'missing' (nothing handed in); ``issues``: [Message], the reasons and
    remarks; ``cells``: {grade_id: CellResult} (empty where the grader keeps no per-check record);
    ``feedback``: the feedback page; ``resumed``: taken from the journal of an earlier run. The rest is how
    it was graded: the notebook's sha256 and the grader's fingerprint (the journal's key), the notebook's
    name, the inputs' seed, the sandbox's ``reason`` when the run did not end well, and ``run``: the runner's
    records the autograded copy is rebuilt from (its cells and their captured output).
    """

    student: str
    assignment: str
    status: str = "pending"
    issues: list = field(default_factory=list)
    cells: dict = field(default_factory=dict)
    seconds: float = None
    feedback: str = None
    resumed: bool = False
    sha256: str = None
    grader: str = None
    notebook: str = None
    seed: str = None
    reason: Message = None
    run: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status: expected one of {STATUSES}, got {self.status!r}")
        self.issues = [message(issue) for issue in self.issues]
        self.reason = message(self.reason)

    @property
    def bad(self):
        """True when it needs the instructor's attention: not graded, or graded with remarks."""
        return self.status != "graded" or bool(self.issues)

    @property
    def checked(self):
        """{grade_id: (CheckResult, ...)} of the cells the judge decided (empty under plain nbgrader)."""
        return {g: cell.checks for g, cell in self.cells.items() if cell.checks}

    def failures(self, translate=None):
        """{grade_id: the first failed check's message} of every cell where a check failed."""
        return {g: cell.first_failure(translate) for g, cell in self.cells.items()
                if any(not c.passed for c in cell.checks)}

    def scores(self):
        """{grade_id: points, None while awaiting a manual grade}."""
        return {g: cell.score for g, cell in self.cells.items()}

    def issue_texts(self, translate=None):
        return [issue.render(translate) for issue in self.issues]

    def add_issues(self, issues):
        """Append the issues not already there (as messages)."""
        for issue in map(message, issues):
            if issue not in self.issues:
                self.issues.append(issue)

    def to_json(self):
        return {"version": VERSION, "student": self.student, "assignment": self.assignment, "status": self.status,
                "issues": [issue.to_json() for issue in self.issues],
                "cells": [cell.to_json() for cell in self.cells.values()], "seconds": self.seconds,
                "feedback": self.feedback, "resumed": self.resumed, "sha256": self.sha256, "grader": self.grader,
                "notebook": self.notebook, "seed": self.seed,
                "reason": self.reason.to_json() if self.reason else None, "run": self.run}

    @classmethod
    def from_json(cls, data):
        if not isinstance(data, dict) or data.get("version") != VERSION:
            found = data.get("version") if isinstance(data, dict) else None
            raise ValueError(f"a result record of version {found}, not {VERSION}")
        return cls(str(data["student"]), str(data["assignment"]), str(data["status"]),
                   [Message.from_json(i) for i in data.get("issues", [])],
                   {cell.grade_id: cell for cell in map(CellResult.from_json, data.get("cells", []))},
                   data.get("seconds"), data.get("feedback"), bool(data.get("resumed")), data.get("sha256"),
                   data.get("grader"), data.get("notebook"), data.get("seed"),
                   Message.from_json(data["reason"]) if data.get("reason") else None, data.get("run") or {})

    def evolve(self, **changes):
        return replace(self, **changes)

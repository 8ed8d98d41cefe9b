"""The grading journal: one JSON line per finished submission, so a killed batch resumes where it stopped.

A line is appended (and fsync'ed) only after the submission's scores are committed to the gradebook
and its feedback is written, so every line stands for finished work. It is keyed by student,
assignment, the sha256 of the notebook as handed in, and the grader's fingerprint (release notebook,
probes, judges, runner, limits, and the environment: its lock, its packages, the torch and numpy the sandboxes
import): a changed submission, a changed grader or another environment never matches an old line.
A line cut short by ``kill -9`` (no newline, or not JSON) is ignored, and the next append starts on a
fresh line. Each line is a :class:`~attnkit_grader.results.SubmissionResult` record with its
version; a line of another version (an older grader's) is never reused: it is counted and a warning
says so, and the submission is graded again.

The journal is only ever read and appended by the grading parent, never by a sandbox.
"""

import json
import logging
import os
from pathlib import Path

from .results import VERSION, SubmissionResult

log = logging.getLogger(__name__)


class Journal:
    """Append-only JSON-lines file of finished submissions (see the module docstring).

    ``stale``: how many complete lines were written by a grader whose records have another version
    (:data:`~attnkit_grader.results.VERSION`); they are never reused, and :meth:`load` warns once.
    """

    def __init__(self, path):
        self.path = Path(path)
        self.entries = {}
        self.stale = 0
        self.load()

    @staticmethod
    def key(student, assignment, sha256, grader):
        return (str(student), str(assignment), str(sha256), str(grader))

    def load(self):
        """Read every complete line; later lines for the same key win."""
        self.entries, self.stale = {}, 0
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        for line in data.split(b"\n"):
            try:
                entry = json.loads(line)
            except ValueError:
                continue                                # empty, or cut short by a kill
            if not isinstance(entry, dict):
                continue
            if entry.get("version") != VERSION:
                self.stale += 1
                continue
            try:
                result = SubmissionResult.from_json(entry)
            except (ValueError, KeyError, TypeError, AttributeError):
                continue                                # not a record: never misread, the submission is graded again
            if all(isinstance(v, str) for v in (result.sha256, result.grader)):
                self.entries[self.key(result.student, result.assignment, result.sha256, result.grader)] = result
        if self.stale:
            log.warning("%s: %d line(s) written by an older grader (result records of another version than %d) "
                        "are not reused; those submissions are graded again", self.path, self.stale, VERSION)

    def find(self, student, assignment, sha256, grader):
        """The SubmissionResult recorded for exactly this submission and grader, or None."""
        return self.entries.get(self.key(student, assignment, sha256, grader))

    def append(self, result):
        """Write ``result`` (a SubmissionResult with sha256 and grader) as one line, durably."""
        if not (isinstance(result.sha256, str) and isinstance(result.grader, str)):
            raise ValueError("result: a journal line needs the notebook's sha256 and the grader's fingerprint")
        line = json.dumps(result.to_json(), sort_keys=True, allow_nan=False).encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "ab") as handle:
            if handle.tell() and not self.ends_with_newline():
                handle.write(b"\n")                     # the last line was cut short: leave it alone
            handle.write(line + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        self.entries[self.key(result.student, result.assignment, result.sha256, result.grader)] = result

    def ends_with_newline(self):
        with open(self.path, "rb") as handle:
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) == b"\n"

    def start_afresh(self):
        """Forget earlier runs: the old file is kept next to it as journal.jsonl.old."""
        if self.path.exists():
            os.replace(self.path, self.path.with_name(self.path.name + ".old"))
        self.entries, self.stale = {}, 0

    def __len__(self):
        return len(self.entries)

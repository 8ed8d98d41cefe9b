"""The grading journal: one JSON line per finished submission, so a killed batch resumes where it stopped.

A line is appended (and fsync'ed) only after the submission's scores are committed to the gradebook
and its feedback is written, so every line stands for finished work. It is keyed by student,
assignment, the sha256 of the notebook as handed in, and the grader's fingerprint (release notebook,
probes, judges, runner, limits): a changed submission or a changed grader never matches an old line.
A line cut short by ``kill -9`` (no newline, or not JSON) is ignored, and the next append starts on a
fresh line.

The journal is only ever read and appended by the grading parent, never by a sandbox.
"""

import json
import os
from pathlib import Path

VERSION = 1


class Journal:
    """Append-only JSON-lines file of finished submissions (see the module docstring)."""

    def __init__(self, path):
        self.path = Path(path)
        self.entries = {}
        self.load()

    @staticmethod
    def key(student, assignment, sha256, grader):
        return (str(student), str(assignment), str(sha256), str(grader))

    def load(self):
        """Read every complete line; later lines for the same key win."""
        self.entries = {}
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        for line in data.split(b"\n"):
            try:
                entry = json.loads(line)
            except ValueError:
                continue                                # empty, or cut short by a kill
            if isinstance(entry, dict) and entry.get("version") == VERSION and all(
                    isinstance(entry.get(k), str) for k in ("student", "assignment", "sha256", "grader")):
                self.entries[self.key(entry["student"], entry["assignment"], entry["sha256"], entry["grader"])] = entry

    def find(self, student, assignment, sha256, grader):
        """The entry recorded for exactly this submission and grader, or None."""
        return self.entries.get(self.key(student, assignment, sha256, grader))

    def append(self, entry):
        """Write ``entry`` (a dict with student, assignment, sha256, grader) as one line, durably."""
        entry = {**entry, "version": VERSION}
        line = json.dumps(entry, sort_keys=True, allow_nan=False).encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "ab") as handle:
            if handle.tell() and not self.ends_with_newline():
                handle.write(b"\n")                     # the last line was cut short: leave it alone
            handle.write(line + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        self.entries[self.key(entry["student"], entry["assignment"], entry["sha256"], entry["grader"])] = entry

    def ends_with_newline(self):
        with open(self.path, "rb") as handle:
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) == b"\n"

    def start_afresh(self):
        """Forget earlier runs: the old file is kept next to it as journal.jsonl.old."""
        if self.path.exists():
            os.replace(self.path, self.path.with_name(self.path.name + ".old"))
        self.entries = {}

    def __len__(self):
        return len(self.entries)

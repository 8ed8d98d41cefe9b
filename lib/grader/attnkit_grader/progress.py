"""A plain-text progress bar with an ETA, on stderr, for a batch of submissions.

On a terminal it redraws one line (``\\r``); anywhere else (CI logs, a pipe, a file) it prints one
line per finished submission, so the log reads the same in both cases. The ETA divides the work left
by the rate measured so far, counting only submissions actually graded in this run (those taken from
the journal of an earlier run cost nothing and would make the estimate too hopeful).
"""

import sys
import time

WIDTH = 24


def duration(seconds):
    """'42 s', '3 min 05 s' or '1 h 02 min'."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class Progress:
    """``update(label, note)`` after each submission; ``close()`` at the end."""

    def __init__(self, total, stream=None, tty=None, clock=time.monotonic):
        self.total, self.done, self.timed = total, 0, 0
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.clock = clock
        self.start = clock()
        self.drawn = False

    def eta(self):
        """Seconds left, from the rate of the submissions graded in this run; None before the first."""
        left = self.total - self.done
        if left <= 0:
            return 0.0
        if not self.timed:
            return None
        return (self.clock() - self.start) / self.timed * left

    def line(self, label="", note=""):
        fraction = self.done / self.total if self.total else 1.0
        filled = int(round(WIDTH * fraction))
        eta = self.eta()
        when = "done" if self.done >= self.total else "ETA " + (duration(eta) if eta is not None else "?")
        text = (f"[{'#' * filled}{'.' * (WIDTH - filled)}] {self.done}/{self.total} {fraction:4.0%} "
                f"{duration(self.clock() - self.start)} elapsed, {when}")
        if label:
            text += f" | {label}" + (f": {note}" if note else "")
        return text

    def update(self, label="", note="", timed=True):
        """One more submission finished; ``timed`` False when it was not graded in this run (journal)."""
        self.done += 1
        self.timed += bool(timed)
        text = self.line(label, note)
        if self.tty:
            self.stream.write("\r\x1b[2K" + text)
            self.drawn = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self):
        if self.tty and self.drawn:
            self.stream.write("\n")
            self.stream.flush()

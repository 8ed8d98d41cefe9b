"""A plain-text progress bar with an ETA, on stderr, for a batch of submissions.

On a terminal it redraws one line (``\\r``); anywhere else (CI logs, a pipe, a file) it prints a line
at most every :data:`INTERVAL` seconds, and the last one: the log grows with the batch's duration, not with
its size (1,000 submissions graded in 100 s leave about 20 lines). The ETA divides the work left
by the rate measured so far, counting only submissions actually graded in this run (those taken from
the journal of an earlier run cost nothing and would make the estimate too hopeful). Where the grader
tells what it is doing (:class:`~attnkit_grader.autograders.base.Activity`: a cluster's), the line also
says how many submissions run and wait, and how many each worker ran.
"""

import sys
import time

WIDTH = 24
INTERVAL = 5.0        # seconds between two lines off a terminal
NAMED_WORKERS = 4     # workers named on the line (the busiest); the others are counted


def duration(seconds):
    """'42 s', '3 min 05 s' or '1 h 02 min'."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def workers(ran):
    """'2 workers ran 5, 3' or '9 workers ran w-3 12, w-1 11, ... (5 more)': the busiest by name."""
    busiest = sorted(ran.items(), key=lambda item: (-item[1], item[0]))
    named = ", ".join(f"{name} {count}" for name, count in busiest[:NAMED_WORKERS])
    more = f", ({len(busiest) - NAMED_WORKERS} more)" if len(busiest) > NAMED_WORKERS else ""
    return f"{len(busiest)} worker{'s' if len(busiest) != 1 else ''} ran {named}{more}"


class Progress:
    """``update(label, note)`` after each submission; ``close()`` at the end."""

    def __init__(self, total, stream=None, tty=None, clock=time.monotonic, interval=INTERVAL):
        self.total, self.done, self.timed = total, 0, 0
        self.interval, self.printed = interval, None
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

    def line(self, label="", note="", activity=None):
        fraction = self.done / self.total if self.total else 1.0
        filled = int(round(WIDTH * fraction))
        eta = self.eta()
        when = "done" if self.done >= self.total else "ETA " + (duration(eta) if eta is not None else "?")
        text = (f"[{'#' * filled}{'.' * (WIDTH - filled)}] {self.done}/{self.total} {fraction:4.0%} "
                f"{duration(self.clock() - self.start)} elapsed, {when}")
        if activity is not None:
            running = max(0, min(activity.running, self.total - self.done))
            text += f" | running {running}, queued {self.total - self.done - running}"
            if activity.workers:
                text += f" | {workers(activity.workers)}"
        if label:
            text += f" | {label}" + (f": {note}" if note else "")
        return text

    def update(self, label="", note="", timed=True, activity=None):
        """One more submission finished; ``timed`` False when it was not graded in this run (journal);
        ``activity``: what the grader is doing now, if it tells."""
        self.done += 1
        self.timed += bool(timed)
        text = self.line(label, note, activity)
        if self.tty:
            self.stream.write("\r\x1b[2K" + text)
            self.drawn = True
        else:
            now = self.clock()
            if self.printed is not None and now - self.printed < self.interval and self.done < self.total:
                return
            self.printed = now
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self):
        if self.tty and self.drawn:
            self.stream.write("\n")
            self.stream.flush()

"""Ending a long-lived helper process the grader started (the warm zygote, a door's session) once its input is
closed: it gets a grace period to finish on its own, then is killed, and its exit status is always collected."""

import subprocess


def reap(process, grace):
    """Wait up to ``grace`` seconds for ``process`` (a Popen) to end by itself, then kill it; no zombie is left."""
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()

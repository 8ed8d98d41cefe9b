"""The sandboxed grader's pool (attnkit_grader.autograders.pool) and its batch: each run is handed to a sandbox as
soon as it is planned, and the gradebook's side of the batch is done while the first sandboxes run."""

import threading
import types

import pytest

from attnkit_grader.autograders.base import Job
from attnkit_grader.autograders.pool import Pool
from attnkit_grader.autograders.sandboxed import SandboxAutograder

WAIT = 30                        # seconds: far longer than anything here takes; a wait this long is a failure


class Slots(Pool):
    """A pool of two worker threads whose runs start no sandbox: each run says it started, and waits until let go."""

    def __init__(self, workers=2):
        self.workers, self.claimed, self.sessions = workers, [(0, None), (1, None)][:workers], {}
        self.started, self.go = [], threading.Event()

    def run_one(self, plan, slot, launcher=None):
        self.started.append(plan)
        assert self.go.wait(WAIT), "a run was never let go"
        return f"ran {plan}"


def test_a_run_starts_before_the_next_plan_is_made():
    """in_pool takes plans as they come: the second is asked for only after the first run has started, so a
    batch's first sandbox starts while the rest is planned."""
    pool = Slots()

    def plans():
        yield "first"
        for _ in range(WAIT * 100):               # until the first run has started
            if pool.started:
                break
            threading.Event().wait(0.01)
        assert pool.started == ["first"], "the second plan was asked for before the first run started"
        pool.go.set()
        yield "second"

    done = sorted((plan, run, error) for plan, run, error in pool.in_pool(plans(), 2))
    assert done == [("first", "ran first", None), ("second", "ran second", None)]


def test_an_empty_batch_opens_no_pool():
    pool = Slots()
    pool.open_pool = lambda: pytest.fail("the pool was opened for nothing")
    assert list(pool.in_pool(iter([]), 0)) == []


def test_a_plan_that_fails_to_come_stops_the_batch_without_waiting_for_the_queued_runs():
    """When planning fails (or the gradebook's side of the batch does), the runs not started yet are cancelled."""
    pool = Slots(workers=1)

    def plans():
        yield "first"
        yield "second"                          # queued behind the first: never started
        pool.go.set()
        raise OSError("the class folder vanished")

    with pytest.raises(OSError, match="vanished"):
        list(pool.in_pool(plans(), 3))
    assert pool.started == ["first"]


class Batch(SandboxAutograder):
    """The sandboxed grader's batch with plans that need no course and runs that need no sandbox."""

    def __init__(self, events):
        self.workers, self.claimed, self.sessions = 2, [(0, None), (1, None)], {}
        self.events, self.journal = events, types.SimpleNamespace(find=lambda *key: None, append=lambda result: None)

    def run_one(self, plan, slot, launcher=None):
        return types.SimpleNamespace(started=True)

    def plan(self, job):
        self.events.append(f"plan {job.student}")
        return types.SimpleNamespace(job=job, release=None, sha256="0" * 64)

    def fingerprint(self, release):
        return "grader"

    def decide(self, plan, done, grader):
        return plan.job.student

    def publish(self, plan, decided, resumed):
        self.events.append(f"write {decided}")
        return decided, ""


def test_the_batch_settles_the_gradebook_once_every_run_is_handed_over_and_before_its_first_write():
    events = []
    batch = Batch(events)
    jobs = [Job("toy", student, None) for student in ("ada", "bo", "cy")]
    results = list(batch.batch(jobs, before_writing=lambda: events.append("gradebook")))
    assert sorted(result for result, _ in results) == ["ada", "bo", "cy"]
    assert events[:4] == ["plan ada", "plan bo", "plan cy", "gradebook"]
    assert sorted(events[4:]) == ["write ada", "write bo", "write cy"]

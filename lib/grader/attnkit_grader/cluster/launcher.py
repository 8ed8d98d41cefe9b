"""The grading process's side of cluster grading: :class:`ClusterLauncher`, a launcher whose sandboxes run on Dask workers.

It has the ``launch(job, scratch_dir, limits) -> SandboxResult`` of a :class:`~..isolation.bwrap.Sandbox`
and of a :class:`~..isolation.door.Door`, so the sandboxed autograder drives it unchanged: each launch
reads the runner's files from the scratch folder into a door request (data only), submits
:func:`.worker.launch` with it under a task key of its own (Dask merges tasks with equal keys: two
students' identical notebooks must run twice), waits for the worker's reply and parses it as a door's,
as hostile bytes. A worker lost mid-run is Dask's to handle: the task runs again on another worker and
this launch still returns once. A scheduler lost mid-batch raises
:class:`~..autograders.base.BatchInterrupted`.

With a ``vet`` (the canary of :mod:`..canary`, run on one worker), a student's work goes only to workers that
passed it: before each launch the scheduler is asked (at most every ASK_EVERY s) which workers are connected,
each new one is vetted first (in the launching thread, its canary pinned to it: ``launch(..., worker=ADDRESS)``),
a worker that fails is named and left out, and the task is restricted to the admitted workers. A reply from
any other worker is refused. If no worker is admitted and none is being vetted, the batch stops.
"""

import collections
import logging
import threading
import time
import uuid
from concurrent.futures import CancelledError

from ..autograders.base import Activity, BatchInterrupted
from ..isolation import door
from . import worker as cluster_worker

log = logging.getLogger(__name__)

KEY_PREFIX = "attnkit-run-"
NAME_LIMIT = 64                   # characters of a worker's name kept for the progress line
ASK_EVERY = 2.0                   # seconds between two questions to the scheduler about running tasks


class ClusterError(RuntimeError):
    """A worker's answer that is not a door reply, or a worker that could not run a request."""


def task_key():
    """A Dask key no other task of any batch has."""
    return KEY_PREFIX + uuid.uuid4().hex


class ClusterLauncher:
    """Runs each sandbox on a worker of ``client``'s cluster (see the module's docstring)."""

    def __init__(self, client, limits, vet=None):
        self.client = client
        self.limits = limits
        self.vet = vet                                 # vet(address, name) -> True when its canary passed
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.admitted, self.refused, self.vetting = {}, {}, set()     # address -> worker name (refused: why)
        self.looked = None
        self.names_seen = {}
        self.keys = set()                              # this launcher's tasks not yet answered
        self.ran = collections.Counter()               # worker name -> replies in this batch
        self.asked, self.running = None, 0

    def launch(self, job, scratch_dir, limits=None, worker=None):
        """Run ``job`` on a worker: ``worker`` (an address: that one only), else one the vetting admitted."""
        request = door.encode(door.request_frames(job, scratch_dir, limits or self.limits))
        allowed = [worker] if worker is not None else self.workers_for_students()
        key = task_key()
        with self.lock:
            self.keys.add(key)
        try:
            where = {} if allowed is None else {"workers": allowed, "allow_other_workers": False}
            future = self.client.submit(cluster_worker.launch, request, key=key, pure=False, **where)
            try:
                answer = future.result()
            except CancelledError as error:
                raise BatchInterrupted(f"the cluster's scheduler was lost mid-batch ({error or 'cancelled'}); the "
                                       f"submissions graded so far are in the journal: run the same command again "
                                       f"to grade the rest") from None
            finally:
                future.release()
        finally:
            with self.lock:
                self.keys.discard(key)
        return self.read(answer, None if allowed is None else self.names(allowed), counted=worker is None)

    def names(self, addresses):
        with self.lock:
            return {self.admitted.get(a) or self.names_seen.get(a) for a in addresses}

    def workers_for_students(self, clock=time.monotonic):
        """The addresses a student's task may run on (None: any, without a vet), vetting newcomers first."""
        if self.vet is None:
            return None
        while True:
            with self.lock:
                new = self.newcomers(clock())
                self.vetting |= set(new)
            for address, name in new.items():
                try:
                    passed = self.vet(address, name)
                except Exception as error:  # noqa: BLE001 - a worker whose canary could not run is left out
                    log.warning("worker %s left out: its canary could not run: %s", name, error)
                    passed = False
                with self.lock:
                    self.vetting.discard(address)
                    (self.admitted if passed else self.refused)[address] = name
                    self.changed.notify_all()
            with self.lock:
                if self.admitted:
                    return sorted(self.admitted)
                if self.refused and not self.vetting and not self.newcomers(clock(), force=True):
                    raise BatchInterrupted(f"no worker of the cluster passed the canary (left out: "
                                           f"{', '.join(sorted(self.refused.values())) or 'none connected'})")
                self.changed.wait(ASK_EVERY)

    def newcomers(self, now, force=False):
        """{address: name} of the connected workers never vetted (asked at most every ASK_EVERY s unless
        ``force``); admitted workers that left are forgotten. Called with the lock held."""
        if not force and self.looked is not None and now - self.looked < ASK_EVERY and self.admitted:
            return {}
        self.looked = now
        workers = self.client.scheduler_info(n_workers=-1)["workers"]
        self.names_seen = {address: str(info.get("name", address))[:NAME_LIMIT] for address, info in workers.items()}
        for address in [a for a in self.admitted if a not in workers]:
            del self.admitted[address]
        return {address: name for address, name in self.names_seen.items()
                if address not in self.admitted and address not in self.refused and address not in self.vetting}

    def read(self, answer, allowed=None, counted=True):
        """The SandboxResult of a worker's ``answer`` (its name, the door reply's bytes), read as hostile; a reply
        from a worker not in ``allowed`` (names; None: any) is refused; ``counted``: a student's run (the
        progress line counts those, not the canary's)."""
        if not (isinstance(answer, tuple) and len(answer) == 2 and isinstance(answer[0], str)
                and isinstance(answer[1], bytes)):
            raise ClusterError(f"a worker answered {type(answer).__name__}, not its name and a door reply")
        name, reply = answer
        if allowed is not None and name[:NAME_LIMIT] not in allowed:
            raise ClusterError(f"worker {name[:NAME_LIMIT]!r} answered, but it has not passed the canary")
        try:
            result = door.parse_reply(door.decode(reply))
        except door.RequestError as error:
            raise ClusterError(f"worker {name[:NAME_LIMIT]!r} sent a malformed reply: {error}") from None
        with self.lock:
            self.ran[name[:NAME_LIMIT]] += counted
        return result

    def activity(self, clock=time.monotonic):
        """An Activity: this launcher's tasks that a worker is running (asked at most every ASK_EVERY s)."""
        now = clock()
        if self.asked is None or now - self.asked >= ASK_EVERY:
            self.asked = now
            try:
                processing = self.client.processing()
            except Exception as error:  # noqa: BLE001 - the progress line must never stop a batch
                log.debug("could not ask the scheduler what runs: %s", error)
                processing = {}
            with self.lock:
                self.running = sum(key in self.keys for keys in processing.values() for key in keys)
        with self.lock:
            return Activity(self.running, dict(self.ran))


class Pinned:
    """A launcher whose runs all go to one worker of ``launcher``'s cluster (the canary's, before it is admitted)."""

    def __init__(self, launcher, address):
        self.launcher, self.address, self.limits = launcher, address, launcher.limits

    def launch(self, job, scratch_dir, limits=None):
        return self.launcher.launch(job, scratch_dir, limits, worker=self.address)

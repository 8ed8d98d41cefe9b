"""The grading process's side of cluster grading: :class:`ClusterLauncher`, a launcher whose sandboxes run on Dask workers.

It has the ``launch(job, scratch_dir, limits) -> SandboxResult`` of a :class:`~..isolation.bwrap.Sandbox`
and of a :class:`~..isolation.door.Door`, so the sandboxed autograder drives it unchanged: each launch
reads the runner's files from the scratch folder into a door request (data only), submits
:func:`.worker.launch` with it under a task key of its own (Dask merges tasks with equal keys: two
students' identical notebooks must run twice), waits for the worker's reply and parses it as a door's,
as hostile bytes. A worker lost mid-run is Dask's to handle: the task runs again on another worker and
this launch still returns once. A scheduler lost mid-batch raises
:class:`~..autograders.base.BatchInterrupted`.
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

    def __init__(self, client, limits):
        self.client = client
        self.limits = limits
        self.lock = threading.Lock()
        self.keys = set()                              # this launcher's tasks not yet answered
        self.ran = collections.Counter()               # worker name -> replies in this batch
        self.asked, self.running = None, 0

    def launch(self, job, scratch_dir, limits=None):
        request = door.encode(door.request_frames(job, scratch_dir, limits or self.limits))
        key = task_key()
        with self.lock:
            self.keys.add(key)
        try:
            future = self.client.submit(cluster_worker.launch, request, key=key, pure=False)
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
        return self.read(answer)

    def read(self, answer):
        """The SandboxResult of a worker's ``answer`` (its name, the door reply's bytes), read as hostile."""
        if not (isinstance(answer, tuple) and len(answer) == 2 and isinstance(answer[0], str)
                and isinstance(answer[1], bytes)):
            raise ClusterError(f"a worker answered {type(answer).__name__}, not its name and a door reply")
        name, reply = answer
        try:
            result = door.parse_reply(door.decode(reply))
        except door.RequestError as error:
            raise ClusterError(f"worker {name[:NAME_LIMIT]!r} sent a malformed reply: {error}") from None
        with self.lock:
            self.ran[name[:NAME_LIMIT]] += 1
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

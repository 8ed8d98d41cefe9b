"""The sandboxed autograder with its sandboxes on a Dask cluster: :class:`ClusterAutograder`.

Everything of :class:`~.sandboxed.SandboxAutograder` stays in the grading process: the plan and the
journal, the restored notebook and the trusted probe inputs, the retries without a cell that killed the
run, the judge, the feedback pages, the gradebook and the autograded copies. Only the sandbox runs on a
worker (:class:`~..cluster.launcher.ClusterLauncher`), asked with a door request. The grades are therefore
those of the local pool, and a batch stopped anyhow (the grading process or the scheduler killed) resumes
from the journal, on the cluster or on one machine: the journal's grader fingerprint is the same.

``scheduler``: ``tls://HOST:PORT`` (plain tcp is refused: it authenticates nobody); ``certs``: the folder of
``attnkit cluster certs`` holding ``ca.pem`` and the client's certificate and key; ``workers``: submissions
in flight at once (default: twice the cluster's worker threads when the batch starts, so that every
worker has its next request waiting). Whether a run starts warm is the worker's to decide
(:mod:`..cluster.worker`), so ``warm`` (``--cold-start``) is refused here.

The canary (:mod:`..canary`) is sung on each worker, since each has its own environment: before any
student's work, on every connected worker at once, each pinned to its worker; a worker that joins later sings it
before it takes a submission (:class:`~..cluster.launcher.ClusterLauncher`'s vetting). A worker whose canary
fails is named and left out, no reply from a worker that has not passed is taken, and if none passes the batch
stops (CanaryFailed before anything is written, or BatchInterrupted mid-batch).
"""

import concurrent.futures
import logging
import time

from .. import canary
from ..cluster import certs as cluster_certs
from ..cluster.launcher import ClusterLauncher, Pinned
from .sandboxed import SandboxAutograder

log = logging.getLogger(__name__)

CONNECT_SECONDS = 30


def check_address(scheduler):
    """``scheduler`` if it is a tls:// address, else ValueError naming the argument."""
    if not isinstance(scheduler, str) or not scheduler.startswith("tls://") or len(scheduler) <= len("tls://"):
        raise ValueError(f"scheduler: expected tls://HOST:PORT (the cluster speaks TLS only: plain tcp:// "
                         f"authenticates nobody), got {scheduler!r}")
    return scheduler


class ClusterAutograder(SandboxAutograder):
    """The sandboxed autograder whose sandboxes run on the Dask workers of ``scheduler`` (see the module).

    Nothing is staged and no uid slot is claimed on this machine (``local`` False): each worker stages its own
    packages and chooses its sandboxes' uids (or its door does). The scheduler is asked at once, so a wrong
    address or certificate is said before anything is graded."""

    local = False

    def __init__(self, course, output_dir, scheduler, certs, workers=None, warm=None, **options):
        from distributed import Client

        self.scheduler = check_address(scheduler)
        if warm is not None:
            raise ValueError(f"warm: each worker's machine decides how its sandboxes start (warm through its door, "
                             f"cold without one), not the grading process; got warm={warm!r} (--cold-start)")
        security = cluster_certs.security(certs, "client")
        super().__init__(course, output_dir, workers=workers, door_program=None, warm=False, **options)
        try:
            self.client = Client(self.scheduler, security=security, timeout=CONNECT_SECONDS, set_as_default=False)
        except (OSError, TimeoutError) as error:
            raise ValueError(f"scheduler: no cluster answered at {self.scheduler} with these certificates "
                             f"within {CONNECT_SECONDS} s ({error})") from None
        threads = sum(self.client.nthreads().values())
        if not threads:
            log.warning("the cluster at %s has no worker yet: submissions wait until one joins", self.scheduler)
        if workers is None:
            self.workers = max(1, 2 * threads)
        self.cluster_launcher = ClusterLauncher(self.client, self.limits, vet=self.vet if self.canary else None)
        self.sung = []                 # the assignments each worker's canary grades

    def sing(self, assignments):
        """The canary on every connected worker at once (see the module's docstring): the line saying where it
        passed and its cost; CanaryFailed, naming each worker and what moved, when it passed on none."""
        self.sung = list(assignments)
        start, launcher = time.perf_counter(), self.cluster_launcher
        with launcher.lock:
            workers = launcher.newcomers(time.monotonic(), force=True)
            launcher.vetting |= set(workers)
        if not workers:
            return "canary: no worker connected yet; each one sings it before it takes a submission"
        with concurrent.futures.ThreadPoolExecutor(len(workers)) as pool:
            sung = dict(zip(workers, pool.map(self.sing_on, workers, workers.values())))
        with launcher.lock:
            for address, (passed, _) in sung.items():
                (launcher.admitted if passed else launcher.refused)[address] = workers[address]
            launcher.vetting -= set(workers)
        failed = [f"worker {workers[a]}: {text}" for a, (passed, text) in sung.items() if not passed]
        if len(failed) == len(workers):
            raise canary.CanaryFailed("on no worker of the cluster:\n" + "\n".join(failed))
        for line in failed:
            log.warning("left out: %s", line)
        names = sorted(workers[a] for a, (passed, _) in sung.items() if passed)
        left = sorted(workers[a] for a, (passed, _) in sung.items() if not passed)
        return (f"canary passed on {len(names)} of {len(workers)} workers ({', '.join(names)}) in "
                f"{time.perf_counter() - start:.1f} s" + (f"; left out: {', '.join(left)}" if left else ""))

    def sing_on(self, address, name):
        """(passed, its line or what moved) of the canary pinned to the worker at ``address``."""
        tag = "w" + "".join(c if c.isalnum() else "_" for c in name)[:40]
        try:
            return True, canary.sing_on(self, self.sung, Pinned(self.cluster_launcher, address), tag)
        except canary.CanaryFailed as error:
            return False, str(error)

    def vet(self, address, name):
        """For a worker that joined mid-batch: True when its canary passed (a failure is logged, naming it)."""
        passed, text = self.sing_on(address, name)
        (log.info if passed else log.warning)("worker %s joined: %s", name, text if passed else f"left out: {text}")
        return passed

    def launcher(self, slot):
        return self.cluster_launcher

    def activity(self):
        return self.cluster_launcher.activity()

    def results(self, jobs, before_writing=None):
        try:
            yield from super().results(jobs, before_writing)
        finally:
            self.close()

    def close(self):
        """Disconnect from the scheduler (the cluster stays up for the next batch)."""
        super().close()
        if self.client is not None:
            self.client.close()
            self.client = None

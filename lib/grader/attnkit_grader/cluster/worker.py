"""A Dask worker's side of cluster grading: one sandbox per request, the request data only.

``attnkit cluster worker`` starts ``dask worker`` with this module as its preload: :func:`dask_setup`
adds the :class:`SandboxPlugin`, which gets the worker ready before its first task (the sandbox packages
staged once, and for each thread a sandbox uid slot and a launcher, or a door session) and cleans up when
it stops. Each thread's launcher is the grader's own (:func:`..isolation.warm.launcher`): a warm zygote
where this process is root or may make a user namespace, else a cold sandbox per run. A worker started by
``attnkit cluster worker`` is never root, so without a door its zygotes live in user namespaces
(:mod:`..isolation.userns`), or its runs start cold where the system refuses those; through a door they
start warm, from the door session's zygote, as the hub's grading does.

The grading process sends :func:`launch` one request: the bytes of a door message
(:mod:`..isolation.door`: an installed assignment's name, numbers, the restored notebook, the probe inputs,
the release's cell types; never a path, a module or code), which the worker parses as the door does. It
runs the request in a sandbox, through the door where the worker's machine configures one
(``ATTNKIT_SANDBOX_DOOR``: the worker itself stays unprivileged), else by starting bubblewrap itself (in
a user namespace when the worker is not root), and answers with the door's reply, as bytes: the grading
process parses those as hostile, exactly as a door's reply. A timeout, a memory kill or a crash is in
that reply (a verdict), so the task succeeds and Dask never counts a submission's failure against its
worker. Nothing here imports the judges, the reference solutions or the hidden tests: they stay with the
grading process.
"""

import dataclasses
import logging
import queue
import shutil
import tempfile
from pathlib import Path

from distributed import WorkerPlugin, get_worker

from ..isolation import bwrap, door, slots, staging, warm
from ..isolation.limits import worker_uid

log = logging.getLogger(__name__)

PLUGIN = "attnkit-sandbox"
REQUEST_BUDGET = sum(door.FILE_LIMITS.values())


class SandboxPlugin(WorkerPlugin):
    """Per worker process: where sandboxes start from, one launcher per thread of the worker."""

    name = PLUGIN

    def __init__(self):
        self.work = None
        self.launchers = queue.Queue()
        self.locks = []
        self.assignments = []

    def setup(self, worker):
        threads = max(1, int(worker.state.nthreads))
        program = door.configured()
        self.assignments = door.installed_assignments()
        self.work = Path(tempfile.mkdtemp(prefix="attnkit-worker-"))          # this user's own, 0700
        if program is not None:
            for _ in range(threads):
                self.launchers.put((None, door.Door(program)))
            log.info("attnkit worker %s: sandboxes through the door %s", worker.name, program)
            return
        bwrap.check_available()
        public = self.work / "public"
        public.mkdir(mode=0o755)
        staged = staging.stage_packages(public)
        self.locks = slots.claim(threads)
        for slot, _ in self.locks:                     # a warm launcher holds one zygote: one per thread
            self.launchers.put((slot, warm.launcher(staged, door.CEILING)))
        log.info("attnkit worker %s: %d sandbox slot(s), started by the worker itself (%s)", worker.name, threads,
                 "warm" if warm.available() else "cold")

    def teardown(self, worker):
        while not self.launchers.empty():
            _, launcher = self.launchers.get_nowait()
            launcher.close()
        for _, lock in self.locks:
            lock.close()
        if self.work is not None:
            shutil.rmtree(self.work, ignore_errors=True)

    def answer(self, request):
        """The reply (bytes of a door message) to ``request`` (bytes of a door message, parsed as hostile)."""
        frames = door.decode(request, door.FILE_LIMITS, REQUEST_BUDGET)
        job, files, limits = door.parse_request(frames, self.assignments)
        slot, launcher = self.launchers.get()
        try:
            if slot is not None:
                limits = dataclasses.replace(limits, uid=worker_uid(slot))
            result = door.run_request(launcher, job, files, limits, self.work)
        finally:
            self.launchers.put((slot, launcher))
        return door.encode(door.result_frames(result))


def launch(request):
    """The task the grading process submits: (this worker's name, the reply bytes) for one request."""
    worker = get_worker()
    plugin = worker.plugins.get(PLUGIN)
    if plugin is None:
        raise RuntimeError(f"worker {worker.name} was started without the kit's preload; start workers with "
                           f"`attnkit cluster worker`")
    return str(worker.name), plugin.answer(request)


async def dask_setup(worker):
    """Dask's preload hook (``dask worker --preload attnkit_grader.cluster.worker``)."""
    await worker.plugin_add(SandboxPlugin(), name=PLUGIN, catch_errors=False)

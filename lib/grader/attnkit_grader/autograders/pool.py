"""The sandboxed grader's pool: its worker slots, their sessions and the batch's staged sandbox (:class:`Pool`).

Each worker thread of the pool holds a slot (:mod:`..isolation.slots`: the uid its sandboxes run as, which no
other grader of this machine holds) and, for warm starts or a door, a session of its own: a warm zygote
(:mod:`..isolation.warm`) or a door process (:mod:`..isolation.door`). The pool is opened by the first of the
canary (:mod:`..canary`) and the batch that needs it, and held until the batch ends, so the canary runs in the
very sandboxes, sessions and slots that grade the students.
"""

import concurrent.futures
import itertools
import os
import queue

from ..isolation import bwrap, door, slots, staging
from ..isolation import warm as warm_start


class Pool:
    """The pool's part of :class:`~.sandboxed.SandboxAutograder` (which sets ``box``, ``sessions``, ``claimed``,
    ``workers``, ``limits``, ``warm``, ``door_program``, ``local``, ``work_dir`` and ``run_one``)."""

    def start_sandbox(self):
        """Stage the packages once for this batch's sandboxes (a door stages its own)."""
        if self.box is None and self.door_program is None and self.local:
            public = self.work_dir / "public"
            public.mkdir(parents=True, exist_ok=True)
            os.chmod(public, 0o755)
            self.box = bwrap.Sandbox(staging.stage_packages(public), self.limits)
        return self.box

    def launcher(self, slot):
        """What runs worker ``slot``'s sandboxes: that worker's session with the door, its warm sandbox (a
        zygote of its own), or the batch's cold Sandbox."""
        if self.door_program is None and not self.warm:
            return self.box
        if slot not in self.sessions:
            self.sessions[slot] = door.Door(self.door_program, self.limits) if self.door_program else \
                warm_start.WarmSandbox(self.box.public_dir, self.limits)
        return self.sessions[slot]

    def open_pool(self):
        """The worker slots of this batch's pool, claimed once (``workers`` of them) with the batch's sandbox."""
        if self.claimed is None:
            self.start_sandbox()
            # a door (or a cluster's worker) chooses each sandbox's uid itself; here a slot only names a thread
            local = self.door_program is None and self.local
            self.claimed = slots.claim(self.workers) if local else [(n, None) for n in range(self.workers)]
        return [slot for slot, _ in self.claimed]

    def close(self):
        """Give the pool's slots and sessions (warm zygotes, door sessions) back."""
        for _, handle in self.claimed or ():
            if handle is not None:
                handle.close()
        self.claimed = None
        for session in self.sessions.values():
            session.close()
        self.sessions.clear()

    def in_pool(self, plans, size=None):
        """Run each plan of the iterable ``plans`` (at most ``size`` of them, where known) in the pool's sandboxes,
        each handed over as soon as it comes: yield (plan, Run, None), or (plan, None, the exception), as each
        finishes, in this thread. The pool is not opened when ``plans`` is empty."""
        plans = iter(plans)
        first = next(plans, None)
        if first is None:
            return
        free = queue.Queue()
        for slot in self.open_pool()[:min(self.workers, size or self.workers)]:
            free.put(slot)

        def work(plan):
            slot = free.get()
            try:
                return self.run_one(plan, slot)
            finally:
                free.put(slot)

        with concurrent.futures.ThreadPoolExecutor(max_workers=free.qsize(),
                                                   thread_name_prefix="attnkit-grader") as pool:
            futures = {}
            try:
                for plan in itertools.chain([first], plans):     # a plan that fails to come cancels the rest
                    futures[pool.submit(work, plan)] = plan
                for future in concurrent.futures.as_completed(futures):
                    try:
                        done = future.result()
                    except Exception as error:   # noqa: BLE001 - the caller decides what one failure means
                        yield futures[future], None, error
                        continue
                    yield futures[future], done, None
            finally:
                for future in futures:
                    future.cancel()

"""A cluster on this machine, for trying cluster grading and for the tests and the benchmark: :class:`LocalCluster`.

It is the real thing on loopback: fresh certificates (:mod:`.certs`), a scheduler and N workers, each a
process of its own started by ``attnkit cluster scheduler`` / ``attnkit cluster worker`` (one thread
each), over TLS. Started as root, every one of them runs as :data:`CLUSTER_UID`, an unprivileged uid
with no capability and no supplementary group, as the guide asks of a real cluster; for that user to
reach this interpreter where it lives in a folder closed to others (e.g. a pyenv under /root), each
process gets a mount namespace of its own (bubblewrap, no other namespace: the network is the
machine's) where such a folder is replaced by an empty one holding only the interpreter, the
environment and the kit's code, read-only. To run one by hand:
site/pages/en/guide/beyond.md#try-it-on-one-machine.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..isolation import staging
from ..isolation.bwrap import tool_path
from . import certs

CLUSTER_UID = 60900                   # below the sandboxes' uids (isolation.limits.worker_uid: 61000 and up)
START_SECONDS = 120


def kit_paths():
    """What a cluster process must read: the interpreter, its environment and the kit's packages."""
    paths = {Path(os.path.realpath(sys.base_prefix)), Path(sys.prefix).absolute(),
             Path(os.path.realpath(sys.executable)).parent}
    paths |= {staging.package_dir(name).parent for name in ("attnkit", "attnkit_grader", "attnkit_sandbox",
                                                            staging.ASSIGNMENTS)}
    return sorted(paths)


def closed_ancestor(path):
    """The highest folder above ``path`` that others may not enter, or None."""
    for folder in reversed(Path(path).parents):
        if folder != Path("/") and not os.stat(folder).st_mode & 0o001:
            return folder
    return None


def reachable(path):
    """What to bind for ``path`` to be read: itself, or, where it is a folder others may not enter (a checkout
    made with umask 027), each thing it holds, under a folder that they may."""
    if path.is_dir() and not os.stat(path).st_mode & 0o001:
        return sorted(path.iterdir())
    return [path]


def as_cluster_user(command, uid=CLUSTER_UID, paths=()):
    """``command`` run as ``uid`` (see the module's docstring), reaching the kit and ``paths`` (folders it must
    read, e.g. a checkout's tests) even below a closed folder; unchanged when this process is not root."""
    if os.geteuid() != 0:
        return command
    args = [tool_path("bwrap"), "--dev-bind", "/", "/", "--die-with-parent"]
    hidden = {}
    wanted = sorted({*kit_paths(), *(entry for path in paths for entry in reachable(Path(path).absolute()))})
    for path in [p for p in wanted if not any(q in p.parents for q in wanted)]:
        folder = closed_ancestor(path)
        if folder is not None:
            hidden.setdefault(folder, []).append(path)
    for folder, inside in sorted(hidden.items()):
        args += ["--perms", "0755", "--tmpfs", str(folder)]
        made = {folder}
        for path in inside:
            for parent in reversed(path.parents):
                if folder in parent.parents and parent not in made:
                    made.add(parent)
                    args += ["--perms", "0755", "--dir", str(parent)]
            args += ["--ro-bind", str(path), str(path)]
    args += [*[arg for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP") for arg in ("--cap-add", cap)], "--",
             tool_path("setpriv"), f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
             "--bounding-set=-all", "--"]
    return args + command


class LocalCluster:
    """A scheduler and ``workers`` worker processes on loopback, over TLS (see the module's docstring).

    ``address`` and ``certs`` are what ``attnkit grade --scheduler ADDRESS --certs DIR`` takes;
    :meth:`kill_worker` and :meth:`kill_scheduler` end a process at once (SIGKILL), as a machine lost would.
    """

    def __init__(self, workers=2, nthreads=1, folder=None, environment=None):
        self.folder = Path(tempfile.mkdtemp(prefix="attnkit-cluster-", dir=folder))
        self.folder.chmod(0o755)
        self.certs = self.folder / "certs"
        certs.make(self.certs)
        self.home = self.folder / "home"
        self.home.mkdir()
        self.scheduler_file = self.home / "scheduler.json"
        if os.geteuid() == 0:                          # the cluster's user reads its certificates, writes its home
            for path in [self.certs, *self.certs.iterdir(), self.home]:
                os.chown(path, CLUSTER_UID, CLUSTER_UID)
        self.environment = {**os.environ, "HOME": str(self.home), **(environment or {})}
        self.nthreads = nthreads
        self.scheduler = None
        self.workers = []
        self.address = None
        try:
            self.scheduler = self.start(["scheduler", "--certs", str(self.certs), "--host", "127.0.0.1", "--port", "0",
                                         "--scheduler-file", str(self.scheduler_file)], "scheduler")
            self.address = self.wait_for_address()
            for number in range(workers):
                self.add_worker(f"worker-{number}")
            self.wait_for_workers(workers)
        except BaseException:
            self.close()
            raise

    def start(self, arguments, name):
        log = open(self.folder / f"{name}.log", "ab")
        try:
            return subprocess.Popen(as_cluster_user([sys.executable, "-m", "attnkit_grader", "cluster", *arguments]),
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=self.home,
                                    env=self.environment, start_new_session=True)
        finally:
            log.close()

    def add_worker(self, name, certs_folder=None, death_timeout=None):
        """Start one more worker (``certs_folder``: other certificates than the cluster's); its process."""
        arguments = ["worker", self.address, "--certs", str(certs_folder or self.certs), "--name", name,
                     "--nthreads", str(self.nthreads), "--host", "127.0.0.1"]
        if death_timeout is not None:
            arguments += ["--death-timeout", str(death_timeout)]
        process = self.start(arguments, name)
        self.workers.append(process)
        return process

    def wait_for_address(self):
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.scheduler.poll() is not None:
                raise RuntimeError(f"the scheduler ended at once: {self.log('scheduler')}")
            try:
                return json.loads(self.scheduler_file.read_text())["address"]
            except (OSError, ValueError, KeyError):
                time.sleep(0.1)
        raise TimeoutError(f"no scheduler address after {START_SECONDS} s: {self.log('scheduler')}")

    def client(self, **options):
        """A distributed.Client of this cluster, with the client's certificate."""
        from distributed import Client

        return Client(self.address, security=certs.security(self.certs, "client"), set_as_default=False,
                      timeout=30, **options)

    def wait_for_workers(self, count):
        with self.client() as client:
            try:
                client.wait_for_workers(count, timeout=START_SECONDS)
            except TimeoutError:
                raise TimeoutError(f"{count} workers did not join within {START_SECONDS} s: "
                                   f"{self.log('worker-0')}") from None

    def log(self, name):
        path = self.folder / f"{name}.log"
        return path.read_text(errors="replace")[-2000:] if path.is_file() else "(no log)"

    @staticmethod
    def kill(process):
        if process is not None and process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()

    def kill_worker(self, number):
        self.kill(self.workers[number])

    def kill_scheduler(self):
        self.kill(self.scheduler)

    def close(self):
        for process in self.workers:
            self.kill(process)
        self.kill(self.scheduler)
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

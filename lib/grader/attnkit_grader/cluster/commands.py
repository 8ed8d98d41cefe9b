"""``attnkit cluster certs | scheduler | worker``: the cluster's certificates, and Dask's own programs started with them.

The scheduler and the workers are Dask's (``dask scheduler``, ``dask worker``), run by this interpreter
with TLS required, the role's certificate, no dashboard (Dask's dashboard is plain, unauthenticated HTTP)
and, for a worker, the kit's preload (:mod:`.worker`), one thread per sandbox it may run at once. A worker
and the scheduler refuse to start as root: an authenticated client can run any function on a worker
(and the scheduler unpickles what clients send), so neither may hold a privilege; a worker machine's
door (``ATTNKIT_SANDBOX_DOOR``, as on the course's hub) is how its worker starts sandboxes as root would.
How to run them: site/pages/en/guide/beyond.md#grading-on-a-cluster.
"""

import os
import sys

from . import certs

PRELOAD = "attnkit_grader.cluster.worker"
PORT = 8786
# TLS for every connection; Dask's HTTP server (it starts even without a dashboard: metrics, health, and on the
# scheduler JSON pages naming workers and tasks, and a proxy) serves no route, on loopback only.
ENVIRONMENT = {"DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True", "DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES": "[]",
               "DASK_DISTRIBUTED__WORKER__HTTP__ROUTES": "[]"}


def tls_options(folder, role):
    ca, cert_file, key_file = certs.check_folder(folder, role)
    return ["--protocol", "tls", "--tls-ca-file", str(ca), "--tls-cert", str(cert_file), "--tls-key", str(key_file),
            "--no-dashboard", "--dashboard-address", "127.0.0.1:0"]


def scheduler_command(folder, host="", port=PORT, scheduler_file=None):
    """The ``dask scheduler`` command line of the cluster (``host`` empty: every interface)."""
    if not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"port: expected 0 to 65535, got {port!r}")
    command = [sys.executable, "-m", "dask", "scheduler", *tls_options(folder, "scheduler"), "--port", str(port)]
    if host:
        command += ["--host", host]
    if scheduler_file:
        command += ["--scheduler-file", str(scheduler_file)]
    return command


def worker_command(folder, address=None, scheduler_file=None, nthreads=None, nworkers=1, name=None, host=None,
                   death_timeout=None):
    """The ``dask worker`` command line of one worker machine (``nthreads``: sandboxes at once, default its cores)."""
    if (address is None) == (scheduler_file is None):
        raise ValueError("address: give the scheduler's tls://HOST:PORT or --scheduler-file, one of them")
    if address is not None and not str(address).startswith("tls://"):
        raise ValueError(f"address: expected tls://HOST:PORT (the cluster speaks TLS only), got {address!r}")
    for label, value in (("nthreads", nthreads), ("nworkers", nworkers)):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise ValueError(f"{label}: expected a positive whole number, got {value!r}")
    command = [sys.executable, "-m", "dask", "worker", *([address] if address else []),
               *tls_options(folder, "worker"), "--preload", PRELOAD,
               "--nthreads", str(nthreads or os.cpu_count() or 1), "--nworkers", str(nworkers)]
    if scheduler_file:
        command += ["--scheduler-file", str(scheduler_file)]
    if name:
        command += ["--name", name]
    if host:
        command += ["--host", host]
    if death_timeout is not None:
        command += ["--death-timeout", str(death_timeout)]
    return command


def start(command):
    """Become ``command`` (this process's id, signals and exit status are the program's)."""
    os.execve(command[0], command, {**os.environ, **ENVIRONMENT})


def refuse_root(role):
    """ValueError as root: any member of the cluster can run code on a worker (and, through pickles, on the
    scheduler), so neither may hold a privilege."""
    if os.geteuid() == 0:
        raise ValueError(f"{role}: refusing to run as root: any authenticated client can run code on a Dask "
                         f"{role}; run it as an unprivileged user"
                         + (" (sandboxes start through the machine's door, ATTNKIT_SANDBOX_DOOR)" if role == "worker"
                            else ""))

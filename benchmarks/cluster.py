"""Grading on a Dask cluster against the in-process pool, at equal cores, with identical grades; a projection.

Usage: .venv/bin/python benchmarks/cluster.py [--copies N] [--rounds N] [--round-trips N]
       (or: make benchmark-cluster, two rounds)

The example class scaled as in benchmarks/grading.py (``--copies`` rounds of its honest submissions,
default 1: 28 submissions, the endless loop included once) is graded by ``attnkit grade`` (all steps timed),
each variant in its own copy of the course:

  pool        the sandboxed grader's pool of threads, one per core of this machine
  cluster 1   a cluster on loopback (attnkit_grader.cluster.local: TLS, unprivileged processes) of one
              worker process with one thread per core
  cluster 2+  the same with one worker process per core, one thread each

All of them use this machine's cores, so the ratio is the cost of the cluster's machinery (TLS, the
scheduler, requests and replies as bytes), not a gain. Both clusters are started first; ``--rounds`` runs
the three variants one after the other that many times and keeps each one's fastest round (on a machine
others share, a variant timed alone measures their load as much as its own). Then it checks that every test cell got the same
points in every variant, measures the scheduler's round trip (a task that returns a request of the class's
median size, one at a time: latency with nothing queued) and the grading process's CPU per submission with
the cluster (judging, gradebook, feedback, copies, reports: what a cluster cannot spread), and projects
10,000 submissions on N cores of workers:

  hours = 10,000 x max(core-seconds per submission / N, grading-process CPU seconds per submission) / 3600

assuming workers like this machine's cores, the class's mix of submissions (and its one endless loop per
28 submissions), a grading process on one core that is never starved, and the network's cost per
submission below the scheduler's round trip measured here on loopback. Not a test: timings depend on the
machine and on what else runs on it.
"""

import argparse
import contextlib
import logging
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from attnkit_grader import Course, grade
from attnkit_grader.cluster import launcher as cluster_launcher
from attnkit_grader.cluster.local import LocalCluster
from attnkit_grader.course import use_venv_tools
from attnkit_grader.intake import read_roster

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grading import course_copy, differences, scaled_class, test_cells  # noqa: E402 - the sibling benchmark

CLASS_SIZE = 10_000
CORES = (2, 8, 32, 128)


@contextlib.contextmanager
def requests_seen(sizes):
    """Record the size of every request the cluster launcher sends while the block runs."""
    original = cluster_launcher.door.encode

    def encode(frames):
        data = original(frames)
        if frames and frames[0][0] == cluster_launcher.door.REQUEST:
            sizes.append(len(data))
        return data

    cluster_launcher.door.encode = encode
    try:
        yield sizes
    finally:
        cluster_launcher.door.encode = original


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def time_grade(scratch, name, submissions, students_csv, assignments, **options):
    """(seconds, this process's CPU seconds, test-cell points, run) of one ``attnkit grade``."""
    root = course_copy(scratch, name)
    cpu, start = cpu_seconds(), time.perf_counter()
    run = grade(root, assignments, submissions, students_csv, **options)
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    return seconds, cpu, test_cells(Course(root), assignments, run.table.students), run


def echo(request):
    return "echo", request


def round_trip(cluster, size, count):
    """Median seconds of a task carrying ``size`` bytes there and back, one at a time."""
    payload = os.urandom(size)
    times = []
    with cluster.client() as client:
        for _ in range(count):
            start = time.perf_counter()
            client.submit(echo, payload, key=cluster_launcher.task_key(), pure=False).result()
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def hours(count, core_seconds, parent_seconds, cores):
    return count * max(core_seconds / cores, parent_seconds) / 3600


def main(argv=None):
    options = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    options.add_argument("--copies", type=int, default=1, help="rounds of honest copies (default: 1)")
    options.add_argument("--rounds", type=int, default=1, help="rounds of the three variants (default 1)")
    options.add_argument("--round-trips", type=int, default=50, help="tasks timed for the round trip (default 50)")
    args = options.parse_args(argv)
    logging.getLogger("attnkit").setLevel(logging.ERROR)
    logging.getLogger("distributed").setLevel(logging.ERROR)
    use_venv_tools()
    cores = os.cpu_count() or 1
    assignments = Course(Path(__file__).resolve().parents[1]).assignments()
    shapes = [("pool", None, None), ("cluster 1", 1, cores), ("cluster 2", cores, 1)]
    best, parents, cells, sizes = {}, {}, {}, []
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as scratch, contextlib.ExitStack() as stack:
        submissions, students_csv = scaled_class(Path(scratch) / "class", args.copies)
        students = sorted(read_roster(students_csv))
        count = sum((submissions / s / a).is_dir() for s in students for a in assignments)
        clusters = {name: stack.enter_context(LocalCluster(workers=processes, nthreads=threads))
                    for name, processes, threads in shapes[1:]}
        stack.enter_context(requests_seen(sizes))
        for round_ in range(args.rounds):
            for name, _, _ in shapes:
                where = {} if name == "pool" else {"scheduler": clusters[name].address, "certs": clusters[name].certs}
                seconds, parent, cells[name], _ = time_grade(scratch, f"{name.replace(' ', '')}-{round_}", submissions,
                                                             students_csv, assignments, workers=cores if name == "pool"
                                                             else None, **where)
                best[name] = min(best.get(name, seconds), seconds)
                parents[name] = min(parents.get(name, parent), parent)
        trip = round_trip(clusters["cluster 1"], int(statistics.median(sizes)), args.round_trips)
    labels = {"pool": f"pool of {cores} threads (in-process)",
              "cluster 1": f"cluster of 1 worker x {cores} threads (TLS, loopback)",
              "cluster 2": f"cluster of {cores} workers x 1 thread (TLS, loopback)"}
    rows = [(labels[name], best[name], parents[name]) for name, _, _ in shapes]
    pool = rows[0][1]
    print(f"example class scaled to {count} submissions ({len(students)} students, {len(assignments)} assignments); "
          f"machine: {cores} CPU cores, every variant on all of them; fastest of {args.rounds} round(s)")
    print(f"{'variant':52s} {'total s':>8s} {'s/submission':>13s} {'vs pool':>8s}")
    for name, seconds, _ in rows:
        print(f"{name:52s} {seconds:8.1f} {seconds / count:13.2f} {seconds / pool:8.2f}")
    parent = max(cpu for _, _, cpu in rows[1:]) / count
    core_seconds = pool * cores / count
    print(f"grading process CPU per submission with the pool (its sandboxes not counted): {rows[0][2] / count:.2f} s")
    print(f"requests: median {statistics.median(sizes) / 2**20:.2f} MiB, largest {max(sizes) / 2**20:.2f} MiB; "
          f"scheduler round trip with a median request, nothing queued: {trip * 1000:.0f} ms")
    print(f"grading process CPU per submission with the cluster (judge, gradebook, pages, copies, reports): "
          f"{parent:.2f} s; core-seconds per submission with the pool: {core_seconds:.2f} s")
    print(f"projection for {CLASS_SIZE:,} submissions (formula and assumptions: this file's docstring):")
    for total in CORES:
        bound = "grading process" if parent > core_seconds / total else "workers"
        print(f"  {total:4d} worker cores: {hours(CLASS_SIZE, core_seconds, parent, total):6.2f} h ({bound} bound)")
    wrong = [line for name in cells if name != "pool" for line in differences(cells["pool"], cells[name],
                                                                              ("pool", name))]
    if wrong:
        print(f"grades DIFFER on {len(wrong)} test cells:\n" + "\n".join(wrong))
        return 1
    print(f"identical grades: all {len(cells['pool'])} test cells of the {count} submissions in every variant")
    return 0


if __name__ == "__main__":
    sys.exit(main())

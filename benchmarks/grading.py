"""Seconds per submission: plain sequential `nbgrader autograde` against the kit's sandboxed grader.

Usage: .venv/bin/python benchmarks/grading.py [--copies N] [--workers N] [--one-worker] [--cold] [--profile]
                                              [--unprivileged] [--assignment NAME]
       (or: make benchmark-grading, which grades 100 or more submissions)

The example class (examples/example_class) is scaled up by handing in its honest submissions again
under new student ids (``--copies`` rounds, default 1: 32 submissions, 6: 102; the endless loop and the other
broken or hostile submissions stay in once, as in a real class), then graded in one run of this script,
each variant in its own temporary copy of the course (nbgrader_config.py, source/, release/). The class is
problem sets 1 and 2 (:data:`CLASS`), whatever assignments the course gains, so figures stay comparable;
``--assignment`` grades others.

  nbgrader   plain `nbgrader autograde ASSIGNMENT --force`, one command per assignment, after the
             instructor's usual setup (generate_assignment, db student import, copies in submitted/),
             which is not timed: only the autograde commands are
  kit        `attnkit grade` (attnkit_grader.grade) with the default pool: release sync, pre-check,
             sandboxed runs, judging, gradebook, feedback pages and reports, all timed
  kit, 1 worker   the same with --workers 1 (only with --one-worker)
  kit, cold starts  the pool with a fresh interpreter per sandbox, as before the warm start (only with --cold)
  kit, unprivileged  the pool run by an unprivileged uid, as an instructor grading as themself (only with
             --unprivileged, as root: the grading process runs as :data:`UNPRIVILEGED_UID`)

Then it checks that every test cell of every submission got the same points from nbgrader and from the
kit (and from one worker and the pool), and prints the figures. Not a test: timings depend on the
machine and on what else runs on it.

The floor: what any grader must spend, the CPU seconds of the submissions' own cells and probes (the runner's
accounting of each step; the endless loop counts its 30 s) over the machine's cores. The kit's wall time over the
floor says how much the kit adds; the canary's runs are left out of the floor and its cost is printed apart.
The goals (issue 43): at least 5x plain nbgrader as root, 4x unprivileged, within 1.2x of the floor, and the grading
process alone (between the canary and the first sandbox, after the last one) under 2 s together (--profile).

--profile adds, for the kit with the pool, where the time went: seconds before the first sandbox and
after the last one (the parent alone), the CPU seconds of the sandboxes (their cgroups' accounting:
start-up included) and of the grading process, how busy that kept the cores, the runs that used the most
CPU, and the overhead: per honest submission whose cells all ended in time, the grader's CPU for it (its
sandboxes, plus an equal share of the grading process's) over the CPU of its cells and probes themselves
(the runner's per-step accounting: the floor any grader pays).
"""

import argparse
import contextlib
import csv
import json
import logging
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from attnkit_grader import Course, canary, grade
from attnkit_grader.cluster.local import as_cluster_user
from attnkit_grader.isolation import notebook_run as sandbox
from attnkit_grader.course import use_venv_tools
from attnkit_grader.intake import read_roster
from attnkit_grader.pipeline import EXAMPLE_CLASS
from attnkit_grader.reports import read_scores

ROOT = Path(__file__).resolve().parents[1]
NBGRADER = [sys.executable, "-m", "nbgrader"]
# Submissions of the example class that are plain attempts (no cheat, no broken file, no endless loop).
CLASS = ["ps1_learnable_pe", "ps2_relative_pe"]          # the class every earlier figure was measured on
GOALS = {"root": 5.0, "unprivileged": 4.0, "floor": 1.2, "serial": 2.0}
UNPRIVILEGED_UID = 60901                                  # beside local.CLUSTER_UID, below the sandboxes' uids
HONEST = ["blank", "bug_frozen_table", "bug_no_clip", "bug_no_value_term", "bug_num_hiddens_scale", "bug_sign_flip",
          "bug_skew_reversed", "deleted_test_cell", "import_error", "partial", "ref_solution"]


def scaled_class(folder, copies):
    """The example class plus ``copies`` rounds of its honest submissions under new ids; (folder, csv)."""
    example = ROOT / EXAMPLE_CLASS
    shutil.copytree(example, folder, ignore=shutil.ignore_patterns("expected_scores.json", "students.csv"))
    roster = read_roster(example / "students.csv")
    rows = [{"id": s, **{k: v or "" for k, v in details.items()}} for s, details in roster.items()]
    for round_ in range(1, copies + 1):
        for student in HONEST:
            copy = f"{student}_{round_ + 1}"
            shutil.copytree(example / student, folder / copy)
            rows.append({"id": copy, "first_name": "Copy", "last_name": student, "email": ""})
    students_csv = folder.parent / "students.csv"
    with open(students_csv, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["id", "first_name", "last_name", "email"])
        writer.writeheader()
        writer.writerows(rows)
    return folder, students_csv


def course_copy(scratch, name):
    root = Path(scratch) / name
    root.mkdir()
    shutil.copy2(ROOT / "nbgrader_config.py", root)
    for folder in ("source", "release"):
        shutil.copytree(ROOT / folder, root / folder)
    return root


def nbgrader(root, *args):
    """Run one nbgrader command in the course ``root``; failures are expected for broken submissions."""
    return subprocess.run(NBGRADER + list(args), cwd=root, capture_output=True, text=True).returncode


def test_cells(course, assignments, students):
    """{(student, assignment, grade_id): points} of the autograded test cells, from the gradebook."""
    table = read_scores(course, assignments, students)
    tests = {a: {grade_id for grade_id, _ in table.cells[a] if grade_id.startswith("test")} for a in assignments}
    return {(s, a, g): p for (s, a), cells in table.points.items() for g, p in cells.items() if g in tests[a]}


def time_nbgrader(scratch, submissions, students_csv, assignments, handed_in):
    root = course_copy(scratch, "nbgrader")
    for assignment in assignments:
        nbgrader(root, "generate_assignment", assignment, "--force")
    nbgrader(root, "db", "student", "import", str(students_csv))
    for student, assignment in handed_in:
        shutil.copytree(submissions / student / assignment, root / "submitted" / student / assignment)
    start = time.perf_counter()
    for assignment in assignments:
        nbgrader(root, "autograde", assignment, "--force")
    seconds = time.perf_counter() - start
    course = Course(root)
    return seconds, test_cells(course, assignments, sorted(read_roster(students_csv)))


def time_kit(scratch, name, submissions, students_csv, assignments, workers=None, profile=None, warm=None):
    return time_kit_at(course_copy(scratch, name), submissions, students_csv, assignments, workers, profile, warm)


def time_kit_at(root, submissions, students_csv, assignments, workers=None, profile=None, warm=None):
    with profile.watching() if profile else contextlib.nullcontext():
        start = time.perf_counter()
        run = grade(root, assignments, submissions, students_csv, workers=workers, warm=warm)
        seconds = time.perf_counter() - start
    return seconds, test_cells(Course(root), assignments, run.table.students), run


class Profile:
    """What the kit's sandboxed runs and its own process used while :func:`time_kit` ran (see --profile)."""

    def __init__(self):
        self.runs, self.canary, self.parent = [], [], 0.0

    def floor(self, cores):
        """The submissions' cells-and-probes CPU over ``cores``: seconds no grader can go below (canary apart)."""
        return sum(run[4] for run in self.runs) / cores

    def canary_seconds(self):
        return max(r[1] for r in self.canary) - min(r[0] for r in self.canary) if self.canary else 0.0

    @contextlib.contextmanager
    def watching(self):
        original = sandbox.run_notebook

        def run_notebook(box, notebook, scratch_dir, *args, **options):
            start = time.perf_counter()
            done = original(box, notebook, scratch_dir, *args, **options)
            cpu = done.result.cpu_seconds
            if cpu is None:                             # no cgroup: the runner's own process only
                cpu = done.report.get("cpu") if isinstance(done.report.get("cpu"), (int, float)) else 0.0
            steps = [*done.report.get("cells", []), *done.report.get("probes", {}).values()]
            floor = sum(step.get("cpu", 0.0) for step in steps if isinstance(step, dict))
            timed_out = any(isinstance(step, dict) and step.get("status") == "timeout" for step in steps) \
                or done.result.timed_out
            run = (start, time.perf_counter(), cpu, f"{Path(scratch_dir).name} / {options.get('assignment')}",
                   floor, timed_out)
            (self.canary if Path(scratch_dir).name.startswith(canary.STUDENT) else self.runs).append(run)
            return done

        before = resource.getrusage(resource.RUSAGE_SELF)
        sandbox.run_notebook = run_notebook
        self.start = time.perf_counter()
        try:
            yield self
        finally:
            self.end = time.perf_counter()
            sandbox.run_notebook = original
            after = resource.getrusage(resource.RUSAGE_SELF)
            self.parent = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime

    def lines(self, cores, submissions):
        if not self.runs:
            return ["profile: no sandboxed run"]
        wall = self.end - self.start
        first, last = min(r[0] for r in self.runs), max(r[1] for r in self.runs)
        sung = max((r[1] for r in self.canary), default=self.start)        # the canary's end, else the run's start
        cpu = sum(r[2] for r in self.runs)
        top = sorted(self.runs, key=lambda r: -r[2])[:5]
        share = self.parent / submissions                # the grading process's CPU, shared out evenly
        honest = {}
        for _, _, used, name, floor, timed_out in self.runs:
            entry = honest.setdefault(name, [0.0, 0.0, False])
            entry[0], entry[1], entry[2] = entry[0] + used, entry[1] + floor, entry[2] or timed_out
        ratios = sorted((used + share) / floor for used, floor, timed_out in honest.values() if floor > 0 and not timed_out)
        kept = [(used, floor) for used, floor, timed_out in honest.values() if floor > 0 and not timed_out]
        return [f"profile of the kit with the pool ({wall:.1f} s):",
                f"  the canary: {self.canary_seconds():.1f} s ({len(self.canary)} runs), from the start of the run",
                f"  the parent alone: {first - sung:.2f} s between the canary and the first sandbox (collecting "
                f"into submitted/, planning), {self.end - last:.2f} s after the last (the reports): "
                f"{first - sung + self.end - last:.2f} s together, goal under {GOALS['serial']:g} s: "
                f"{'met' if first - sung + self.end - last < GOALS['serial'] else 'NOT met'}; "
                f"{min(r[0] for r in self.canary) - self.start if self.canary else 0.0:.2f} s before the canary's first "
                f"sandbox (the pool's start; the pre-check runs beside the canary)",
                f"  {len(self.runs)} sandboxed runs: {sum(r[1] - r[0] for r in self.runs):.1f} s in all, sandbox CPU "
                f"{cpu:.1f} s ({cpu / len(self.runs):.2f} s a run, start-up included)",
                f"  grading process CPU (all its threads: judging, gradebook, feedback, reports): {self.parent:.1f} s "
                f"({share:.2f} s a submission)",
                f"  cores kept busy by these two: {(cpu + self.parent) / (cores * wall):.0%} of {cores} x {wall:.1f} s",
                "  most CPU: " + ", ".join(f"{name} {used:.1f} s" for _, _, used, name, _, _ in top),
                f"  overhead, {len(kept)} honest submissions that ran in time (grader CPU / CPU of their cells and "
                f"probes): {sum(u + share for u, _ in kept) / sum(f for _, f in kept):.2f} over all, "
                f"median {ratios[len(ratios) // 2]:.2f}, worst {ratios[-1]:.2f}" if ratios else "  overhead: no run"]


def differences(first, second, names):
    wrong = [f"  {s} / {a} / {g}: {names[0]} {first.get((s, a, g))}, {names[1]} {second.get((s, a, g))}"
             for (s, a, g) in sorted(set(first) | set(second)) if first.get((s, a, g)) != second.get((s, a, g))]
    return wrong


def kit_only(args):
    """--kit-only: grade a prepared course as this process's user and print the figures as one JSON line."""
    root, submissions, students_csv = map(Path, args.kit_only)
    profile = Profile()
    seconds, cells, run = time_kit_at(root, submissions, students_csv, args.assignment, args.workers, profile)
    print(json.dumps({"seconds": seconds, "cells": [[*key, points] for key, points in cells.items()],
                      "warm": any(r.run.get("warm") for r in run.submissions.values()), "uid": os.geteuid(),
                      "floor_cpu": profile.floor(1), "canary": profile.canary_seconds()}))
    return 0


def time_unprivileged(scratch, submissions, students_csv, assignments, workers):
    """The pool graded by :data:`UNPRIVILEGED_UID` (a process of its own, this script's --kit-only): (seconds,
    cells, warm, floor CPU, canary seconds)."""
    root = course_copy(scratch, "kit-unprivileged")
    home = Path(scratch) / "home"
    home.mkdir()
    for folder in (root, home):
        for path in [folder, *folder.rglob("*")]:
            os.chown(path, UNPRIVILEGED_UID, UNPRIVILEGED_UID, follow_symlinks=False)
    script = Path(scratch) / "grading.py"               # where that uid can read it, whatever folder holds the kit
    shutil.copy2(__file__, script)
    command = [sys.executable, str(script), "--kit-only", str(root), str(submissions), str(students_csv),
               *[f"--assignment={a}" for a in assignments], *([f"--workers={workers}"] if workers else [])]
    done = subprocess.run(as_cluster_user(command, UNPRIVILEGED_UID), capture_output=True, text=True,
                          env={**os.environ, "HOME": str(home)}, cwd=scratch)
    if done.returncode != 0:
        raise SystemExit(f"the unprivileged run failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    if found["uid"] != UNPRIVILEGED_UID:
        raise SystemExit(f"the unprivileged run ran as uid {found['uid']}, not {UNPRIVILEGED_UID}")
    cells = {tuple(row[:3]): row[3] for row in found["cells"]}
    return found["seconds"], cells, found["warm"], found["floor_cpu"], found["canary"]


def goal_line(name, value, goal, at_most=False):
    met = value <= goal if at_most else value >= goal
    return f"  {name}: {value:.2f}x, goal {'at most' if at_most else 'at least'} {goal:g}x: {'met' if met else 'NOT met'}"


def main(argv=None):
    options = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    options.add_argument("--copies", type=int, default=1, help="rounds of honest copies (default: 1)")
    options.add_argument("--workers", type=int, default=None, help="the kit's pool (default: CPU cores)")
    options.add_argument("--one-worker", action="store_true", help="also time the kit with one worker")
    options.add_argument("--cold", action="store_true", help="also time the pool with cold starts (no zygote)")
    options.add_argument("--unprivileged", action="store_true",
                         help=f"also time the pool graded by an unprivileged uid ({UNPRIVILEGED_UID}; needs root)")
    options.add_argument("--profile", action="store_true", help="say where the kit's time went (with the pool)")
    options.add_argument("--assignment", action="append", metavar="NAME",
                         help=f"grade only this assignment (repeatable; default: {' and '.join(CLASS)})")
    options.add_argument("--kit-only", nargs=3, metavar=("COURSE", "SUBMISSIONS", "CSV"), help=argparse.SUPPRESS)
    args = options.parse_args(argv)
    logging.getLogger("attnkit").setLevel(logging.ERROR)
    use_venv_tools()
    if args.kit_only:
        return kit_only(args)
    if args.unprivileged and os.geteuid() != 0:
        options.error("--unprivileged: run as root (the benchmark hands the grading to an unprivileged uid)")
    known = Course(ROOT).assignments()
    unknown = sorted(set(args.assignment or ()) - set(known))
    if unknown:
        options.error(f"--assignment: no assignment {', '.join(unknown)} (there are {', '.join(known)})")
    assignments = [a for a in known if a in (args.assignment or CLASS)]
    cores = os.cpu_count()
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as scratch:
        os.chmod(scratch, 0o755)                            # the unprivileged uid reads the class from here
        submissions, students_csv = scaled_class(Path(scratch) / "class", args.copies)
        students = sorted(read_roster(students_csv))
        handed_in = [(s, a) for s in students for a in assignments if (submissions / s / a).is_dir()]
        count = len(handed_in)
        plain, plain_cells = time_nbgrader(scratch, submissions, students_csv, assignments, handed_in)
        profile = Profile()
        kit, kit_cells, run = time_kit(scratch, "kit", submissions, students_csv, assignments, args.workers, profile)
        starts = "warm starts" if any(r.run.get("warm") for r in run.submissions.values()) else "cold starts"
        rows = [("plain nbgrader autograde --force (sequential)", plain),
                (f"kit: attnkit grade, pool of {run_workers(args.workers)}, {starts} (all steps)", kit)]
        checks = [differences(plain_cells, kit_cells, ("nbgrader", "kit"))]
        if args.one_worker:
            one, one_cells, _ = time_kit(scratch, "kit1", submissions, students_csv, assignments, 1)
            rows.append(("kit: attnkit grade, sandboxed, 1 worker (all steps)", one))
            checks.append(differences(one_cells, kit_cells, ("1 worker", "pool")))
        if args.cold:
            cold, cold_cells, _ = time_kit(scratch, "kitcold", submissions, students_csv, assignments, args.workers,
                                           warm=False)
            rows.append(("kit: the pool, cold starts (no zygote)", cold))
            checks.append(differences(cold_cells, kit_cells, ("cold", "warm")))
        if args.unprivileged:
            mine, mine_cells, mine_warm, mine_floor, mine_canary = time_unprivileged(
                scratch, submissions, students_csv, assignments, args.workers)
            rows.append((f"kit: the pool as uid {UNPRIVILEGED_UID}, {'warm' if mine_warm else 'cold'} starts", mine))
            checks.append(differences(mine_cells, kit_cells, ("unprivileged", "root")))
    print(f"example class scaled to {count} submissions handed in ({len(students)} students, "
          f"{' + '.join(assignments)}); machine: {cores} CPU cores")
    print(f"{'variant':58s} {'total s':>8s} {'s/submission':>13s}")
    for name, seconds in rows:
        print(f"{name:58s} {seconds:8.1f} {seconds / count:13.2f}")
    floor = profile.floor(cores)
    print(f"the floor: the submissions' cells and probes, {floor * cores:.1f} CPU s over {cores} cores = {floor:.1f} s "
          f"({floor / count:.2f} s a submission); the canary apart: {profile.canary_seconds():.1f} s of the pool's run")
    print(f"speed-up of the kit over plain nbgrader: {plain / kit:.2f}x")
    if args.one_worker:
        print(f"speed-up of the pool over one worker: {rows[2][1] / kit:.2f}x")
    if args.cold:
        print(f"speed-up of warm starts over cold ones (the pool): {rows[3 if args.one_worker else 2][1] / kit:.2f}x")
    print("goals:")
    print(goal_line("plain nbgrader / the kit as root", plain / kit, GOALS["root"]))
    if args.unprivileged:
        print(goal_line(f"plain nbgrader / the kit as uid {UNPRIVILEGED_UID}", plain / mine, GOALS["unprivileged"]))
    print(goal_line("the kit as root / the floor", kit / floor, GOALS["floor"], at_most=True) if floor else
          "  the floor: no cell or probe ran")
    if args.unprivileged and mine_floor:
        print(goal_line(f"the kit as uid {UNPRIVILEGED_UID} / its floor", mine / (mine_floor / cores), GOALS["floor"],
                        at_most=True))
    if args.profile:
        print("\n".join(profile.lines(cores, count)))
    wrong = [line for found in checks for line in found]
    cells = len(kit_cells)
    if wrong:
        print(f"grades DIFFER on {len(wrong)} of {cells} test cells:")
        print("\n".join(wrong))
        return 1
    variants = ["nbgrader", "the kit's pool"] + (["1 worker"] if args.one_worker else []) + \
        (["cold starts"] if args.cold else []) + (["unprivileged"] if args.unprivileged else [])
    print(f"identical grades: all {cells} test cells of the {count} submissions ({', '.join(variants)})")
    return 0


def run_workers(workers):
    return workers or os.cpu_count()


if __name__ == "__main__":
    sys.exit(main())

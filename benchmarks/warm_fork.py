"""What a fork server would save: CPU of one notebook run from a fresh interpreter vs from a warm fork.

Usage: .venv/bin/python benchmarks/warm_fork.py

Decision support for the grader's 3x stretch (issue 5), not a grader: every sandboxed run starts Python
and imports torch before the notebook's first cell. This script runs the sandbox's runner on example-class
notebooks twice each, WITHOUT any sandbox, with the same probe inputs:

  fresh   `python -m attnkit_sandbox.runner SCRATCH --assignment A`, a new interpreter, as each sandbox
          does today
  forked  runner.main() in a child forked from this process, which imported torch, numpy, attnkit and
          the runner beforehand (what a warm worker would do once)

and prints the CPU seconds of each (user + system, from the kernel's accounting of the child) and whether
both runs gave every cell and probe the same status. Not a test: figures depend on the machine.
"""

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy  # noqa: F401 - imported once here, as a warm worker would
import torch  # noqa: F401

import attnkit.checking  # noqa: F401
from attnkit_grader import registry
from attnkit_sandbox import cells, channel, command, probe_sets, probing, runner  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
CLASS = ROOT / "examples" / "example_class"
STUDENTS = ("ref_solution", "partial", "bug_no_value_term", "bug_frozen_table", "blank")
ASSIGNMENTS = registry.assignments()
for _name in ASSIGNMENTS:                       # every assignment's probes, imported once as a warm worker would
    probe_sets.probes_of(_name)


def prepared(student, assignment, root):
    """A scratch folder like the sandbox's: notebook.ipynb and the probe inputs."""
    folder = root / f"{student}-{assignment}"
    folder.mkdir(parents=True)
    shutil.copy(CLASS / student / assignment / f"{assignment}.ipynb", folder / cells.NOTEBOOK)
    channel.write_inputs(folder, registry.make_inputs(assignment, 7))
    return folder


def fresh(folder, assignment):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command.argv(folder, assignment=assignment, python=sys.executable),
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def forked(folder, assignment):
    pid = os.fork()
    if pid == 0:                                              # the child: run the notebook, never return
        status = 1
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            runner.main([str(folder), "--assignment", assignment])
            status = 0
        finally:
            os._exit(status)
    _, _, usage = os.wait4(pid, 0)
    return usage.ru_utime + usage.ru_stime


def statuses(folder):
    report = json.loads((folder / "out" / "report.json").read_text())
    return ([cell.get("status") for cell in report["cells"]],
            {name: probe.get("status") for name, probe in report["probes"].items()})


def main():
    os.environ.setdefault("MPLBACKEND", "Agg")
    rows = []
    with tempfile.TemporaryDirectory(prefix="warm-fork-") as tmp:
        for student in STUDENTS:
            for assignment in ASSIGNMENTS:
                if not (CLASS / student / assignment).is_dir():
                    continue
                folder = prepared(student, assignment, Path(tmp))
                cold = fresh(folder, assignment)
                first = statuses(folder)
                shutil.rmtree(folder / "out")
                warm = forked(folder, assignment)
                same = statuses(folder) == first
                rows.append((cold, warm))
                print(f"{student:18s} {assignment:17s} fresh {cold:5.2f} s CPU   forked {warm:5.2f} s CPU   "
                      f"same statuses: {same}", flush=True)
    cold, warm = sum(r[0] for r in rows), sum(r[1] for r in rows)
    print(f"{len(rows)} runs: fresh {cold:.1f} s CPU, forked from a warm process {warm:.1f} s CPU; "
          f"{(cold - warm) / len(rows):.2f} s saved a run ({warm / cold:.0%} of the CPU left)")


if __name__ == "__main__":
    main()

"""Start-up cost of one submission: the kit's sandboxed runner against a Jupyter kernel, both importing torch.

Usage: .venv/bin/python benchmarks/sandbox_startup.py [REPEATS]      (default 5)

Each variant runs a one-cell notebook, ``import torch``, from nothing to a finished run:

  python     ``python -c "import torch"``: the floor (interpreter start + torch import)
  sandbox    attnkit_grader.isolation.notebook_run.run_notebook: bwrap + interpreter + runner + torch, report written
  jupyter    nbclient: start an ipykernel, execute the cell, shut the kernel down (what nbgrader does per
             notebook, before any of its own pre- and post-processing)

The variants alternate within each round, so a machine busy with other work slows them alike.
Prints the median seconds of each and the ratio jupyter / sandbox. Not a test: timings depend on the machine.
Needs bubblewrap (apt-get install -y bubblewrap).
"""

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from attnkit_grader.isolation import bwrap as sandbox
from attnkit_grader.isolation import notebook_run, staging

CELL = "import torch"


def one_cell_notebook(folder):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL)])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    path = Path(folder) / "one_cell.ipynb"
    nbformat.write(notebook, path)
    return path


def time_python():
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", CELL], check=True)
    return time.perf_counter() - start


def time_sandbox(box, notebook, scratch):
    start = time.perf_counter()
    run = notebook_run.run_notebook(box, notebook, scratch)
    seconds = time.perf_counter() - start
    if run.reason or [c["status"] for c in run.report["cells"]] != ["ok"]:
        raise RuntimeError(f"sandboxed run failed: {run.reason} {json.dumps(run.report)[:300]}")
    return seconds


def time_jupyter(notebook):
    start = time.perf_counter()
    client = NotebookClient(nbformat.read(notebook, as_version=4), kernel_name="python3", timeout=120,
                            extra_arguments=["--IPKernelApp.log_level=ERROR"])   # as the grading pipeline does
    client.execute()
    return time.perf_counter() - start


def main(repeats=5):
    sandbox.check_available()
    with tempfile.TemporaryDirectory(prefix="attnkit-startup-") as folder:
        folder = Path(folder)
        box = sandbox.Sandbox(staging.stage_packages(folder / "public"))
        notebook = one_cell_notebook(folder)
        times = {"python": [], "sandbox": [], "jupyter": []}
        for round_ in range(repeats + 1):        # round 0 warms the page cache and is not counted
            measured = {"python": time_python(), "sandbox": time_sandbox(box, notebook, folder / f"s{round_}"),
                        "jupyter": time_jupyter(notebook)}
            if round_:
                for name, seconds in measured.items():
                    times[name].append(seconds)
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        print(f"{name:8s} median {medians[name]:.2f} s   runs: {' '.join(f'{v:.2f}' for v in values)}")
    print(f"jupyter / sandbox: {medians['jupyter'] / medians['sandbox']:.2f}x   "
          f"sandbox overhead over plain python: {medians['sandbox'] - medians['python']:+.2f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)

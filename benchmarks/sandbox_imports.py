"""CPU seconds a sandbox pays before the first cell: a fresh interpreter importing what the runner imports.

Usage: .venv/bin/python benchmarks/sandbox_imports.py [REPEATS] [--before OLD_CHECKOUT]

Imports the runner, the probes of every assignment and (through them) attnkit and torch, in a fresh
interpreter per repeat, and prints the median CPU (user + system) of those processes. With --before, a
checkout of the kit from before the trust-level split (c6d1e07 or older, whose sandbox imported
attnkit.grading.runner and attnkit.grading.probes) is measured in the same rounds, alternating, through
PYTHONPATH=OLD_CHECKOUT/lib. Not a test: timings depend on the machine.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

import attnkit_assignments

NOW = "import attnkit_sandbox.runner, " + ", ".join(
    f"attnkit_assignments.{p.name}.probes" for p in sorted(Path(next(iter(attnkit_assignments.__path__))).iterdir())
    if (p / "probes").is_dir())
BEFORE = "import attnkit.grading.runner, attnkit.grading.probes"


def cpu_of(code, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("repeats", nargs="?", type=int, default=7)
    parser.add_argument("--before", type=Path, help="a checkout of the kit from before the split")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    variants = {"this checkout": (NOW, env)}
    if args.before:
        variants[f"before ({args.before})"] = (BEFORE, {**env, "PYTHONPATH": str(args.before.resolve() / "lib")})
    seconds = {name: [] for name in variants}
    for _ in range(args.repeats):
        for name, (code, variant_env) in variants.items():
            seconds[name].append(cpu_of(code, variant_env))
    for name, values in seconds.items():
        print(f"{name:40s} median {statistics.median(values):.3f} s CPU  "
              f"(min {min(values):.3f}, max {max(values):.3f}, {args.repeats} runs)")


if __name__ == "__main__":
    main()

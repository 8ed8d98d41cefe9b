"""Mutation testing of the hidden checks: does grading notice every single change to the reference?

mutmut (PyPI, its default operators) lists the single-change mutants of each assignment's reference.py;
each mutant is run here as a variant of the reference (:mod:`.judging.variants`) and graded in this
process with the probes and the trusted judge on fresh inputs, with no diagnosis and no copy detection.
A mutant is *killed* when it loses points. A survivor counts as *equivalent* only with an automatic
proof: the assignment's ``behaviour`` (its manifest's: outputs, gradients and parameters in float64, in
train and eval mode, on random inputs, and the type of every exception on bad input) is identical to the
reference's. Every other survivor is listed, with the line it changed; the committed table of survivors
(the manifest's ``survivors``) gives each a reason.

    python -m attnkit_grader.mutation [--sample N] [--seed S] [ASSIGNMENT ...]

prints the kill rate per assignment and per object (the function or class of reference.py the mutant
is in), and the survivors that are not in the table.
"""

import argparse
import ast
import contextlib
import difflib
import io
import sys
import types
from dataclasses import dataclass

import numpy as np

from . import catalogue
from . import registry
from .judging import variants

__all__ = ["Mutant", "Result", "equivalent", "mutants", "run"]


@dataclass(frozen=True)
class Mutant:
    """One single-change mutant of an assignment's reference.py."""

    assignment: str
    number: int
    line: int                 # the first line it changes (1-based)
    obj: str                  # the top-level function or class holding that line
    change: str               # the changed line, before -> after
    code: str


def _objects(code):
    """[(first line, last line, name)] of the top-level functions and classes of ``code``."""
    return [(node.lineno, node.end_lineno, node.name) for node in ast.parse(code).body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))]


def mutants(assignment):
    """Every mutant mutmut's default operators make of the assignment's reference.py, in source order."""
    from mutmut.mutation.file_mutation import create_mutations          # an instructor's tool: imported here

    path = registry.get(assignment).reference_path
    code = path.read_text(encoding="utf-8")
    module, mutations, _, _ = create_mutations(str(path), code)
    original = module.code.splitlines()
    spans = _objects(code)
    found, seen = [], set()
    for number, mutation in enumerate(mutations):
        mutated = module.deep_replace(mutation.original_node, mutation.mutated_node).code
        if mutated in seen:              # two operators can make the same change: count it once
            continue
        seen.add(mutated)
        changed = mutated.splitlines()
        diff = difflib.SequenceMatcher(a=original, b=changed, autojunk=False)
        tag = next((op for op in diff.get_opcodes() if op[0] != "equal"), None)
        if tag is None:
            continue
        line = tag[1] + 1
        before = " ".join(original[tag[1]:tag[2]]).strip()
        after = " ".join(changed[tag[3]:tag[4]]).strip()
        obj = next((name for first, last, name in spans if first <= line <= last), "(module)")
        found.append(Mutant(assignment, number, line, obj, f"{before} -> {after}", mutated))
    return found


def _namespace(mutant):
    module = types.ModuleType(f"attnkit_mutant_{mutant.assignment}_{mutant.number}")
    exec(compile(mutant.code, f"<mutant {mutant.number}>", "exec"), module.__dict__)   # noqa: S102 - ours
    return dict(vars(module))


def _behaviour(assignment, namespace, seed):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return registry.get(assignment).behaviour(namespace, seed)


def equivalent(assignment, namespace, seeds=(0, 1, 2)):
    """True if ``namespace`` behaves exactly as the reference (see the module's docstring)."""
    reference = variants.variant(registry.get(assignment), None)
    for seed in seeds:
        theirs = _behaviour(assignment, reference, seed)
        try:
            mine = _behaviour(assignment, namespace, seed)
        except Exception:      # noqa: BLE001 - it fails where the reference does not: no proof
            return False
        if mine.keys() != theirs.keys():
            return False
        for key, value in theirs.items():
            other = mine[key]
            if isinstance(value, str) or isinstance(other, str):
                if value != other:
                    return False
            elif value.shape != other.shape or value.dtype != other.dtype or \
                    not np.array_equal(value, other, equal_nan=True):
                return False
    return True


@dataclass(frozen=True)
class Result:
    mutant: Mutant
    status: str               # "killed", "equivalent" or "survived"
    lost: float               # points lost at grading


def run(assignment, mutant, seed=catalogue.SEED):
    """Grade one mutant (no diagnosis); killed when it loses points, else try the proof of equivalence."""
    try:
        namespace = _namespace(mutant)
    except Exception:          # noqa: BLE001 - a mutant that does not even import loses everything
        return Result(mutant, "killed", float(sum(registry.max_points(assignment).values())))
    with variants.diagnosis_off():
        verdicts = catalogue.graded(assignment, namespace, seed)
    lost = float(sum(c.max_points - c.points for checks in verdicts.values() for c in checks))
    if lost > 1e-9:
        return Result(mutant, "killed", lost)
    return Result(mutant, "equivalent" if equivalent(assignment, namespace) else "survived", 0.0)


def survivors_table(assignment):
    """{(line, change): reason}: the manifest's committed table of the survivors that are not equivalent."""
    return dict(registry.get(assignment).survivors)


def rates(results):
    """(killed, non-equivalent, rate) of ``results``."""
    killed = sum(r.status == "killed" for r in results)
    counted = sum(r.status != "equivalent" for r in results)
    return killed, counted, (killed / counted if counted else 1.0)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m attnkit_grader.mutation", description=__doc__.split("\n\n")[0])
    parser.add_argument("assignments", nargs="*", help="default: every assignment whose manifest has a behaviour")
    parser.add_argument("--sample", type=int, default=0, help="grade only N mutants spread over the file")
    parser.add_argument("--seed", type=int, default=catalogue.SEED, help="the inputs' seed at grading")
    args = parser.parse_args(argv)
    names = args.assignments or [a for a in registry.assignments() if registry.get(a).behaviour]
    status = 0
    for assignment in names:
        every = mutants(assignment)
        chosen = every[::max(1, len(every) // args.sample)][:args.sample] if args.sample else every
        results = [run(assignment, mutant, args.seed) for mutant in chosen]
        killed, counted, rate = rates(results)
        equivalents = sum(r.status == "equivalent" for r in results)
        print(f"{assignment}: {len(results)} mutants, {equivalents} proven equivalent, {killed}/{counted} "
              f"non-equivalent killed = {100 * rate:.1f}%")
        for obj in dict.fromkeys(r.mutant.obj for r in results):
            k, c, r = rates([x for x in results if x.mutant.obj == obj])
            print(f"  {obj:36s} {k:4d}/{c:<4d} {100 * r:5.1f}%")
        known = survivors_table(assignment)
        for result in results:
            if result.status == "survived":
                reason = known.get((result.mutant.line, result.mutant.change))
                print(f"  survivor line {result.mutant.line}: {result.mutant.change}"
                      + (f"\n      reason: {reason}" if reason else "\n      NOT IN THE TABLE"))
                status |= reason is None
    return status


if __name__ == "__main__":
    sys.exit(main())

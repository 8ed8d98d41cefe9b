"""The bug catalogue at work: what each known bug scores, what the student sees, what the feedback says.

For every bug of an assignment's catalogue (``attnkit_assignments.<name>.bugs``) this runs, in this
process, the variant of the reference that carries it:

- through the released notebook's visible test cells, as a student would see them (``visible``);
- through the probes and the trusted judge, as the grader scores it on fresh inputs (``graded``);

and compares: a test cell where the bug loses points at grading but every visible check passed is false
reassurance; a visible check failing for a correct solution is a false alarm. ``write_worked`` records
the numbers of the visible worked cases (``attnkit.checking.expect_worked``) for the reference and every
variant, and how each variant makes each visible check fail, into the student package
(``attnkit/worked/<assignment>.json``): numbers and messages, never code.

    python -m attnkit_grader.catalogue [--write-worked] [--seed N] [ASSIGNMENT ...]
    python -m attnkit_grader.catalogue --seeds 200 [ASSIGNMENT ...]     # per bug: loses points on how many seeds

prints one line per bug (points kept per cell, the visible checks that failed, whether the feedback
names it) and the figures: catalogue size, false reassurance, false alarms, diagnosis rate, and per cell
where a bug loses points whether the notebook's checks and the feedback page name it.
"""

import argparse
import contextlib
import io
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import torch

import attnkit.checking as checking
from attnkit import i18n
from attnkit_sandbox.probe_sets import run_here

from . import registry
from .judging import engine, variants
from .judging.in_kernel import SEED

__all__ = ["Outcome", "graded", "outcome", "visible", "write_worked"]



def _root(root):
    """The kit's repository: ``root``, or the current folder (the catalogue is run from the repository)."""
    return Path(root) if root is not None else Path.cwd()


def _release_cells(assignment, root=None, edition=None):
    """(setup source, [(grade_id, source)] of the test cells) of the released notebook (``edition``: "fr", "zh":
    that edition's, release/NAME_fr/; None: the English one)."""
    folder = assignment if edition in (None, "en") else f"{assignment}_{edition}"
    path = _root(root) / "release" / folder / f"{assignment}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    setup, tests = None, []
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code":
            continue
        if meta.get("grade_id") == "setup":
            setup = cell.source
        elif meta.get("grade") and not meta.get("solution"):
            tests.append((meta["grade_id"], cell.source))
    if setup is None:
        raise ValueError(f"{path}: no cell with grade_id 'setup'")
    return setup, tests


def _answers(namespace):
    """The functions and classes a variant (or a student's namespace) defines, by name."""
    module = namespace.get("__name__")
    return {name: value for name, value in namespace.items()
            if not name.startswith("_") and getattr(value, "__module__", None) == module and callable(value)}


def visible(assignment, namespace, root=None):
    """{grade_id: Checks} of the released notebook's test cells run on the answers in ``namespace`` (what a
    student sees; a cell's score is ``Checks.score()``, or 0 when it raised CellScoredZero)."""
    setup, tests = _release_cells(assignment, root)
    scope = {"__name__": "__main__"}
    results = {}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        exec(compile(setup, "<setup>", "exec"), scope)          # noqa: S102 - the kit's released notebook
        scope.update(_answers(namespace))
        for grade_id, source in tests:
            try:
                exec(compile(source, f"<{grade_id}>", "exec"), scope)   # noqa: S102
            except checking.CellScoredZero:
                pass
            results[grade_id] = scope["checks"]
    return results


def shown(assignment, namespaces, edition, root=None):
    """What the released notebook of ``edition`` ("en", "fr", "zh") prints when its test cells run on each of
    ``namespaces`` in turn, in that edition's language, in one interpreter (the catalogue's mistakes swapped in
    as :func:`visible` does): [text per namespace], each the visible checks' lines and CellScoredZero's message."""
    setup, tests = _release_cells(assignment, root, edition)
    texts = []
    i18n.set_language(edition)
    try:
        for namespace in namespaces:
            scope, printed = {"__name__": "__main__"}, io.StringIO()
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
                exec(compile(setup, "<setup>", "exec"), scope)          # noqa: S102 - the kit's released notebook
                scope.update(_answers(namespace))
                for grade_id, source in tests:
                    try:
                        exec(compile(source, f"<{grade_id}>", "exec"), scope)   # noqa: S102
                    except checking.CellScoredZero as zero:
                        print("\n".join(zero._render_traceback_()))
            texts.append(printed.getvalue())
    finally:
        i18n.set_language(None)
    return texts


def answered_notebook(assignment, bug, root=None, edition=None):
    """The released notebook (of ``edition``: "fr", "zh"; None: the English one) answered with ``bug``'s variant
    (None: the reference), as a student would hand it in: the variant's code in the first answer cell, the other
    code answer cells left empty."""
    folder = assignment if edition in (None, "en") else f"{assignment}_{edition}"
    notebook = nbformat.read(_root(root) / "release" / folder / f"{assignment}.ipynb", as_version=4)
    first = True
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("solution"):
            cell.source = variants.source_of(registry.get(assignment), bug) if first else "# (answered in the first answer cell)"
            first = False
    return notebook


def validate(assignment, bugs, folder, root=None):
    """Run ``nbgrader validate`` once over the notebooks answered with ``bugs`` (Bug or None each), in
    ``folder``; return {bug name: [problem, ...]}, empty lists when Validate told the truth: for every test
    cell that earns 0 in the student's notebook, its block shows CellScoredZero and what failed and never
    "Partial credit"; a cell that earns some of its points may say "Partial credit"; a cell with all its
    points is not listed."""
    import subprocess
    folder = Path(folder)
    names, paths = [], []
    for bug in bugs:
        name = bug.name if bug is not None else "reference"
        path = folder / f"{assignment}-{name}.ipynb"
        nbformat.write(answered_notebook(assignment, bug, root), path)
        names.append(name)
        paths.append(path)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
               PYTHONUNBUFFERED="1")                   # the log and the results, in the order they happen
    done = subprocess.run([sys.executable, "-m", "nbgrader", "validate", *map(str, paths)], cwd=folder, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1800)
    log = done.stdout
    parts = log.split("Validating '")[1:]
    problems = {}
    for bug, name, part in zip(bugs, names, parts):
        blocks = part.split("The following cell failed:")[1:]
        found = []
        for grade_id, checks in visible(assignment, variants.variant(registry.get(assignment), bug), root).items():
            docstring = _release_docstring(assignment, grade_id, root)
            block = next((b for b in blocks if docstring[:60] in b), None)
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    earned = checks.score()
            except checking.CellScoredZero:
                earned = 0.0
            if earned >= checks.points - 1e-9:
                if block is not None:
                    found.append(f"{grade_id}: full marks, yet listed as failed")
            elif block is None:
                found.append(f"{grade_id}: earned {earned} of {checks.points}, yet not listed")
            elif earned == 0 and ("Partial credit" in block or "CellScoredZero: this cell earned 0" not in block):
                found.append(f"{grade_id}: earned 0, yet Validate says partial credit or shows no reason")
        problems[name] = found
    if len(parts) != len(bugs):
        raise RuntimeError(f"nbgrader validate reported on {len(parts)} of {len(bugs)} notebooks:\n{log[-2000:]}")
    return problems


def _release_docstring(assignment, grade_id, root=None):
    notebook = nbformat.read(_root(root) / "release" / assignment / f"{assignment}.ipynb", as_version=4)
    cell = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    return cell.source.splitlines()[0]


def plain(assignment, bug, root=None):
    """{grade_id: points} that plain ``nbgrader autograde`` gives ``bug`` (None: the reference): the source
    notebook's test cells, visible and hidden, run in one namespace after the variant's code, as the kernel
    runs them (the copy of the reference's code is flagged there, never scored 0)."""
    notebook = nbformat.read(_root(root) / "source" / assignment / f"{assignment}.ipynb", as_version=4)
    scope = {"__name__": "__main__"}
    scores = {}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for cell in notebook.cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type != "code":
                continue
            if meta.get("grade_id") == "setup":
                exec(compile(cell.source, "<setup>", "exec"), scope)                     # noqa: S102
                exec(compile(variants.source_of(registry.get(assignment), bug), "<answers>", "exec"), scope)   # noqa: S102
            elif meta.get("grade") and not meta.get("solution"):
                try:
                    exec(compile(cell.source, f"<{meta['grade_id']}>", "exec"), scope)    # noqa: S102
                    scores[meta["grade_id"]] = float(scope["checks"].score())
                except checking.CellScoredZero:
                    scores[meta["grade_id"]] = 0.0
    return scores


def graded(assignment, namespace, seed=SEED):
    """{grade_id: [Check, ...]}: the trusted judge's verdicts on the answers in ``namespace`` (in process)."""
    manifest = registry.get(assignment)
    inputs = registry.make_inputs(manifest, seed, **manifest.quick_sizes)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        outputs, errors = run_here(namespace, manifest.name, inputs)
    return engine.judge(manifest, inputs, outputs, errors)


@dataclass
class Outcome:
    """One bug (or the reference: ``bug`` None) through both sides."""

    bug: object
    points: dict                          # {grade_id: points at grading}
    maximum: dict                         # {grade_id: points of the cell}
    failed: dict                          # {grade_id: [id of each failed check at grading]}
    visible_failed: dict                  # {grade_id: [what of each failed visible check]}
    messages: list = field(default_factory=list)     # every failure message at grading
    # {grade_id: [(check, kind, message)]} of the failed checks: visible ones in the notebook (check: what it
    # checks), and at grading, the feedback page's (check: its id)
    notebook: dict = field(default_factory=dict)
    feedback: dict = field(default_factory=dict)
    results: list = field(default_factory=list)      # the CheckResults of the failed checks at grading

    @property
    def lost(self):
        return [g for g in self.maximum if self.points.get(g, 0.0) < self.maximum[g] - 1e-9]

    @property
    def reassured(self):
        """Cells where the bug loses points at grading but the student saw every check pass."""
        return [g for g in self.lost if not self.visible_failed.get(g)]

    def names(self, message):
        """True if ``message`` names the bug: its explanation, or the words of the structural check that catches it."""
        words = [self.bug.says] + ([self.bug.named_by] if self.bug.named_by else []) if self.bug else []
        return any(word in message for word in words)

    @property
    def named(self):
        """True if the feedback at grading names the bug (its explanation appears in a message)."""
        return any(self.names(message) for message in self.messages)

    def named_in(self, side):
        """{grade_id: whether a failed check of the cell names the bug} on ``side`` ("notebook" or "feedback"), for
        every cell where the bug loses points at grading."""
        failures = getattr(self, side)
        return {g: any(self.names(message) for _, _, message in failures.get(g, ())) for g in self.lost}

    @property
    def unnamed(self):
        """[(side, grade_id, check, message)] of the failed checks of the values that do not name the bug: each such
        check's numbers (or its exception, or its message) are this bug's, so each should say so."""
        return [(side, g, check, message) for side in ("notebook", "feedback")
                for g, failures in getattr(self, side).items() for check, kind, message in failures
                if kind == "values" and not self.names(message)]


def outcome(assignment, bug, seed=SEED, root=None):
    """The Outcome of ``bug`` (a Bug, or None for the reference)."""
    namespace = variants.variant(registry.get(assignment), bug)
    verdicts = graded(assignment, namespace, seed)
    ids = registry.check_ids(assignment)
    seen = visible(assignment, namespace, root)
    return Outcome(
        bug=bug,
        points={g: float(sum(c.points for c in checks)) for g, checks in verdicts.items()},
        maximum={g: float(sum(c.max_points for c in checks)) for g, checks in verdicts.items()},
        failed={g: [ids[g][i] for i, c in enumerate(checks) if not c.passed] for g, checks in verdicts.items()},
        visible_failed={g: [what for what, points, message, _ in c.results if message is not None]
                        for g, c in seen.items()},
        messages=[c.text() for checks in verdicts.values() for c in checks if not c.passed],
        notebook={g: [(what, kind, message) for what, _, message, kind in c.results if message is not None]
                  for g, c in seen.items()},
        feedback={g: [(c.id, c.kind, c.text()) for c in checks if not c.passed and not c.text().startswith(
            engine.UNSUPPORTED)] for g, checks in verdicts.items()},
        results=[c for checks in verdicts.values() for c in checks if not c.passed])


def write_worked(assignment, root=None):
    """Run the visible checks on the reference and on every bug, as a student would (a check stops at its first
    failure); write the JSON of the worked cases' numbers and of how each bug makes each check fail."""
    manifest = registry.get(assignment)
    catalogued = variants.bugs(manifest)
    recorded = {}
    for bug in [None, *catalogued]:
        checking._recorder = checking._Recorder(None if bug is None else recorded[None].values)
        try:
            visible(assignment, variants.variant(manifest, bug), root)
            recorded[bug] = checking._recorder
        finally:
            checking._recorder = None
    cases = {}
    for key, expected in sorted(recorded[None].values.items()):
        case = key.partition("/")[2]
        groups = []
        for bug in catalogued:
            values = recorded[bug].values.get(key)
            if values is None or _alike(values, expected, recorded[None].atol.get(key, 0)):
                continue                    # the check passes it: no mistake to name (on any CPU's rounding)
            _group(groups, bug, "values", values)
        cases[case] = {"expected": expected, "variants": groups}
    checks = {}
    for what in sorted({what for bug in catalogued for what in recorded[bug].failures} - set(recorded[None].failures)):
        groups = []
        for bug in catalogued:
            failure = recorded[bug].failures.get(what)
            if failure is not None:          # None: it passed, or stopped at an answer not written
                _group(groups, bug, "failure", failure)
        if groups:
            checks[what] = groups
    path = Path(checking.WORKED) / f"{assignment}.json"
    path.parent.mkdir(exist_ok=True)
    text = json.dumps({"cases": cases, "checks": checks}, indent=None, separators=(",", ":"), sort_keys=True)
    path.write_text(_rounded(text) + "\n", encoding="utf-8")
    checking._worked.cache_clear()
    checking._failures.cache_clear()
    return path


def _alike(values, expected, atol):
    """True where a check of tolerance ``atol`` accepts ``values`` for ``expected`` (exact equality when it is 0):
    a mistake whose numbers differ from the reference's only by rounding, which varies with the CPU's kernels,
    is not shipped as a known mistake of that case."""
    if values == expected:
        return True
    values, expected = torch.tensor(values, dtype=torch.float64), torch.tensor(expected, dtype=torch.float64)
    if not atol or values.shape != expected.shape or not bool((values.isnan() == expected.isnan()).all()):
        return False
    known = ~expected.isnan()
    return not known.any() or float((values[known] - expected[known]).abs().max()) <= atol


def _group(groups, bug, field, value):
    """Add ``bug`` to the group of ``groups`` whose ``field`` equals ``value`` (bugs that agree are named together)."""
    for group in groups:
        if group[field] == value:
            group["bugs"].append(bug.name)
            group["says"] += f"; or {bug.says}"
            return
    groups.append({"bugs": [bug.name], "says": bug.says, field: value})


def _rounded(text):
    """The JSON with every float cut to 7 significant digits (float32 holds no more; smaller files)."""
    data = json.loads(text)

    def cut(value):
        if isinstance(value, float):
            return float(f"{value:.7g}")
        if isinstance(value, list):
            return [cut(v) for v in value]
        if isinstance(value, dict):
            return {k: cut(v) for k, v in value.items()}
        return value
    return json.dumps(cut(data), separators=(",", ":"), sort_keys=True)


def losing_seeds(assignment, bug, seeds):
    """The seeds of ``seeds`` on whose inputs ``bug`` loses points at grading: a mistake that keeps full marks on
    some draws is one the inputs can hide (a size of 1, say)."""
    namespace = variants.variant(registry.get(assignment), bug)
    return [seed for seed in seeds if any(c.points < c.max_points - 1e-9 for checks in
                                          graded(assignment, namespace, seed).values() for c in checks)]


def expected_table(assignment, seed=SEED):
    """The EXPECTED table of the assignment's bugs.py as measured now (text to review, then paste)."""
    import textwrap
    lines = ["EXPECTED = {"]
    for bug in variants.bugs(registry.get(assignment)):
        result = outcome(assignment, bug, seed)
        points = {g: (int(p) if float(p).is_integer() else p) for g, p in result.points.items() if g in result.lost}
        lines.append(f"    {bug.name!r}: ({points!r},")
        words = textwrap.wrap(" ".join(i for ids in result.failed.values() for i in ids), 100) or [""]
        lines += [f'        "{w}{" " if n < len(words) - 1 else ""}"' + ("" if n < len(words) - 1 else "),")
                  for n, w in enumerate(words)]
    return "\n".join(lines + ["}"])


def reasons(assignment, seed=SEED):
    """A Markdown table: for each bug and cell where it loses points, the checks it breaks and what still
    counts, and why (a passing check of the values, or a failed one matching the bug's numbers)."""
    specs = {spec.id: spec for spec in registry.specs(assignment)}
    ids = registry.check_ids(assignment)
    rows = ["| bug | cell: kept/max | checks it breaks (points) | what still counts, and why |", "|---|---|---|---|"]
    for bug in variants.bugs(registry.get(assignment)):
        verdicts = graded(assignment, variants.variant(registry.get(assignment), bug), seed)
        lost = [g for g, checks in verdicts.items() if any(c.points < c.max_points for c in checks)]
        for grade_id in lost:
            broke, kept, unsupported = [], [], []
            for check_id, check in zip(ids[grade_id], verdicts[grade_id]):
                if check.max_points <= 0:
                    continue
                if check.passed:
                    kept.append(check_id)
                elif check.text().startswith("right, but counts only"):
                    unsupported.append(check_id)
                else:
                    broke.append(f"{check_id} {checking.fmt(check.max_points)}")
            evidence = ("a check of the values passes" if any(specs[k].kind == "values" for k in kept) else
                        "a failed check of the values has the bug's own (non-constant) numbers" if kept else "-")
            note = f"; {', '.join(unsupported)} right but unsupported" if unsupported else ""
            total = sum(c.points for c in verdicts[grade_id])
            maximum = sum(c.max_points for c in verdicts[grade_id])
            rows.append(f"| {bug.name} | {grade_id}: {checking.fmt(total)}/{checking.fmt(maximum)} | {', '.join(broke)} "
                        f"| {', '.join(kept) or 'nothing'} ({evidence}){note} |")
        if not lost:
            rows.append(f"| {bug.name} | full marks | {', '.join(bug.fails)} (0 points) | everything: what it breaks "
                        f"is shown, not scored |")
    return "\n".join(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m attnkit_grader.catalogue", description=__doc__.split("\n\n")[0])
    parser.add_argument("assignments", nargs="*", help="default: every assignment with a catalogue")
    parser.add_argument("--write-worked", action="store_true", help="rewrite attnkit/worked/<assignment>.json")
    parser.add_argument("--seed", type=int, default=SEED, help="the inputs' seed at grading")
    parser.add_argument("--expected", action="store_true", help="print each catalogue's EXPECTED table as measured")
    parser.add_argument("--reasons", action="store_true", help="print why each bug keeps the points it keeps")
    parser.add_argument("--validate", action="store_true",
                        help="also run nbgrader validate over every bug's notebook (minutes) and report lies")
    parser.add_argument("--seeds", type=int, metavar="N",
                        help="print on how many of the seeds 0..N-1 each bug loses points at grading")
    args = parser.parse_args(argv)
    if args.seeds:
        for assignment in args.assignments or [a for a in registry.assignments() if registry.get(a).bugs]:
            for bug in variants.bugs(registry.get(assignment)):
                lost = losing_seeds(assignment, bug, range(args.seeds))
                print(f"{assignment} {bug.name}: loses points on {len(lost)} of {args.seeds} seeds")
        return 0
    if args.reasons:
        for assignment in args.assignments or [a for a in registry.assignments() if registry.get(a).bugs]:
            print(f"\n**{assignment}**\n\n{reasons(assignment, args.seed)}")
        return 0
    if args.expected:
        for assignment in args.assignments or [a for a in registry.assignments() if registry.get(a).bugs]:
            print(f"# {assignment}\n{expected_table(assignment, args.seed)}")
        return 0
    names = args.assignments or [a for a in registry.assignments() if registry.get(a).bugs]
    totals = {"bugs": 0, "reassured": 0, "alarms": 0, "named": 0, "cells": 0, "notebook": 0, "feedback": 0,
              "unnamed": 0}
    for assignment in names:
        if args.write_worked:
            print(f"wrote {write_worked(assignment)}")
        reference = outcome(assignment, None, args.seed)
        alarms = {g: fails for g, fails in reference.visible_failed.items() if fails}
        lost = reference.lost
        print(f"\n{assignment}: {len(variants.bugs(registry.get(assignment)))} bugs; reference: "
              f"{'full marks' if not lost else 'LOSES points in ' + ', '.join(lost)}; "
              f"false alarms: {sum(len(f) for f in alarms.values())}")
        for grade_id, fails in alarms.items():
            print(f"  false alarm in {grade_id}: {fails}")
        for bug in variants.bugs(registry.get(assignment)):
            result = outcome(assignment, bug, args.seed)
            kept = ", ".join(f"{g} {checking.fmt(result.points[g])}/{checking.fmt(result.maximum[g])}"
                             for g in result.lost) or "full marks"
            flags = []
            if result.reassured:
                flags.append(f"FALSE REASSURANCE in {', '.join(result.reassured)}")
            if result.lost and not result.named:
                flags.append("not named")
            in_notebook, on_feedback = result.named_in("notebook"), result.named_in("feedback")
            for side, named in (("the notebook", in_notebook), ("the feedback", on_feedback)):
                missing = [g for g, yes in named.items() if not yes]
                if missing:
                    flags.append(f"not named in {side} in {', '.join(missing)}")
            for side, grade_id, check, message in result.unnamed:
                flags.append(f"{side} check '{check}' fails without naming it")
            print(f"  {bug.name:28s} {kept}{'  <- ' + '; '.join(flags) if flags else ''}")
            totals["bugs"] += 1
            totals["reassured"] += bool(result.reassured)
            totals["named"] += result.named or not result.lost
            totals["cells"] += len(result.lost)
            totals["notebook"] += sum(in_notebook.values())
            totals["feedback"] += sum(on_feedback.values())
            totals["unnamed"] += len(result.unnamed)
        totals["alarms"] += sum(len(f) for f in alarms.values())
    if args.validate:
        import tempfile
        lies = 0
        for assignment in names:
            with tempfile.TemporaryDirectory() as folder:
                for name, found in validate(assignment, [None, *variants.bugs(registry.get(assignment))], folder).items():
                    lies += len(found)
                    for problem in found:
                        print(f"  Validate, {assignment} {name}: {problem}")
        print(f"\nnbgrader validate: {lies} cells misreported")
    print(f"\ncatalogue: {totals['bugs']} bugs; false reassurance: {totals['reassured']} bugs; false alarms: "
          f"{totals['alarms']}; named by the feedback: {totals['named']}/{totals['bugs']}")
    print(f"cells where a bug loses points: {totals['cells']}; the bug named there in the notebook: "
          f"{totals['notebook']}/{totals['cells']}, on the feedback page: {totals['feedback']}/{totals['cells']}; "
          f"failed checks of the values that do not name their bug: {totals['unnamed']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

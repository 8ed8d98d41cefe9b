"""Copies of a known solution: each answer cell compared with every solution the course holds (issue 29).

An open course publishes more than the notebook's solution: the grader's reference module and the catalogue's
alternative solutions sit in its repository too. The pre-check (:func:`attnkit_grader.precheck.copy_remarks`)
compares every answer cell of a submission with each of them and flags, never zeroes, a cell as alike to one
as a pasted or lightly edited copy is, naming the solution it resembles most. The known solutions
(:func:`known`):

- the notebook's: the answer cells of source/ASSIGNMENT/NAME.ipynb, solution delimiters removed;
- the grader's reference: the assignment's reference.py split by cell: a cell gets the top-level functions and
  classes the notebook's answer cell defines, and the module's helpers they call that no cell defines;
- each of the catalogue's alternatives: the reference with the alternative's edits, split the same way (a cell
  an alternative leaves as the reference has is the reference's, and is not compared twice).

Cells are compared by :func:`attnkit_grader.similarity.resemblance` (names, numbers, strings, comments and
layout set aside, the code the release gives left out). A cell is flagged from its own threshold, which
``python -m attnkit_grader.copies`` measures (:func:`measure`) on correct answers never in the compared set:
the assignment's independent answers (its ``independent_answers``: written apart from every known solution,
in other styles) and the notebook's solution against the reference's family. The threshold of a cell is
:data:`MARGIN` above the most alike of them, rounded up to a twentieth, and at least :data:`FLOOR` (a few
innocent answers per cell vouch for little, and the flag shows on the student's page); a cell whose
innocent answers come within :data:`MARGIN` of :data:`CEILING` cannot be told from a copy and is never
flagged. A cell nobody measured keeps :data:`attnkit_grader.similarity.THRESHOLD`. The command also reports
the leave-one-out figure over the alternatives (each compared with every other solution): one-line edits of
the reference, they resemble it as an edited copy does.

A cell compared with a cell misses a solution pasted whole into one cell (it resembles none of the parts) or
split across cells in another order. So the whole notebook is also compared with each known solution whole
(:func:`pasted`): the **containment** of the solution's runs of tokens (:func:`attnkit_grader.similarity.shingles`:
names, numbers, strings, comments and layout set aside, so a renamed or commented copy is the same) in the runs
of all the submission's answer cells together, leaving out the runs the release gives, and flagged from
:data:`WHOLE`. ``python benchmarks/copies.py`` measures it: the copies (each solution pasted whole, split
across cells, disguised) against the innocent notebooks (the independent answers, whole notebooks assembled
from them, the hostile class's controls), and prints the margin between them.
"""

import argparse
import ast
import builtins
import io
import json
import keyword
import math
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

from . import similarity
from .course import Course
from . import registry
from .judging import variants
from .results import Message

DELIMITERS = ("### BEGIN SOLUTION", "### END SOLUTION")
FLOOR, MARGIN, CEILING = 0.6, 0.15, 0.95
WHOLE = 0.75                    # containment of a solution's runs in a notebook's answers from which it is flagged
NEVER = None                    # the threshold of a cell that cannot be told from a copy: no flag


@dataclass(frozen=True)
class Solution:
    """A known solution: ``name`` 'notebook', 'reference' or 'alternative:NAME', ``label`` what a reader is
    told it is, ``family`` the solution it was written from (an alternative: the reference), ``cells``
    {answer cell: code}."""

    name: str
    label: Message
    family: str
    cells: dict
    whole: str = ""               # the solution as one text (a module: all of it), compared with a whole notebook


@dataclass(frozen=True)
class Flag:
    """An answer cell as alike to a known solution as a copy: ``alike`` from 0 to 1."""

    cell: str
    solution: Solution
    alike: float


def answer_cells(notebook_path, strip=False):
    """{grade_id: code} of the answer (solution) code cells of a notebook; ``strip``: without the solution
    delimiter lines (the instructor's notebook)."""
    cells = {}
    for cell in json.loads(Path(notebook_path).read_text(encoding="utf-8"))["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.get("cell_type") == "code" and meta.get("solution") and meta.get("grade_id"):
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            if strip:
                source = "\n".join(line for line in source.split("\n") if line.strip() not in DELIMITERS)
            cells[meta["grade_id"]] = source
    return cells


def defined(code):
    """The names of the top-level functions and classes ``code`` defines (none when it does not parse)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    return {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def split_module(text, wanted):
    """{cell: code} of a module's text: for each cell of ``wanted`` {cell: names}, the top-level definitions
    of those names, with the module's helpers they call that no cell claims, in the module's order."""
    tree = ast.parse(text)
    definitions = {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    claimed = set().union(*wanted.values()) if wanted else set()
    cells = {}
    for cell, names in wanted.items():
        taken = {name for name in names if name in definitions}
        pending = list(taken)
        while pending:
            for node in ast.walk(definitions[pending.pop()]):
                name = node.id if isinstance(node, ast.Name) else None
                if name in definitions and name not in claimed and name not in taken:
                    taken.add(name)
                    pending.append(name)
        if taken:
            cells[cell] = "\n\n\n".join(ast.get_source_segment(text, definitions[name])
                                       for name in sorted(taken, key=lambda n: definitions[n].lineno))
    return cells


def known(course, assignment):
    """The known solutions of ``assignment`` ([Solution]): the notebook's, then (for an assignment of the
    grader's registry) the reference's and each alternative's."""
    name = course.notebook_names(assignment, step="source")
    source = course.assignment_dir("source", assignment) / f"{name[0]}.ipynb" if len(name) == 1 else None
    notebook = answer_cells(source, strip=True) if source and source.is_file() else {}
    solutions = [Solution("notebook", Message.make("the notebook's solution"), "notebook", notebook,
                          "\n\n".join(notebook.values()))]
    if assignment not in registry.assignments():
        return solutions
    manifest = registry.get(assignment)
    wanted = {cell: defined(code) for cell, code in notebook.items()}
    reference = split_module(variants.source_of(manifest), wanted)
    solutions.append(Solution("reference", Message.make("the grader's reference solution ({path})",
                                                         path=f"attnkit_assignments/{assignment}/reference.py"),
                              "reference", reference, variants.source_of(manifest)))
    for alternative in manifest.alternatives:
        cells = {cell: code for cell, code in split_module(variants.source_of(manifest, alternative), wanted).items()
                 if code != reference.get(cell)}
        solutions.append(Solution(f"alternative:{alternative.name}", Message.make(
            "the catalogue's alternative solution '{name}' ({says})", name=alternative.name,
            says=Message.make(alternative.says)),               # a sentence of the assignment's catalog
            "reference", cells, variants.source_of(manifest, alternative)))
    return solutions


def thresholds(assignment):
    """{answer cell: threshold, or None (never flagged)} of an assignment of the registry ({} otherwise)."""
    return dict(registry.get(assignment).copy_thresholds) if assignment in registry.assignments() else {}


def given_runs(released):
    """{cell: the runs of tokens the release hands out in that answer cell}."""
    return {cell: similarity.shingles(code) for cell, code in released.items()}


def most_alike(code, cell, solutions, given):
    """(alike, Solution) of the known solution ``code`` resembles most in ``cell`` ((0.0, None) if none)."""
    found = [(similarity.resemblance(code, solution.cells[cell], given.get(cell, set())), solution)
             for solution in solutions if cell in solution.cells]
    return max(found, key=lambda pair: pair[0], default=(0.0, None))


def flags(answers, released, solutions, limits):
    """[Flag] of the submitted ``answers`` {cell: code} that reach their cell's threshold in ``limits``
    (default: similarity.THRESHOLD; None: never flagged); ``released`` {cell: code as handed out}."""
    given = given_runs(released)
    found = []
    for cell in released:
        limit = limits.get(cell, similarity.THRESHOLD)
        if cell not in answers or limit is NEVER:
            continue
        alike, solution = most_alike(answers[cell], cell, solutions, given)
        if solution is not None and alike >= limit:
            found.append(Flag(cell, solution, alike))
    return found


def containment(code, solution, given=frozenset()):
    """The share (0 to 1) of ``solution``'s runs of tokens, those of ``given`` (the release's) left out, that
    ``code`` holds somewhere; 0 when the solution has none of its own."""
    theirs = similarity.shingles(solution) - given
    return len(theirs & similarity.shingles(code)) / len(theirs) if theirs else 0.0


def pasted(answers, released, solutions, limit=WHOLE):
    """(containment, Solution) of the known solution whose runs the submitted ``answers`` {cell: code}, all
    together, hold the largest share of, when it reaches ``limit``; else None. ``released``: {cell: code as
    handed out}, whose runs are left out."""
    given = set().union(*given_runs(released).values()) if released else set()
    code = "\n\n".join(answers.get(cell, "") for cell in released)
    found = [(containment(code, s.whole, given), s) for s in solutions if s.whole]
    best = max(found, key=lambda pair: pair[0], default=(0.0, None))
    return best if best[1] is not None and best[0] >= limit else None


# --- measuring the thresholds ---------------------------------------------------------------------------------

def disguised(code):
    """``code`` as a copier hides it: every name of its own renamed, a comment on each line, blank lines added."""
    names = {token.string for token in tokenize.generate_tokens(io.StringIO(code).readline)
             if token.type == tokenize.NAME and not keyword.iskeyword(token.string)}
    renamed = code
    for number, name in enumerate(sorted(names, key=len, reverse=True)):
        if len(name) > 2 and not hasattr(builtins, name) and name not in ("self", "torch", "nn", "math", "attnkit"):
            renamed = re.sub(rf"(?<![\w.]){re.escape(name)}\b", f"my_{name}_{number}", renamed)
    return "\n\n".join(line + ("  # mine" if line.strip() else "") for line in renamed.split("\n"))


def measure(course, assignment):
    """{cell: figures} of the copy flag: the innocent answers' resemblance, the threshold they give, the
    false positives at it, the leave-one-out over the alternatives and the disguised copies it catches."""
    solutions = known(course, assignment)
    [name] = course.notebook_names(assignment)           # the registry's assignments have one notebook each
    released = answer_cells(course.assignment_dir("release", assignment) / f"{name}.ipynb")
    given = given_runs(released)
    own = dict(registry.get(assignment).independent_answers) if assignment in registry.assignments() else {}
    figures = {}
    for cell in released:
        innocent = [("independent", number, most_alike(code, cell, solutions, given)[0])
                    for number, code in enumerate(own.get(cell, ()), start=1)]
        notebook = next(s for s in solutions if s.name == "notebook")
        if cell in notebook.cells:
            others = [s for s in solutions if s.family != "notebook"]
            if any(cell in s.cells for s in others):
                innocent.append(("notebook", 0, most_alike(notebook.cells[cell], cell, others, given)[0]))
        measured = [alike for _, _, alike in innocent]
        threshold = derive(measured) if own.get(cell) else similarity.THRESHOLD
        leave_one_out = [(s.name, most_alike(s.cells[cell], cell, [o for o in solutions if o is not s], given)[0])
                         for s in solutions if s.name.startswith("alternative:") and cell in s.cells]
        copies = [(s.name, most_alike(disguised(s.cells[cell]), cell, solutions, given)[0])
                  for s in solutions if cell in s.cells]
        figures[cell] = {"innocent": innocent, "threshold": threshold, "measured": bool(own.get(cell)),
                         "false_positives": sum(threshold is not NEVER and alike >= threshold for alike in measured),
                         "held_out": held_out(measured), "leave_one_out": leave_one_out, "copies": copies}
    return figures


def derive(measured):
    """The threshold innocent answers resembling known solutions by ``measured`` give (None: never flag)."""
    if not measured:
        return similarity.THRESHOLD
    threshold = max(FLOOR, math.ceil(20 * (max(measured) + MARGIN) - 1e-9) / 20)
    return NEVER if threshold > CEILING else round(threshold, 2)


def held_out(measured):
    """How many innocent answers the threshold derived without them would flag (leave-one-out)."""
    return sum(1 for i, alike in enumerate(measured)
               if (limit := derive(measured[:i] + measured[i + 1:])) is not NEVER and alike >= limit)


def report(course, assignments):
    """The measurement as text, one table per assignment."""
    lines = []
    for assignment in assignments:
        lines.append(f"{assignment}: copy flag per answer cell (resemblance 0..1; threshold = {MARGIN} above the "
                     f"most alike innocent answer, rounded up to 0.05, at least {FLOOR}; none above {CEILING})")
        for cell, found in measure(course, assignment).items():
            threshold = found["threshold"]
            shown = "never flagged" if threshold is NEVER else f"{threshold:.2f}"
            innocent = ", ".join(f"{kind}{'' if kind == 'notebook' else ' ' + str(n)} {alike:.2f}"
                                 for kind, n, alike in found["innocent"]) or "none measured"
            total = len(found["innocent"])
            lines.append(f"  {cell}: threshold {shown}{'' if found['measured'] else ' (default, not measured)'}")
            lines.append(f"    innocent answers: {innocent}")
            lines.append(f"    false positives: {found['false_positives']} of {total} at the threshold, "
                         f"{found['held_out']} of {total} held out (each judged by the threshold the others give)")
            if found["leave_one_out"]:
                caught = sum(threshold is not NEVER and alike >= threshold for _, alike in found["leave_one_out"])
                lines.append(f"    leave-one-out alternatives (one-line edits of the reference): "
                             + ", ".join(f"{name.split(':')[1]} {alike:.2f}" for name, alike in found["leave_one_out"])
                             + f": {caught} of {len(found['leave_one_out'])} flagged")
            caught = sum(threshold is not NEVER and alike >= threshold for _, alike in found["copies"])
            lines.append(f"    disguised copies (renamed, commented, spaced) of each known solution: "
                         f"{caught} of {len(found['copies'])} flagged")
    return "\n".join(lines)


def table(course, assignment):
    """{cell: threshold} as ``copy_thresholds`` should hold it (measured cells only)."""
    return {cell: found["threshold"] for cell, found in measure(course, assignment).items() if found["measured"]}


def main(argv=None):
    parser = argparse.ArgumentParser(description="Measure the copy flag of each answer cell (issue 29).")
    parser.add_argument("assignments", nargs="*", help="default: every assignment of the registry")
    parser.add_argument("--root", default=".", help="the course folder (default: the current folder)")
    args = parser.parse_args(argv)
    unknown = [name for name in args.assignments if name not in registry.assignments()]
    if unknown:
        parser.error(f"assignments: {', '.join(map(repr, unknown))} not in the registry "
                     f"(known: {', '.join(registry.assignments())})")
    course = Course(args.root)
    print(report(course, args.assignments or registry.assignments()))
    for assignment in args.assignments or registry.assignments():
        print(f"{assignment}: THRESHOLDS = {table(course, assignment)!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The whole-notebook copy flag measured: copies pasted whole, split or edited against innocent notebooks.

Usage: .venv/bin/python benchmarks/copies.py [ASSIGNMENT ...]   (from the kit's repository)

For each assignment of the registry, every known solution (attnkit_grader.copies.known: the notebook's, the
grader's reference module, each catalogue alternative) is handed in three ways:

  whole    all of it pasted into the first answer cell (a leaked reference.py, as it is)
  split    its code answer cells in their cells (the reference split by the cells' definitions)
  edited   pasted whole, every name of its own renamed, a comment on each line, blank lines added

and each is measured by attnkit_grader.copies.pasted's containment (the share of the solution's runs of tokens
found anywhere in the notebook's answer cells, the release's runs left out). The innocent notebooks are the
assignment's independent answers (each in its cell, the other cells as released), every whole notebook
assembled from them (one answer per cell, all combinations), the release itself, and the hostile class's
controls of the assignment (tests/fixtures/hostile_class/controls). The example class's notebooks, built from
the instructor's answers on purpose, are listed apart: copies by construction. It prints each notebook's
highest containment, the false positives at attnkit_grader.copies.WHOLE, and the margin between the most alike
innocent notebook and the least alike copy. Not a test: tests/test_copies.py asserts the flag on such copies.
"""

import itertools
import sys
from pathlib import Path

from attnkit_grader import copies
from attnkit_grader.course import Course
from attnkit_grader import registry

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "hostile_class" / "controls"
EXAMPLES = ROOT / "examples" / "example_class"


def best(answers, released, solutions):
    """(containment, solution name) of the known solution ``answers`` hold most of."""
    found = copies.pasted(answers, released, solutions, limit=0.0)
    return (found[0], found[1].name) if found else (0.0, "-")


def handed_in(course, assignment):
    """(copies, innocent, built) as {label: answers {cell: code}}, for ``assignment`` (see the module)."""
    [name] = course.notebook_names(assignment)
    released = copies.answer_cells(course.assignment_dir("release", assignment) / f"{name}.ipynb")
    solutions = copies.known(course, assignment)
    first = next(iter(released))
    copied = {}
    reference = next((s.cells for s in solutions if s.name == "reference"), {})
    for solution in solutions:
        copied[f"{solution.name} whole"] = {**released, first: solution.whole}
        # an alternative's cells are those it changes: the rest of it is the reference's
        split = {**reference, **solution.cells} if solution.family == "reference" else solution.cells
        copied[f"{solution.name} split"] = {**released, **split}
        copied[f"{solution.name} edited"] = {**released, first: copies.disguised(solution.whole)}
    own = registry.get(assignment).independent_answers
    innocent = {"release": dict(released)}
    for cell, answers in own.items():
        for number, code in enumerate(answers, start=1):
            innocent[f"independent {cell} {number}"] = {**released, cell: code}
    cells = [cell for cell in released if own.get(cell)]
    for choice in itertools.product(*(range(len(own[cell])) for cell in cells)):
        innocent["assembled " + "-".join(str(n + 1) for n in choice)] = {
            **released, **{cell: own[cell][n] for cell, n in zip(cells, choice)}}
    for folder in sorted(FIXTURES.glob(f"*/{assignment}/{name}.ipynb")):
        innocent[f"control {folder.parts[-3]}"] = {**released, **copies.answer_cells(folder)}
    built = {f"example {path.parts[-3]}": copies.answer_cells(path)
             for path in sorted(EXAMPLES.glob(f"*/{assignment}/{name}.ipynb")) if readable(path)}
    return released, solutions, copied, innocent, built


def readable(path):
    try:
        copies.answer_cells(path)
        return True
    except (ValueError, KeyError):
        return False


def main(argv):
    course = Course(ROOT)
    margins = []
    for assignment in argv or registry.assignments():
        released, solutions, copied, innocent, built = handed_in(course, assignment)
        print(f"{assignment}: containment of the most contained known solution (flagged from {copies.WHOLE})")
        scores = {}
        for title, group in (("copies", copied), ("innocent", innocent), ("example class (built from the "
                                                                          "instructor's answers)", built)):
            scores[title] = {label: best(answers, released, solutions) for label, answers in group.items()}
            values = [alike for alike, _ in scores[title].values()]
            flagged = sum(alike >= copies.WHOLE for alike in values)
            print(f"  {title}: {len(values)} notebooks, {flagged} flagged, containment "
                  f"{min(values):.2f} to {max(values):.2f}")
            shown = sorted(scores[title].items(), key=lambda item: -item[1][0])
            for label, (alike, name) in shown if title != "innocent" else shown[:8]:
                print(f"    {label}: {alike:.2f} ({name})")
        least_copy = min(scores["copies"].items(), key=lambda item: item[1][0])
        most_innocent = max(scores["innocent"].items(), key=lambda item: item[1][0])
        margin = least_copy[1][0] - most_innocent[1][0]
        margins.append(margin)
        print(f"  most alike innocent notebook: {most_innocent[0]} {most_innocent[1][0]:.2f}; least alike copy: "
              f"{least_copy[0]} {least_copy[1][0]:.2f}; margin {margin:.2f}")
    print(f"smallest margin over the assignments: {min(margins):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

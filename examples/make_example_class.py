"""Builds the example class: submissions of every registered assignment, with the scores they must get.

    python examples/make_example_class.py            # rewrite examples/example_class/
    python examples/make_example_class.py --verify   # also grade them with plain nbgrader

Run it after the release changes (``attnkit release``), then commit the result; ``make demo`` grades the
class. Every submission starts from the committed release/ notebook; answer cells are filled with the
instructor's code taken from source/ (solution delimiters removed), possibly with one known bug put in by an
exact text replacement, so a change to the source that moves a bug's target fails here loudly.

Each assignment the grader's registry knows takes part: ``ref_solution`` hands in the instructor's answers
(full marks), ``blank`` the release as handed out (0), and the assignment's manifest adds its own students
(``examples``: partial answers, known bugs, broken and dishonest notebooks, with their expected points).

``--verify`` copies the course (nbgrader_config.py, source/) and the submissions into a temporary
folder, runs ``nbgrader generate_assignment``, ``nbgrader db student import`` and
``nbgrader autograde`` there, and compares every autograded score with expected_scores.json.
"""

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from attnkit_grader import registry

ROOT = Path(__file__).resolve().parents[1]
CLASS_DIR = Path(__file__).resolve().parent / "example_class"
DELIMITERS = ("### BEGIN SOLUTION", "### END SOLUTION")
EVERYONE = {"ref_solution": ("Ada", "Reference"), "blank": ("Blake", "Blank")}
BLANK_REASON = "the release as handed out: every answer raises NotImplementedError"


def edition(assignment, language):
    """The folder of ``assignment`` in ``language`` ('en': the graded assignment; else its translation)."""
    return assignment if language == "en" else f"{assignment}_{language}"


class Kit:
    """Notebooks of one assignment in one language, made from its release and its instructor's answers:
    what an assignment's ``examples(kit)`` builds its students with. It returns {student: (notebook, expected,
    (first name, last name))}: ``notebook`` a notebook or, for a broken file, its text; ``expected``
    {grade_id: points of each test cell the submission loses points in, "reason": why, when it is not graded
    normally} (the cells not named keep full marks). A student who hands in several assignments has the same
    name in each."""

    def __init__(self, assignment, language="en"):
        self.assignment, self.language = assignment, language

    def release(self):
        """The release notebook as handed out."""
        return nbformat.read(ROOT / "release" / edition(self.assignment, self.language) / f"{self.assignment}.ipynb",
                             as_version=4)

    def answers(self):
        """{grade_id: source} of every answer cell (code and written) of the source notebook, delimiters removed."""
        folder = ROOT / ("source" if self.language == "en" else "translations") / edition(self.assignment, self.language)
        notebook = nbformat.read(folder / f"{self.assignment}.ipynb", as_version=4)
        answers = {}
        for cell in notebook.cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("solution"):
                lines = [line for line in cell.source.split("\n") if line.strip() not in DELIMITERS]
                answers[meta["grade_id"]] = "\n".join(lines)
        return answers

    @staticmethod
    def replace_once(text, old, new):
        """``text`` with the single occurrence of ``old`` replaced; fails loudly if it is not there exactly once."""
        count = text.count(old)
        if count != 1:
            raise ValueError(f"expected exactly one occurrence of {old!r} in the instructor's answer, found {count}")
        return text.replace(old, new)

    def fill(self, answers):
        """The release notebook with the answer cells named in ``answers`` replaced."""
        notebook = self.release()
        for cell in notebook.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if grade_id in answers:
                cell.source = answers[grade_id]
        return notebook

    def with_bug(self, grade_id, old, new):
        """The instructor's answers with one replacement in cell ``grade_id``."""
        answers = self.answers()
        answers[grade_id] = self.replace_once(answers[grade_id], old, new)
        return answers

    @staticmethod
    def code_only(answers):
        """Drop the written (markdown) answers: most students leave them as released."""
        return {k: v for k, v in answers.items() if not k.endswith("_written")}

    writes = staticmethod(nbformat.writes)


def full_marks(assignment):
    return {grade_id: float(points) for grade_id, points in registry.max_points(assignment).items()}


def build(language="en"):
    """(submissions {student: {assignment: notebook or text}}, expected {student: {assignment: {grade_id:
    points, "reason"?}}}, names {student: (first, last)}) of the class, every notebook made from
    ``language``'s edition of the release and the source (the translations' answers are the same code with
    translated comments: the same scores are expected)."""
    subs, expected, names = {}, {}, dict(EVERYONE)
    for assignment in registry.assignments():
        kit, full = Kit(assignment, language), full_marks(assignment)
        handed = {"ref_solution": (kit.fill(kit.answers()), {}, EVERYONE["ref_solution"]),
                  "blank": (kit.release(), {**{k: 0.0 for k in full}, "reason": BLANK_REASON}, EVERYONE["blank"])}
        manifest = registry.get(assignment)
        handed.update(manifest.examples(kit) if manifest.examples else {})
        for student, (notebook, points, name) in handed.items():
            if names.setdefault(student, tuple(name)) != tuple(name):
                raise ValueError(f"{assignment}: student {student} is {name}, elsewhere {names[student]}")
            unknown = set(points) - set(full) - {"reason"}
            if unknown:
                raise ValueError(f"{assignment}: {student}'s expected points name no test cell: {sorted(unknown)}")
            subs.setdefault(student, {})[assignment] = notebook
            expected.setdefault(student, {})[assignment] = {**full, **points}
    return subs, expected, names


def write_class(target=CLASS_DIR, language="en"):
    """Rewrite the example class folder: students.csv, expected_scores.json and the submissions (made from
    the release of the assignments' edition in ``language``; the committed class is the English one)."""
    subs, expected, names = build(language)
    for child in target.glob("*"):
        if child.is_dir():
            shutil.rmtree(child)
    target.mkdir(parents=True, exist_ok=True)
    with open(target / "students.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["id", "first_name", "last_name", "email"])
        for student in sorted(subs):
            first, last = names[student]
            writer.writerow([student, first, last, f"{student}@example.org"])
    for student, handed_in in sorted(subs.items()):
        for assignment, notebook in handed_in.items():
            folder = target / student / assignment
            folder.mkdir(parents=True)
            text = notebook if isinstance(notebook, str) else nbformat.writes(notebook)
            (folder / f"{assignment}.ipynb").write_text(text if text.endswith("\n") or isinstance(notebook, str)
                                                        else text + "\n", encoding="utf-8")
    with open(target / "expected_scores.json", "w", encoding="utf-8") as handle:
        json.dump(expected, handle, indent=2, sort_keys=True)
        handle.write("\n")
    return subs


# ----------------------------------------------------------------------------------------------------
# Verifying with plain nbgrader

def nbgrader(course, *args):
    """Run ``python -m nbgrader ARGS`` in ``course``; the venv's bin/ first on PATH (nbgrader calls alembic)."""
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                          capture_output=True, text=True)


def autograded_scores(course):
    """{student: {assignment: {grade_id: score}}} of the code grade cells in the course's gradebook."""
    from nbgrader.api import Gradebook, MissingEntry
    scores = {}
    from attnkit_grader.course import Course
    with Gradebook(f"sqlite:///{course}/gradebook.db", Course(ROOT).course_id) as gradebook:
        for student in gradebook.students:
            for assignment in registry.assignments():
                try:
                    submission = gradebook.find_submission(assignment, student.id)
                except MissingEntry:
                    continue
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        if grade.cell.cell_type == "code":
                            scores.setdefault(student.id, {}).setdefault(assignment, {})[grade.name] = \
                                float(grade.score)
    return scores


def verify(keep=None):
    """Grade the example class with plain nbgrader in a temporary course; print and compare the scores."""
    with tempfile.TemporaryDirectory(prefix="example-class-") as scratch:
        course = Path(keep or scratch)
        course.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / "nbgrader_config.py", course)
        shutil.copytree(ROOT / "source", course / "source", dirs_exist_ok=True)
        for assignment in registry.assignments():
            result = nbgrader(course, "generate_assignment", assignment, "--force")
            if result.returncode:
                raise RuntimeError(result.stderr)
        result = nbgrader(course, "db", "student", "import", str(CLASS_DIR / "students.csv"))
        if result.returncode:
            raise RuntimeError(result.stderr)
        for student_dir in sorted(p for p in CLASS_DIR.iterdir() if p.is_dir()):
            shutil.copytree(student_dir, course / "submitted" / student_dir.name)
        timings, logs = {}, {}
        for student_dir in sorted(p for p in CLASS_DIR.iterdir() if p.is_dir()):
            for assignment_dir in sorted(student_dir.iterdir()):
                start = time.perf_counter()
                result = nbgrader(course, "autograde", assignment_dir.name, "--student", student_dir.name,
                                  "--force")
                timings[student_dir.name, assignment_dir.name] = time.perf_counter() - start
                logs[student_dir.name, assignment_dir.name] = (result.returncode, result.stderr)
        got = autograded_scores(course)
    expected = json.loads((CLASS_DIR / "expected_scores.json").read_text())
    mismatches = 0
    for (student, assignment), seconds in sorted(timings.items()):
        want = {k: v for k, v in expected[student][assignment].items() if k != "reason"}
        have = got.get(student, {}).get(assignment)
        status = "ok" if (have or {k: 0.0 for k in want}) == want else "MISMATCH"
        mismatches += status != "ok"
        code, log = logs[student, assignment]
        print(f"{status:8s} {student:22s} {assignment:18s} {seconds:5.1f} s  rc={code}  got {have}")
        if status != "ok":
            print(f"         expected {want}")
            print("         " + "\n         ".join(log.strip().splitlines()[-6:]))
    return mismatches


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--verify", action="store_true", help="grade the class with nbgrader and compare")
    parser.add_argument("--keep", type=Path, help="with --verify: grade in this folder and keep it")
    args = parser.parse_args()
    write_class()
    print(f"wrote {CLASS_DIR.relative_to(ROOT)}")
    if args.verify:
        sys.exit(1 if verify(args.keep) else 0)


if __name__ == "__main__":
    main()

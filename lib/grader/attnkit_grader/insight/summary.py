"""The insight report's numbers: a graded run counted by check, by catalogued mistake and by language.

:func:`summarise` turns a :class:`~attnkit_grader.pipeline.GradingRun` into the JSON-ready dict that
``insight.json`` holds and ``insight.html`` shows. It names no student: each submission shown as an example
is a label (:func:`labels`), which ``insight-labels.csv`` alone ties to the student.

Why a failed check failed, its *cause*, is one of:

- ``mistake``: a catalogued mistake. Either the check's own numbers matched it (``how`` = 'matched'), or
  another check of the same submission matched it and the catalogue says that mistake fails this check
  too ('implied': an exception or a structure the judge does not compare with the variants). When the
  numbers of a check match several mistakes, the submission's other checks decide
  (:func:`attribute`);
- ``not_attempted``: the code still raises NotImplementedError, or never ran that far;
- ``raised``: the code raised an exception no catalogued mistake explains (a name never defined, a crash);
- ``unexplained``: a check of the values, wrong in a way no catalogue entry explains (a prompt to extend it);
- ``other``: a structure or property check that failed on its own (the judge never diagnoses those).
"""

import csv
import hashlib
import hmac
import json
from pathlib import Path

from .. import editions
from ..exchange import RECORD
from .. import registry
from ..judging.engine import without_hint
from ..precheck import COPY
from ..teaching import resolve

VERSION = 1
EXAMPLES = 3                        # example submissions shown per row
ANONYMOUS = "_anonymous"            # feedback/_anonymous/: no student folder starts with '_' (intake.class_list)
CAUSES = ("mistake", "unexplained", "raised", "not_attempted", "other")
# What the judge says when a probe never ran the student's code to the end, and when it raised
# (attnkit_grader.judging.engine: _explain_error, _decide)
NOT_ATTEMPTED = ("not implemented yet", "this check did not run", "no result came back")
RAISED = "your code raised {error}"
LABEL_DIGITS = 6


def labels(students, course_id, key=""):
    """{student: 'S-1a2b3c'}: a stable label per student, a keyed hash of the course id and the student
    (unguessable from the class list only when ``key``, the grading key, is secret); longer when two collide."""
    digits = LABEL_DIGITS
    while True:
        made = {student: "S-" + hmac.new(key.encode(), f"{course_id}\x1f{student}".encode(),
                                         hashlib.sha256).hexdigest()[:digits] for student in students}
        if len(set(made.values())) == len(made):
            return made
        digits += 2


def language_order(found):
    """English first, then the editions' languages in the kit's order."""
    order = [editions.ENGLISH, *editions.LANGUAGES]
    return sorted(found, key=lambda language: (order.index(language) if language in order else len(order), language))


def markdown_texts(path):
    """The set of Markdown cell sources of a notebook (an untrusted one: anything odd gives an empty set)."""
    try:
        cells = json.loads(Path(path).read_text(encoding="utf-8")).get("cells", [])
        return {("".join(c["source"]) if isinstance(c.get("source"), list) else c.get("source")) for c in cells
                if isinstance(c, dict) and c.get("cell_type") == "markdown"} - {None}
    except (OSError, ValueError, AttributeError, TypeError):
        return set()


class Languages:
    """The language of each submission: what ``attnkit collect`` recorded (collect.json), else the edition
    whose released text the notebook holds most of, else English."""

    LIMIT = 20 * 2**20              # a larger notebook is not read (the pre-check rejects them anyway)

    def __init__(self, course):
        self.course, self.texts = course, {}

    def released(self, assignment):
        if assignment not in self.texts:
            self.texts[assignment] = {
                language: markdown_texts(self.course.assignment_dir("release", name) / f"{assignment}.ipynb")
                for language, name in self.course.editions(assignment).items()}
        return self.texts[assignment]

    def of(self, record):
        folder = self.course.assignment_dir("submitted", record.assignment, record.student)
        try:
            recorded = json.loads((folder / RECORD).read_text(encoding="utf-8")).get("language")
        except (OSError, ValueError, AttributeError):
            recorded = None
        known = self.released(record.assignment)
        if recorded in known:
            return recorded
        notebook = folder / f"{record.notebook or record.assignment}.ipynb"
        if record.status not in ("graded", "failed") or not notebook.is_file() or \
                notebook.stat().st_size > self.LIMIT:
            return editions.ENGLISH
        texts = markdown_texts(notebook)
        best = max(known, key=lambda language: (len(known[language] & texts), language == editions.ENGLISH))
        return best if known[best] & texts else editions.ENGLISH


def failure(check):
    """'not_attempted', 'raised' or '' (a wrong result) for a failed check, from its message."""
    message = without_hint(check.message)
    if message is None:
        return ""
    if message.render().startswith(NOT_ATTEMPTED):
        return "not_attempted"
    return "raised" if message.template == RAISED else ""


def attribute(record, catalogue):
    """{check id: (cause, how, (mistake, ...))} for every failed check of a judged submission; ``catalogue``
    {name: Bug}. Mistakes are chosen greedily: first the one matching the most failed checks, ties broken by
    how well its catalogued ``fails`` agree with the checks this submission failed (a frozen table and a
    buffer both give a zero gradient; only one also fails the 'trainable' check)."""
    checks = [check for checks in record.checked.values() for check in checks]
    failed = {check.id for check in checks if not check.passed}
    pending = {check.id: set(check.mistakes) for check in checks if not check.passed and check.mistakes}

    def rank(name):
        fails = set(catalogue[name].fails) if name in catalogue else set()
        return sum(name in names for names in pending.values()), len(fails & failed) / len(fails | failed)

    chosen = {}
    while pending:
        candidates = set().union(*pending.values())
        top = max(map(rank, candidates))
        best = {name for name in candidates if rank(name) == top}
        for check_id in [c for c, names in pending.items() if names & best]:
            chosen[check_id] = ("mistake", "matched", tuple(sorted(pending.pop(check_id) & best)))
    named = sorted({name for _, _, names in chosen.values() for name in names})
    causes = {}
    for check in checks:
        if check.passed:
            continue
        implied = tuple(name for name in named if name in catalogue and check.id in catalogue[name].fails)
        how = failure(check)
        if check.id in chosen:
            causes[check.id] = chosen[check.id]
        elif how == "not_attempted":
            causes[check.id] = (how, "", ())
        elif implied:
            causes[check.id] = ("mistake", "implied", implied)
        else:
            causes[check.id] = (how or ("unexplained" if check.kind == "values" else "other"), "", ())
    return causes


def add(into, language, count=1):
    into[language] = into.get(language, 0) + count


def summarise(course, run, key=""):
    """The insight report of ``run`` (JSON-ready), and {(student, assignment): label} of the examples it shows."""
    graded = {k: r for k, r in run.submissions.items() if r.status != "missing"}
    label = labels(sorted({student for student, _ in graded}), course.course_id, key)
    languages = Languages(course)
    language = {key_: languages.of(record) for key_, record in graded.items()}
    shown, assignments = {}, []
    for assignment in run.assignments:
        mine = {student: record for (student, a), record in sorted(graded.items()) if a == assignment}
        part = summarise_assignment(course, run, assignment, mine, {s: language[s, assignment] for s in mine},
                                    {s: label[s] for s in mine}, shown)
        part["examples"] = {shown[s, assignment]: example_page(shown[s, assignment], mine[s])
                            for s in mine if (s, assignment) in shown}
        assignments.append(part)
    found = language_order({language for language in language.values()} or {editions.ENGLISH})
    ranked = sorted(({"assignment": a["name"], **m} for a in assignments for m in a["mistakes"]),
                    key=lambda m: (-sum(m["points"].values()), -sum(m["submissions"].values()), m["assignment"],
                                   m["name"]))
    return {"version": VERSION, "languages": found, "assignments": assignments,
            "ranked": [{"assignment": m["assignment"], "name": m["name"]} for m in ranked]}, shown


def summarise_assignment(course, run, assignment, records, language, label, shown):
    """One assignment's part of the report (see :func:`summarise`); adds its examples to ``shown``."""
    manifest = registry.get(assignment) if assignment in registry.assignments() else None
    catalogue = {bug.name: bug for bug in manifest.bugs} if manifest else {}
    table = run.table
    handed, judged = {}, {}
    totals, cells = {}, []
    for student, record in records.items():
        add(handed, language[student])
        totals.setdefault(language[student], []).append(table.total(student, assignment))
        if record.checked:
            add(judged, language[student])
    checks, mistakes, copied = {}, {}, {}

    def example(row, student):
        if len(row["examples"]) < EXAMPLES and label[student] not in row["examples"]:
            row["examples"].append(label[student])
            shown[student, assignment] = label[student]

    for student in sorted(records, key=label.get):
        record, lang = records[student], language[student]
        for issue in record.issues:
            if issue.template == COPY:
                args = dict(issue.args)
                entry = copied.setdefault((args["cell"], json.dumps(args["solution"].to_json(), sort_keys=True)), {
                    "cell": args["cell"], "solution": args["solution"].to_json(), "count": {}, "examples": []})
                add(entry["count"], lang)
                example(entry, student)
        if not record.checked:
            continue
        causes = attribute(record, catalogue)
        lost = {}
        for grade_id, results in record.checked.items():
            for check in results:
                row = checks.setdefault(check.id, check_row(grade_id, check))
                add(row["passed" if check.passed else "failed"], lang)
                if check.passed:
                    continue
                cause, how, names = causes[check.id]
                for name in names or (None,):
                    key = (cause, how, name)
                    entry = row["by_cause"].setdefault(key, {"cause": cause, "how": how, "mistake": name,
                                                             "count": {}, "examples": []})
                    add(entry["count"], lang)
                    example(entry, student)
                    if name is not None:
                        lost[name] = lost.get(name, 0.0) + check.max_points / len(names)
        for name, points in lost.items():
            entry = mistakes.setdefault(name, mistake_entry(course, name, catalogue.get(name)))
            add(entry["submissions"], lang)
            add(entry["points"], lang, points)
            example(entry, student)
    for grade_id, kind, max_points in cell_list(course, run, assignment):
        scores, pending = {}, {}
        for student in records:
            if (student, assignment, grade_id) in table.review:
                add(pending, language[student])
            else:
                scores.setdefault(language[student], []).append(table.points[student, assignment].get(grade_id, 0.0))
        rows = [finish(row) for row in checks.values() if row["grade_id"] == grade_id]
        cells.append({"grade_id": grade_id, "kind": kind, "max_points": max_points,
                      "scores": {lang: sorted(values) for lang, values in scores.items()},
                      "awaiting": pending, "checks": rows})
    ranked = sorted(mistakes.values(), key=lambda m: (-sum(m["points"].values()), -sum(m["submissions"].values()),
                                                      m["name"]))
    for entry in ranked:
        entry["points"] = {lang: round(points, 4) for lang, points in entry["points"].items()}
    return {"name": assignment, "title": manifest.title if manifest else assignment,
            "handed_in": handed, "judged": judged, "max_total": table.max_total(assignment),
            "totals": {lang: sorted(values) for lang, values in totals.items()}, "cells": cells,
            "mistakes": ranked, "copies": [copied[key] for key in sorted(copied)]}


def example_page(label, record):
    """Where the anonymised copy of a submission's feedback page lies, relative to the reports folder."""
    return f"feedback/{ANONYMOUS}/{label}/{record.assignment}/{record.notebook or record.assignment}.html"


def check_row(grade_id, check):
    return {"grade_id": grade_id, "id": check.id, "name": check.name, "kind": check.kind,
            "points": check.max_points, "hidden": check.hidden, "passed": {}, "failed": {}, "by_cause": {}}


def finish(row):
    """A check's row with its causes in order: mistakes (most frequent first), unexplained, not attempted, other."""
    causes = sorted(row.pop("by_cause").values(),
                    key=lambda c: (CAUSES.index(c["cause"]), -sum(c["count"].values()), c["how"], c["mistake"] or ""))
    return {**row, "causes": causes}


def mistake_entry(course, name, bug):
    sections = []
    for link in (bug.teaches if bug else ()):
        section = resolve(course.root, link)
        sections.append(section.to_json() if section else {"link": link})
    return {"name": name, "says": bug.says if bug else None, "teaches": sections, "submissions": {},
            "points": {}, "examples": []}


def cell_list(course, run, assignment):
    """[(grade_id, 'test' | 'written', max points)] of the assignment's graded cells, in notebook order."""
    kinds = {}
    for record in run.submissions.values():
        if record.assignment == assignment:
            kinds.update({g: cell.kind for g, cell in record.cells.items()})
    autograded = set(registry.max_points(assignment)) if assignment in registry.assignments() else set()
    return [(grade_id, kinds.get(grade_id, "test" if grade_id in autograded else "written"), max_points)
            for grade_id, max_points in run.table.cells[assignment]]


def write_labels(path, run, shown, reports_dir):
    """insight-labels.csv: which student each example label stands for, and their own feedback page."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["label", "student", "assignment", "feedback"])
        for (student, assignment), label in sorted(shown.items(), key=lambda item: (item[1], item[0][1])):
            page = run.submissions[student, assignment].feedback
            relative = Path(page).resolve().relative_to(reports_dir) if page and Path(page).resolve().is_relative_to(
                reports_dir) else page
            writer.writerow([label, student, assignment, str(relative) if relative else ""])

"""What the class got wrong: the instructor's insight report, written by every grading run (issue 29).

Three files of the reports folder (``grades/``), each a function of the graded run
(:data:`attnkit_grader.pipeline.REPORTS`):

- ``insight.json``: per assignment, test cell and check, how many submissions passed and failed, and why
  they failed: each catalogued mistake, the unexplained failures, the unattempted ones (:mod:`.summary`);
  the mistakes ranked by the points they cost the class, each with its explanation and where the course
  teaches the right thing (the catalogue's ``teaches``); the scores of each cell and assignment; a column
  per language across the editions. No student is named: example submissions appear as labels.
- ``insight.html``: the same as one offline page with its figures inlined (:mod:`.render`). Each example label
  links to an anonymised copy of that submission's feedback page, ``feedback/_anonymous/LABEL/...``: the
  page and those copies can be shared with teaching assistants as they are. Both are in the instructor's
  language: English, or the one ``ATTNKIT_REPORT_LANG`` names (fr, zh) when grading.
- ``insight-labels.csv``: which student each label stands for, and their own feedback page; for the
  instructor, not to be shared.

Labels are a keyed hash of the course id and the student: stable across runs, and unguessable from the
class list when the grading key ($ATTNKIT_GRADING_KEY, which also keeps the probes' inputs secret) is set.
Text a student's own code raised (an exception's message) is shown on the copies as on the original page.
"""

import json
import os
from pathlib import Path

from .. import feedback, files
from ..files import remove
from .render import _, page, report_language, templates
from .summary import ANONYMOUS, summarise, write_labels

__all__ = ["write_html", "write_json", "write_labels_csv", "grading_key"]


def grading_key():
    """The secret the labels are keyed with: the grading key, as the sandboxed grader reads it ('' if unset)."""
    from ..autograders.sandboxed import KEY_VARIABLE
    return os.environ.get(KEY_VARIABLE, "")


def key_text(language="en"):
    """What the page says of its labels, in ``language``."""
    gettext = templates(language)[2]
    if grading_key():
        return gettext(_("They are keyed with the grading key: nobody without it can tell whose work each is; "
                         "insight-labels.csv says it."))
    return gettext(_("No grading key is set ($ATTNKIT_GRADING_KEY): someone holding the class list could work out "
                     "whose work each label is; insight-labels.csv says it."))


def summarised(course, run):
    """:func:`.summary.summarise` of ``run`` with the grading key, worked out once for the three reports that read it
    (kept on the run, with the key it was made with)."""
    key = grading_key()
    kept = getattr(run, "insight", None)
    if kept is None or kept[0] != key:
        run.insight = kept = (key, summarise(course, run, key))
    return kept[1]


def write_json(course, run, path):
    summary, _ = summarised(course, run)
    Path(path).write_text(json.dumps(summary, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                          encoding="utf-8")


def write_html(course, run, path):
    """insight.html, and the anonymised copies of the feedback pages it links to (any older ones removed)."""
    path = Path(path)
    language = report_language()
    summary, shown = summarised(course, run)
    remove(path.parent / "feedback" / ANONYMOUS)
    pages = {(part["name"], label): href for part in summary["assignments"] for label, href in part["examples"].items()}
    for (student, assignment), label in shown.items():
        record = run.submissions[student, assignment]
        files.write(path.parent / pages[assignment, label], feedback.page(record.evolve(student=label),
                                                                          language=language))
    path.write_text(page(summary, key_text(language), language), encoding="utf-8")


def write_labels_csv(course, run, path):
    _, shown = summarised(course, run)
    write_labels(path, run, shown, Path(path).parent.resolve())

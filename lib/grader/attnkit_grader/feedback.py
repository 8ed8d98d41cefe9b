"""Feedback pages of the sandboxed grader: each hidden check's verdict and message, never its code.

A page shows, per graded cell, the points, and for autograded cells every check the trusted judge
decided (passed or not, its points, the message saying what to fix). The source of the hidden tests
is never shown, and the grader never reads it; the release's visible test cells can be shown on
request (``show_tests``), as students already have them. Everything that came from the student's
run (error messages, reasons) is escaped by jinja2's autoescaping: it is untrusted text. Like nbgrader's pages
once :mod:`.offline` has finished them, the page needs no script and no request (its Content-Security-Policy
allows none) and its lines wrap.
"""

import functools
import gettext
import json
from pathlib import Path

import jinja2
from attnkit import i18n

from .editions import ENGLISH, LANGUAGES

LOCALE = Path(__file__).parent / "locale"
# What the pages may load: nothing but their own inline style and images (no script, no request). nbgrader's pages get
# it too, from the kit's exporter (attnkit_grader.offline), which imports it from here.
POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.15rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; width: 100%; } td, th { padding: .3rem .5rem; vertical-align: top;
  border-bottom: 1px solid #eee; text-align: left; }
td.mark { width: 1.5rem; font-weight: bold; } .pass { color: #18794e; } .fail { color: #b42318; }
td.points { white-space: nowrap; text-align: right; }
.message { color: #555; font-size: .92rem; overflow-wrap: anywhere; }
pre { background: #f6f8fa; padding: .6rem; white-space: pre-wrap; overflow-wrap: anywhere; font-size: .85rem; }
.note { background: #fff8e1; padding: .5rem .8rem; border-left: 4px solid #f0b400; }
"""


def number(value, pending="pending"):
    """Points as short text: 2 -> '2', 1.5 -> '1.5', None (not graded yet) -> ``pending``."""
    return pending if value is None else f"{value:g}"


# The page's own sentences are gettext calls (the grader's catalog, attnkit_grader/locale, extracted by
# python -m attnkit_grader.catalogs): the page is written in the student's language (see ``language``).
# Autoescaped: every value is escaped unless marked safe, and nothing here is: names, messages and reasons
# come from the student's run.
SOURCE = """<!DOCTYPE html>
<html lang="{{ lang }}">
<head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="{{ policy }}">
<title>{{ _("%(assignment)s – feedback for %(student)s", assignment=assignment, student=student) }}</title>
<style>{{ style }}</style></head>
<body>
<h1>{{ _("%(assignment)s: feedback for %(student)s", assignment=assignment, student=student) }}</h1>
<p><strong>{{ _("Autograded: %(earned)s / %(top)s points.", earned=earned, top=top) }}</strong>
{% if manual %} {{ _("Written answers (%(cells)s) are graded by hand.", cells=manual | join(", ")) }}{% endif %}</p>
<p>{{ _("Your functions were called on fresh inputs chosen by the grader, and their results compared with the reference solution outside your notebook. Each check below says what it tested and, when it failed, what was wrong.") }}</p>
{% if issues %}
<div class="note"><p>{{ _("While grading your notebook:") }}</p><ul>{% for issue in issues %}<li>{{ issue }}</li>{% endfor %}</ul></div>
{% endif %}
{% for cell in cells %}
<h2>{{ cell.grade_id }} <small>({{ _("%(score)s / %(points)s points", score=cell.score, points=cell.max_points) }})</small></h2>
{% if cell.written %}
<p>{{ _("A written answer: graded by hand (no answer was given).") if cell.unanswered else _("A written answer: graded by hand.") }}</p>
{% elif cell.checks %}
<table>{% for check in cell.checks %}<tr><td class="mark {{ 'pass' if check.passed else 'fail' }}">{{ "\u2713" if check.passed else "\u2717" }}</td><td>{{ check.name }}{% if check.message %}<div class="message">{{ check.message }}</div>{% endif %}</td><td class="points">{{ check.points }} / {{ check.max_points }}</td></tr>{% endfor %}</table>
{% else %}
<p>{{ _("No automatic check exists for this cell: it is graded by hand.") }}</p>
{% endif %}
{% if cell.source %}
<details><summary>{{ _("The visible test cell, as released") }}</summary><pre>{{ cell.source }}</pre></details>
{% endif %}
{% endfor %}
</body>
</html>
"""


@functools.lru_cache(maxsize=64)
def _template(language, assignment):
    """(translations, the page's compiled template) for ``language`` and ``assignment``'s catalog, made once per
    process: compiling the template took 4.6 of a batch's 20 s of publishing at 102 hand-ins."""
    found = translations(language, assignment)
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, extensions=["jinja2.ext.i18n"])
    env.install_gettext_translations(found, newstyle=True)
    return found, env.from_string(SOURCE)


def translations(language, assignment=None):
    """gettext translations for a feedback page in ``language``: the grader's catalog (the page, the judge's
    frames), then ``assignment``'s own (its checks' names and hidden-check sentences: :func:`assignment_catalog`),
    then the student package's (the checks' messages, the catalogue's explanations); English: none."""
    if language == ENGLISH:
        return gettext.NullTranslations()
    grader = gettext.translation("attnkit_grader", LOCALE, languages=[language])
    own = assignment_catalog(assignment, language) if assignment else None
    if own is not None:
        grader.add_fallback(own)
    grader.add_fallback(i18n.catalog(language))
    return grader


def assignment_catalog(assignment, language):
    """The gettext catalog of an installed assignment's own sentences in ``language`` (a fresh copy: fallbacks
    are added to it), from its folder's ``locale/LANG/LC_MESSAGES/ASSIGNMENT.mo``; None when it has none."""
    from . import registry
    if assignment not in registry.assignments():
        return None
    return gettext.translation(assignment, registry.package_dir() / assignment / "locale", languages=[language],
                               fallback=False) if (registry.package_dir() / assignment / "locale" / language /
                                                   "LC_MESSAGES" / f"{assignment}.mo").is_file() else None


def language(folder):
    """The language of the hand-in in ``folder`` (submitted/STUDENT/ASSIGNMENT): the edition ``attnkit collect``
    recorded (exchange.RECORD), else the folder's own name (NAME_fr), else English."""
    if folder is None:
        return ENGLISH
    try:
        recorded = json.loads((Path(folder) / "collect.json").read_text(encoding="utf-8")).get("language")
    except (OSError, ValueError, AttributeError):
        recorded = None
    if recorded in LANGUAGES or recorded == ENGLISH:
        return recorded
    return i18n.edition_language(folder)


def page(result, release=None, show_tests=False, language=ENGLISH):
    """The HTML text of one submission's feedback, in ``language`` (en, fr, zh: the student's, see
    :func:`language`).

    ``result``: the submission's :class:`~attnkit_grader.results.SubmissionResult`; the page shows its cells
    (:class:`~attnkit_grader.results.CellResult`: score, checks) and issues. ``release``: the assignment's
    :class:`~attnkit_grader.release_cells.Release`, for the cells' order (a cell the result has no record of
    shows as pending) and, with ``show_tests``, each test cell's visible source; without it, the result's own
    cells in their order. A check's name is the grader's (the assignment's ``Spec``), translated by the
    assignment's catalog.
    """
    found, template = _template(language, result.assignment)
    translate = None if language == ENGLISH else found.gettext
    pending = found.gettext(i18n.N_("pending"))
    cells = ({grade_id: result.cells.get(grade_id, blank) for grade_id, blank in release.graded.items()}
             if release is not None else dict(result.cells))
    tests = [cell for cell in cells.values() if cell.kind == "test"]
    shown = []
    for grade_id, cell in cells.items():
        shown.append({
            "grade_id": grade_id, "score": number(cell.score, pending), "max_points": number(cell.max_points),
            "written": cell.kind == "written", "unanswered": cell.score == 0,
            "source": release.sources[grade_id] if show_tests and release is not None and cell.kind != "written"
            else None,
            "checks": [{"name": found.gettext(c.name) if c.name else "", "points": number(c.points),
                        "max_points": number(c.max_points),
                        "passed": c.passed, "message": c.text(translate)} for c in cell.checks],
        })
    return template.render(
        lang=language, assignment=result.assignment, student=result.student, style=STYLE, policy=POLICY,
        earned=number(sum(cell.score or 0.0 for cell in tests)), top=number(sum(cell.max_points for cell in tests)),
        manual=[grade_id for grade_id, cell in cells.items() if cell.kind == "written"],
        issues=result.issue_texts(translate), cells=shown)

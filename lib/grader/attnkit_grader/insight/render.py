"""The insight report as HTML: one offline page (figures inlined as PNG), or its body for the course's website.

Every value comes from the summary (:mod:`.summary`), whose words partly come from the catalogue and the
checks, and whose labels and counts come from students' work: jinja2 escapes all of it. The page's own
sentences are gettext calls with named placeholders (``_("%(count)s of %(total)s", ...)``), in the grader's
catalog. The page is English unless the instructor sets ``ATTNKIT_REPORT_LANG`` (fr, zh) when grading: then its
sentences, the checks' names and the mistakes' explanations are in that language (:func:`report_language`).
"""

import base64
import functools
import io
import os

import jinja2
from attnkit import i18n
from markupsafe import Markup, escape
from matplotlib.figure import Figure

from ..autograded_notebook import KIND_NAMES
from ..editions import ENGLISH, LANGUAGES
from ..feedback import number, translations
from ..results import Message

STYLE = """
.insight { font-family: system-ui, sans-serif; color: #222; line-height: 1.45; }
.insight table { border-collapse: collapse; width: 100%; margin: .6rem 0 1.2rem; font-size: .92rem; }
.insight td, .insight th { padding: .25rem .45rem; vertical-align: top; border-bottom: 1px solid #e4e4e4;
  text-align: left; }
.insight th { background: #f4f5f7; } .insight td.n { text-align: right; white-space: nowrap; }
.insight tr.cause td { border-bottom: none; color: #444; font-size: .88rem; } .insight tr.cause td.what { padding-left: 1.6rem; }
.insight .mistake { font-family: ui-monospace, monospace; font-weight: 600; color: #8a1c12; }
.insight .unexplained { color: #7a4d00; font-weight: 600; } .insight .quiet { color: #666; }
.insight .note { background: #f6f8fa; padding: .5rem .8rem; border-left: 4px solid #8aa4c8; }
.insight img.figure { max-width: 100%; height: auto; } .insight small { color: #555; }
.insight a.example, .insight span.example { font-family: ui-monospace, monospace; margin-right: .4rem; white-space: nowrap; }
"""

COLOURS = ["tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown"]


# The instructor's reports are English unless this names another language (the insight page; the CSV and JSON
# files, read by programs, stay English).
REPORT_VARIABLE = "ATTNKIT_REPORT_LANG"


def _(message):
    """Marks a sentence of the page for the catalog (``catalogs extract``); a function's own ``_`` translates."""
    return message


# The count columns' headers, in the page's language (a French page says « anglais », not "English").
LANGUAGE_NAMES = {ENGLISH: _("English"), "fr": _("French"), "zh": _("Chinese")}


def report_language():
    """The language of the instructor's reports: $ATTNKIT_REPORT_LANG ('fr', 'zh', 'fr_FR.UTF-8' reads as 'fr'),
    English when unset; any other value is refused, naming the variable."""
    value = os.environ.get(REPORT_VARIABLE, "").strip()
    if not value:
        return ENGLISH
    code = i18n.language_code(value)
    if code is None:
        raise ValueError(f"{REPORT_VARIABLE}: expected one of {ENGLISH}, {', '.join(LANGUAGES)}, got {value!r}")
    return code


def environment(gettext=_):
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, extensions=["jinja2.ext.i18n"])
    env.install_gettext_callables(gettext=gettext, ngettext=lambda one, many, n: one if n == 1 else many,
                                  newstyle=True)
    env.filters["number"] = number
    env.filters["percent"] = lambda share: f"{100 * share:.0f}"
    return env


BODY_SOURCE = """
<div class="insight">
<p class="note">{{ _("What the graded run says about the class, check by check: how many submissions passed, how many failed and why, the catalogued mistakes ranked by the points they cost, and the scores. Submissions are named by anonymous labels.") }}{% if key_text %} {{ key_text }}{% endif %}</p>
{% if languages | length > 1 %}<p>{{ _("The editions are reported side by side: one column per language, then all together.") }}</p>{% endif %}

<h2 id="insight-course">{{ _("The course, assignment by assignment") }}</h2>
<table>
<tr><th>{{ _("Assignment") }}</th><th class="n">{{ _("Handed in") }}</th><th class="n">{{ _("Median score") }}</th><th>{{ _("Costliest mistake") }}</th></tr>
{% for row in course %}
<tr><td><a href="#insight-{{ row.name }}">{{ row.name }}</a> <small>{{ row.title }}</small></td><td class="n">{{ row.handed }}</td>
<td class="n">{% if row.handed %}{{ row.median | number }} / {{ row.max_total | number }}{% else %}–{% endif %}</td>
<td>{% if row.top %}<span class="mistake">{{ row.top }}</span>{% else %}<span class="quiet">{{ _("none catalogued") }}</span>{% endif %}</td></tr>
{% endfor %}
</table>

<h2 id="insight-ranked">{{ _("Mistakes ranked by the points they cost the class") }}</h2>
{% if not ranked %}<p>{{ _("No failed check matched a catalogued mistake.") }}</p>{% else %}
<table>
<tr><th>#</th><th>{{ _("Mistake") }}</th><th>{{ _("Where the course teaches it") }}</th>{% for column in columns %}<th class="n">{{ column.name }}</th>{% endfor %}<th>{{ _("Examples") }}</th></tr>
{% for m in ranked %}
<tr><td class="n">{{ loop.index }}</td>
<td><span class="mistake">{{ m.name }}</span> <small>({{ m.assignment }})</small><br>{{ m.says or _("(no longer in the catalogue)") }}</td>
<td>{% for s in m.teaches %}{{ section(s) }}{% if not loop.last %}<br>{% endif %}{% endfor %}</td>
{% for column in columns %}<td class="n">{{ share(m.count_by[column.code], m.judged_by[column.code], "") }}<br><small>{{ points_lost(m.points_by[column.code]) }}</small></td>{% endfor %}
<td>{{ examples(m.examples, m.assignment) }}</td></tr>
{% endfor %}
</table>
<p><small>{{ _("A check whose numbers match two mistakes counts half for each; a mistake also costs the checks the catalogue says it fails when the submission's other checks named it (implied).") }}</small></p>
{% endif %}

{% for a in assignments %}
<h2 id="insight-{{ a.name }}">{{ a.name }}: {{ a.title }}</h2>
<p>{{ _("%(handed)s submissions handed in, %(judged)s with judged checks; %(top)s points in all.", handed=a.handed_total, judged=a.judged_total, top=(a.max_total | number)) }}</p>
<img class="figure" alt="{{ _('Score distribution of %(name)s, per cell and in all', name=a.name) }}" src="data:image/png;base64,{{ a.figure }}">
{% if a.copies %}
<h3 id="insight-{{ a.name }}-copies">{{ _("Answers flagged as copies of a known solution") }}</h3>
<p><small>{{ _("Flagged by the pre-check and never zeroed, for a person to read: a short cell has few good answers. Each cell's threshold is measured on answers written apart (python -m attnkit_grader.copies).") }}</small></p>
<table>
<tr><th>{{ _("Answer cell") }}</th><th>{{ _("Alike to") }}</th>{% for column in a.columns %}<th class="n">{{ column.name }}</th>{% endfor %}<th>{{ _("Examples") }}</th></tr>
{% for copy in a.copies %}
<tr><td>{{ copy.cell }}</td><td>{{ copy.solution_text }}</td>{% for column in a.columns %}<td class="n">{{ share(copy.count_by[column.code], a.handed_by[column.code], "") }}</td>{% endfor %}<td>{{ examples(copy.examples, a.name) }}</td></tr>
{% endfor %}
</table>
{% endif %}
{% for cell in a.cells if cell.checks %}
<h3 id="insight-{{ a.name }}-{{ cell.grade_id }}">{{ cell.grade_id }} <small>({{ _("%(points)s points", points=(cell.max_points | number)) }})</small></h3>
<table>
<tr><th>{{ _("Check") }}</th><th class="n">{{ _("Points") }}</th>{% for column in a.columns %}<th class="n">{{ column.name }}</th>{% endfor %}<th>{{ _("Examples") }}</th></tr>
{% for check in cell.checks %}
<tr><td>{{ check.name }}{% if check.hidden %} <small>({{ _("hidden") }})</small>{% endif %} <small class="quiet">{{ check.id }}, {{ check.kind_text }}</small></td><td class="n">{{ check.points | number }}</td>
{% for column in a.columns %}<td class="n">{{ share(check.failed_by[column.code], check.total_by[column.code], _("failed")) }}</td>{% endfor %}<td></td></tr>
{% for cause in check.causes %}
<tr class="cause"><td class="what" colspan="2">{{ cause_text(cause) }}</td>
{% for column in a.columns %}<td class="n">{{ share(cause.count_by[column.code], check.total_by[column.code], "") }}</td>{% endfor %}
<td>{{ examples(cause.examples, a.name) }}</td></tr>
{% endfor %}
{% endfor %}
</table>
{% endfor %}
{% endfor %}
</div>
"""

PAGE_SOURCE = """<!DOCTYPE html>
<html lang="{{ lang }}">
<head><meta charset="utf-8"><title>{{ _("What the class got wrong") }}</title>
<style>body { max-width: 72rem; margin: 2rem auto; padding: 0 1rem; } {{ style }}</style></head>
<body class="insight">
<h1>{{ _("What the class got wrong") }}</h1>
{{ body }}
</body>
</html>
"""


@functools.lru_cache(maxsize=None)
def templates(language):
    """(body, page) templates and the gettext of ``language``: the grader's catalog, then the student package's."""
    gettext = translations(language).gettext
    env = environment(gettext)
    return env.from_string(BODY_SOURCE), env.from_string(PAGE_SOURCE), gettext


def language_columns(languages, gettext=_):
    """[{code, name}] of the count columns: one per language, then 'all' when there are several."""
    columns = [{"code": code, "name": gettext(LANGUAGE_NAMES[code]) if code in LANGUAGE_NAMES else code}
               for code in languages]
    return columns + [{"code": "all", "name": gettext(_("all"))}] if len(columns) > 1 else columns


def by_column(counts, columns):
    """{column code: count} with 'all' the sum over languages and 0 where a language has none."""
    found = {column["code"]: counts.get(column["code"], 0) for column in columns}
    found["all"] = sum(counts.values())
    return found


def png(figure):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, metadata={"Software": None})
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def distribution_figure(part, languages, gettext=_):
    """The scores of the assignment (total) and of each cell, one panel each, bars stacked by language; its words
    through ``gettext``."""
    panels = [(gettext(_("total")), part["max_total"], part["totals"])] + [
        (cell["grade_id"], cell["max_points"], cell["scores"]) for cell in part["cells"]]
    columns = min(len(panels), 4)
    rows = -(-len(panels) // columns)
    figure = Figure(figsize=(3.4 * columns, 2.4 * rows))          # no pyplot: no global state
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for ax, (title, top, scores) in zip(axes, panels):
        values = sorted({v for language in languages for v in scores.get(language, [])})
        bottom = [0] * len(values)
        width = max(top, 1) / 25
        for colour, language in zip(COLOURS, languages):
            heights = [scores.get(language, []).count(v) for v in values]
            if any(heights):
                ax.bar(values, heights, width=width, bottom=bottom, color=colour, label=language)   # codes: any font
            bottom = [b + h for b, h in zip(bottom, heights)]
        ax.set_xlim(-width, top + width)
        ax.set_title(gettext(_("%(title)s (max %(top)s)")) % {"title": title, "top": number(top)}, fontsize=9)
        ax.set_xlabel(gettext(_("points")), fontsize=8)
        ax.tick_params(labelsize=7)
        ax.yaxis.get_major_locator().set_params(integer=True)
    axes[0].set_ylabel(gettext(_("submissions")), fontsize=8)
    labelled = [ax for ax in axes if ax.get_legend_handles_labels()[0]]
    if len(languages) > 1 and labelled:           # an assignment nobody handed in has no bars to name
        labelled[0].legend(fontsize=7)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    fixed_margins(figure, rows, columns)
    return png(figure)


# Margins in inches, the same for every figure: each panel's title above it, its tick labels and axis label below
# and to its left. tight_layout measured every text to find them, half the figure's cost (1 s at a hundred hand-ins).
LEFT, RIGHT, TOP, BOTTOM, ACROSS, DOWN = 0.55, 0.15, 0.3, 0.45, 0.45, 0.75


def fixed_margins(figure, rows, columns):
    """Place the ``rows`` x ``columns`` panels of ``figure`` with :data:`LEFT`... (inches) around and between them."""
    width, height = figure.get_size_inches()
    panel_width = (width - LEFT - RIGHT - ACROSS * (columns - 1)) / columns
    panel_height = (height - TOP - BOTTOM - DOWN * (rows - 1)) / rows
    figure.subplots_adjust(left=LEFT / width, right=1 - RIGHT / width, bottom=BOTTOM / height, top=1 - TOP / height,
                           wspace=ACROSS / panel_width, hspace=DOWN / panel_height)


def view(summary, language=ENGLISH):
    """The summary with the per-column counts the template shows, its checks' names and mistakes' explanations in
    ``language``."""
    languages = summary["languages"]
    gettext = templates(language)[2]
    columns = language_columns(languages, gettext)
    judged = {}
    parts = []
    for part in summary["assignments"]:
        judged[part["name"]] = by_column(part["judged"], columns)
        own = translations(language, part["name"]).gettext        # the assignment's names, the catalogue's words
        cells = []
        for cell in part["cells"]:
            checks = []
            for check in cell["checks"]:
                total = {code: check["passed"].get(code, 0) + check["failed"].get(code, 0) for code in languages}
                checks.append({**check, "name": own(check["name"]) if check["name"] else "",
                               "kind_text": gettext(KIND_NAMES[check["kind"]]) if check["kind"] in KIND_NAMES
                               else check["kind"],                       # values, structure, property
                               "failed_by": by_column(check["failed"], columns),
                               "total_by": by_column(total, columns),
                               "causes": [{**cause, "count_by": by_column(cause["count"], columns)}
                                          for cause in check["causes"]]})
            cells.append({**cell, "checks": checks})
        copied = [{**copy, "solution_text": Message.from_json(copy["solution"]).render(    # an alternative's words
                       None if language == ENGLISH else own),                             # are the assignment's
                   "count_by": by_column(copy["count"], columns)} for copy in part.get("copies", [])]
        parts.append({**part, "title": own(part["title"]), "cells": cells, "columns": columns,
                      "figure": distribution_figure(part, languages, gettext),
                      "copies": copied, "handed_by": by_column(part["handed_in"], columns),
                      "handed_total": sum(part["handed_in"].values()), "judged_total": sum(part["judged"].values())})
    mistakes = {(part["name"], m["name"]): m for part in summary["assignments"] for m in part["mistakes"]}
    ranked = []
    for entry in summary["ranked"]:
        m = mistakes[entry["assignment"], entry["name"]]
        says = translations(language, entry["assignment"]).gettext(m["says"]) if m.get("says") else m.get("says")
        ranked.append({**m, "says": says, "assignment": entry["assignment"], "points_by": by_column(m["points"], columns),
                       "count_by": by_column(m["submissions"], columns), "judged_by": judged[entry["assignment"]]})
    return {"languages": languages, "columns": columns, "assignments": parts, "ranked": ranked,
            "course": course_view(summary, language)}


def course_view(summary, language=ENGLISH):
    """One row per assignment, in the reports folder's order: how many handed in, the median total, the mistake
    that cost the class most (the course view across assignments)."""
    rows = []
    for part in summary["assignments"]:
        totals = sorted(total for values in part["totals"].values() for total in values)
        middle = len(totals) // 2
        median = (totals[middle] if len(totals) % 2 else (totals[middle - 1] + totals[middle]) / 2) if totals else 0.0
        title = translations(language, part["name"]).gettext(part["title"])    # the assignment's catalog
        rows.append({"name": part["name"], "title": title, "handed": len(totals), "median": median,
                     "max_total": part["max_total"], "top": part["mistakes"][0]["name"] if part["mistakes"] else None})
    return rows


def helpers(summary, links, teaching_base, language=ENGLISH):
    """The template's functions: example labels, a cause's words, a teaching section, a share (in ``language``)."""
    translate = templates(language)[2]

    def _(message):                         # this page's sentences, translated (the module's _ only marks them)
        return translate(message)

    pages = {(part["name"], label): href for part in summary["assignments"]
             for label, href in part.get("examples", {}).items()}

    def examples(found, assignment):
        if not links:
            return Markup(" ").join(Markup('<span class="example">{}</span>').format(label) for label in found)
        return Markup(" ").join(Markup('<a class="example" href="{}">{}</a>').format(
            pages.get((assignment, label), "#"), label) for label in found)

    def cause_text(cause):
        if cause["cause"] == "mistake":
            name = Markup('<span class="mistake">{}</span>').format(cause["mistake"])
            if cause["how"] == "implied":
                return Markup(_("%(mistake)s, implied: another check of the submission matched it")) % {
                    "mistake": name}
            return Markup(_("%(mistake)s: the numbers match this catalogued mistake")) % {"mistake": name}
        if cause["cause"] == "unexplained":
            return Markup('<span class="unexplained">{}</span>').format(
                _("unexplained: wrong in a way no catalogued mistake explains (extend the catalogue?)"))
        if cause["cause"] == "raised":
            return _("raised an exception no catalogued mistake explains")
        if cause["cause"] == "not_attempted":
            return _("not attempted: NotImplementedError, or the code never ran this far")
        return _("failed: a structure or property check (never diagnosed)")

    def section(found):
        if "heading" not in found:
            return Markup("<code>{}</code>").format(found["link"])
        template = _("Lecture: %(title)s › %(heading)s") if found["kind"] == "lecture" else \
            _("Exercise: %(title)s › %(heading)s")
        words = found.get("languages", {}).get(language, found)     # the translated notebook's own heading
        text = escape(template) % {"title": words["title"], "heading": words["heading"]}
        if teaching_base is None:
            return Markup("{} <small>({})</small>").format(text, words["notebook"])
        page, _anchor, anchor = found["link"].partition("#")
        return Markup('<a href="{}{}.html#{}">{}</a>').format(teaching_base, page, anchor, text)

    def share(count, total, word):
        if not total:
            return "–"
        text = _("%(count)s of %(total)s (%(percent)s%%)") % {"count": count, "total": total,
                                                              "percent": f"{100 * count / total:.0f}"}
        return f"{text} {word}".strip()

    def points_lost(points):
        return (_("%(points)s point lost") if points == 1 else _("%(points)s points lost")) % {"points": number(points)}

    return {"examples": examples, "cause_text": cause_text, "section": section, "share": share,
            "points_lost": points_lost}


def fragment(summary, links=True, teaching_base=None, key_text="", language=ENGLISH):
    """The report's body (a <div>, its style included), in ``language``: ``links`` makes the example labels links
    to the anonymised feedback pages; ``teaching_base``, the website's root relative to the page, makes each
    'where the course teaches it' a link (None: the notebook's name instead)."""
    if language == "zh":
        from attnkit.plotting import use_cjk_fallback
        use_cjk_fallback()                  # the figures' Chinese labels
    data = view(summary, language)
    body = templates(language)[0].render(**data, **helpers(summary, links, teaching_base, language), key_text=key_text)
    return Markup(f"<style>{STYLE}</style>") + Markup(body)


def page(summary, key_text="", language=ENGLISH):
    """The standalone insight.html of a reports folder, in ``language``."""
    return templates(language)[1].render(body=fragment(summary, links=True, key_text=key_text, language=language),
                                         style="", lang=language)

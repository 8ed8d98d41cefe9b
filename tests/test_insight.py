"""The insight report (attnkit_grader.insight): a graded run counted by check, catalogued mistake and language.

Fast: runs made by hand from the result records (no grading). The example class graded end to end is in
tests/test_grading.py (its ranked mistakes, and the site's committed copy of its insight.json).
"""

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import copy_course

from attnkit_grader import CheckResult, CellResult, Course, Message, SubmissionResult
from attnkit_grader.insight import render, summary, write_html, write_json, write_labels_csv
from attnkit_grader import registry
from attnkit_grader.pipeline import GradingRun
from attnkit_grader.precheck import COPY
from attnkit_grader.reports import ScoreTable

ROOT = Path(__file__).resolve().parents[1]
PS1 = "ps1_learnable_pe"
NOT_IMPLEMENTED = Message.make("not implemented yet: your code still raises NotImplementedError")
WRONG = Message.make("the gradient is off by up to {worst:.3g}", worst=1.0)


def checks(failing, mistakes=None, messages=None):
    """{grade_id: (CheckResult, ...)} of problem set 1: the checks in ``failing`` fail, with ``mistakes``
    {check id: names} and ``messages`` {check id: Message} (default: wrong numbers)."""
    cells = {}
    for spec in registry.describe(PS1):
        failed = spec["id"] in failing
        cells.setdefault(spec["grade_id"], []).append(CheckResult(
            spec["id"], spec["name"], 0.0 if failed else spec["points"], spec["points"], not failed, spec["kind"],
            (messages or {}).get(spec["id"], WRONG) if failed else None,
            tuple((mistakes or {}).get(spec["id"], ())) if failed else (), spec["hidden"]))
    return cells


def record(student, failing=(), mistakes=None, messages=None, status="graded"):
    cells = {g: CellResult(g, "test", sum(c.max_points for c in found), sum(c.points for c in found), tuple(found))
             for g, found in checks(failing, mistakes, messages).items()}
    return SubmissionResult(student, PS1, status, cells=cells if status == "graded" else {}, notebook=PS1,
                            feedback=None)


ZERO_GRADIENT = ("table_buffer", "table_plain_tensor", "table_frozen", "table_detached")
FROZEN = record("stu_fran", ("pe_trainable", "pe_gradient", "pe_gradient_random"),
                {"pe_gradient": ZERO_GRADIENT, "pe_gradient_random": ZERO_GRADIENT})
BUFFER = record("stu_bea", ("pe_parameters", "pe_default", "pe_trainable", "pe_gradient", "pe_gradient_random"),
                {"pe_gradient": ZERO_GRADIENT, "pe_gradient_random": ZERO_GRADIENT})
BLANK = record("stu_blake", [s["id"] for s in registry.describe(PS1)],
               messages={s["id"]: NOT_IMPLEMENTED for s in registry.describe(PS1)})
CRASH = record("stu_cass", ("pe_shape", "pe_known_table"), messages={
    "pe_shape": Message.make("your code raised {error}", error="NameError: name 'P' is not defined"),
    "pe_known_table": Message.make("your code raised {error}", error="NameError: name 'P' is not defined")})
ODD = record("stu_odd", ("pe_dropout", "pe_shape"))
CATALOGUE = {bug.name: bug for bug in registry.get(PS1).bugs}


def test_each_failure_gets_one_cause_and_the_other_checks_decide_between_mistakes_alike():
    """A zero gradient matches four catalogued mistakes; the frozen table also fails 'trainable' and nothing
    else, the buffer also loses the parameter count: each submission is given the mistake whose catalogued
    failures agree with its own, and the structural failure it implies."""
    frozen = summary.attribute(FROZEN, CATALOGUE)
    assert frozen == {"pe_gradient": ("mistake", "matched", ("table_frozen",)),
                      "pe_gradient_random": ("mistake", "matched", ("table_frozen",)),
                      "pe_trainable": ("mistake", "implied", ("table_frozen",))}
    buffer = summary.attribute(BUFFER, CATALOGUE)
    assert {cause for cause in buffer.values()} == {("mistake", "matched", ("table_buffer", "table_plain_tensor")),
                                                    ("mistake", "implied", ("table_buffer", "table_plain_tensor"))}
    assert set(summary.attribute(BLANK, CATALOGUE).values()) == {("not_attempted", "", ())}
    assert set(summary.attribute(CRASH, CATALOGUE).values()) == {("raised", "", ())}
    assert summary.attribute(ODD, CATALOGUE) == {"pe_dropout": ("unexplained", "", ()),
                                                 "pe_shape": ("other", "", ())}


def test_a_check_matching_more_mistakes_goes_to_the_one_that_explains_the_most_checks():
    """The sign-flipped index matches i - j alone on the index checks and, with reversed rows, on the attention:
    the attention's failures go to i - j too, the one mistake that explains them all."""
    bugs = {bug.name: bug for bug in registry.get("ps2_relative_pe").bugs}
    both = ("index_i_minus_j", "relative_rows_reversed")
    results = [CheckResult("index_example", "x", 0, 1, False, "values", WRONG, ("index_i_minus_j",)),
               CheckResult("attn_worked", "x", 0, 1, False, "values", WRONG, both),
               CheckResult("attn_self_parity", "x", 0, 1, False, "values", WRONG, both)]
    flipped = SubmissionResult("stu_sim", "ps2_relative_pe", "graded", cells={
        "test_index": CellResult("test_index", "test", 1, 0, tuple(results[:1])),
        "test_rel_attention": CellResult("test_rel_attention", "test", 2, 0, tuple(results[1:]))})
    assert set(summary.attribute(flipped, bugs).values()) == {("mistake", "matched", ("index_i_minus_j",))}


def release_copy(course, edition, student, extra=None):
    """A submission of problem set 1 handed in from ``edition``'s release (as a student of that language)."""
    folder = course.assignment_dir("submitted", PS1, student)
    folder.mkdir(parents=True)
    shutil.copy(course.assignment_dir("release", edition) / f"{PS1}.ipynb", folder / f"{PS1}.ipynb")
    if extra:
        (folder / "collect.json").write_text(json.dumps(extra))


@pytest.fixture
def run(tmp_path):
    """A class of six, one of whom wrote in French and one whose hand-in attnkit collect recorded as Chinese."""
    course = Course(copy_course(tmp_path / "course"))
    for language in ("", "fr", "zh"):                           # where the catalogue's teaches links lead,
        (course.root / "course" / language).mkdir(parents=True)  # in every language
        for lecture in (ROOT / "course" / language).glob("*.ipynb"):
            shutil.copy(lecture, course.root / "course" / language)
    copied = FROZEN.evolve(issues=[Message.make(COPY, notebook=f"{PS1}.ipynb", cell="pe_answer", alike=100.0,
                                                solution=Message.make("the notebook's solution"))])
    records = {r.student: r for r in (copied, BUFFER, BLANK, CRASH, ODD, SubmissionResult("stu_nobody", PS1, "missing"))}
    evil = record("<script>alert(1)</script>", ("pe_dropout",), messages={
        "pe_dropout": Message.make("your code raised {error}", error="ValueError: <img src=x onerror=alert(1)>")})
    records[evil.student] = evil
    for student in records:
        if student != "stu_nobody":
            release_copy(course, PS1, student)
    shutil.rmtree(course.assignment_dir("submitted", PS1, "stu_bea"))
    release_copy(course, f"{PS1}_fr", "stu_bea")
    (course.assignment_dir("submitted", PS1, "stu_cass") / "collect.json").write_text(json.dumps({"language": "zh"}))
    cells = [(spec, points) for spec, points in registry.max_points(PS1).items()] + [("experiment_written", 2.0)]
    table = ScoreTable({PS1: cells}, {(s, PS1): {**r.scores(), "experiment_written": 0.0} for s, r in records.items()},
                       {("stu_fran", PS1, "experiment_written")})
    reports = tmp_path / "grades"
    for student, result in records.items():
        if result.status == "graded":
            result.feedback = str(reports / "feedback" / student / PS1 / f"{PS1}.html")
    return course, GradingRun([PS1], {(s, PS1): r for s, r in records.items()}, table, {}), reports


def test_the_summary_counts_by_check_mistake_and_language(run):
    course, graded, _ = run
    found, shown = summary.summarise(course, graded)
    assert found["languages"] == ["en", "fr", "zh"]                 # Béa's notebook is French, Cass's recorded Chinese
    [part] = found["assignments"]
    assert part["handed_in"] == {"en": 4, "fr": 1, "zh": 1} and part["judged"] == part["handed_in"]
    rows = {row["id"]: row for cell in part["cells"] for row in cell["checks"]}
    assert rows["pe_gradient"]["failed"] == {"en": 2, "fr": 1} and rows["pe_gradient"]["passed"] == {"en": 2, "zh": 1}
    causes = {(c["cause"], c["mistake"]): c["count"] for c in rows["pe_gradient"]["causes"]}
    assert causes == {("mistake", "table_frozen"): {"en": 1}, ("mistake", "table_buffer"): {"fr": 1},
                      ("mistake", "table_plain_tensor"): {"fr": 1}, ("not_attempted", None): {"en": 1}}
    dropout = {(c["cause"], c["mistake"]): c["count"] for c in rows["pe_dropout"]["causes"]}
    assert dropout == {("unexplained", None): {"en": 1}, ("raised", None): {"en": 1},
                       ("not_attempted", None): {"en": 1}}
    mistakes = {m["name"]: m for m in part["mistakes"]}
    assert mistakes["table_frozen"]["points"] == {"en": 1.0}           # 0.5 + 0.25 matched, 0.25 implied
    assert mistakes["table_buffer"]["points"] == {"fr": 0.875}         # half of 1.75: two mistakes alike
    assert [r["name"] for r in found["ranked"]] == ["table_frozen", "table_buffer", "table_plain_tensor"]
    assert mistakes["table_frozen"]["teaches"][0]["heading"] == "8. Preview: learned and relative encodings"
    written = next(cell for cell in part["cells"] if cell["grade_id"] == "experiment_written")
    assert written["awaiting"] == {"en": 1} and sum(map(len, written["scores"].values())) == 5
    assert set(shown) <= {(s, PS1) for s in graded.table.students} and ("stu_nobody", PS1) not in shown
    assert part["copies"] == [{"cell": "pe_answer", "count": {"en": 1}, "examples": [shown["stu_fran", PS1]],
                               "solution": {"template": "the notebook's solution", "args": {}}}]


def test_the_page_names_no_student_escapes_their_text_and_links_anonymised_feedback(run):
    course, graded, reports = run
    reports.mkdir()
    for name, writer in [("insight.html", write_html), ("insight.json", write_json),
                         ("insight-labels.csv", write_labels_csv)]:
        writer(course, graded, reports / name)
    html, data = (reports / "insight.html").read_text(), (reports / "insight.json").read_text()
    assert "Answers flagged as copies of a known solution" in html and "the notebook&#39;s solution" in html
    assert "stu_" not in html and "stu_" not in data and "alert(1)" not in html + data
    assert "http" not in re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", html)          # offline
    labels = dict(line.split(",")[:2] for line in (reports / "insight-labels.csv").read_text().splitlines()[1:])
    assert len(labels) == 6 and set(labels.values()) == set(graded.table.students) - {"stu_nobody"}
    for label, student in labels.items():
        href = f"feedback/_anonymous/{label}/{PS1}/{PS1}.html"
        assert f'href="{href}"' in html
        copy = (reports / href).read_text()
        assert f"feedback for {label}" in copy and "stu_" not in copy and "alert(1)</" not in copy
    evil = summary.labels(["<script>alert(1)</script>"], course.course_id)["<script>alert(1)</script>"]
    assert "&lt;img src=x onerror" in (reports / f"feedback/_anonymous/{evil}/{PS1}/{PS1}.html").read_text()
    (reports / "feedback" / "_anonymous" / "S-stale").mkdir()
    write_html(course, graded, reports / "insight.html")
    assert not (reports / "feedback" / "_anonymous" / "S-stale").exists()


def test_labels_are_stable_keyed_and_distinct():
    first = summary.labels(["ada", "bob"], "course")
    assert first == summary.labels(["bob", "ada"], "course") and len(set(first.values())) == 2
    assert summary.labels(["ada"], "course", key="secret")["ada"] != first["ada"]
    assert all(re.fullmatch(r"S-[0-9a-f]{6,}", label) for label in first.values())
    many = summary.labels([f"student{i}" for i in range(3000)], "course")
    assert len(set(many.values())) == 3000                 # colliding labels grow until they differ


def test_the_site_rendering_links_the_course_and_not_the_feedback(run):
    course, graded, _ = run
    found, _ = summary.summarise(course, graded)
    body = str(render.fragment(found, links=False, teaching_base="../"))
    assert 'href="../lectures/03_positional_encoding.html#8-preview-learned-and-relative-encodings"' in body
    assert "feedback/_anonymous" not in body and 'class="example"' in body
    assert "French" in body and "Chinese" in body                   # a column per language, named in English


def test_the_report_is_in_the_language_the_instructor_sets(run, monkeypatch, capsys):
    """ATTNKIT_REPORT_LANG=fr: the page's sentences, a check's name (the assignment's catalog) and a mistake's
    explanation (the catalogue's) in French, and the anonymised copies too; zh in Chinese; unset: English; any
    other value is refused before grading, naming the variable."""
    from markupsafe import escape

    from attnkit import i18n
    from attnkit_grader.cli import main
    from attnkit_grader.feedback import translations

    course, graded, reports = run
    reports.mkdir()
    trainable = next(spec["name"] for spec in registry.describe(PS1) if spec["id"] == "pe_trainable")
    frozen = CATALOGUE["table_frozen"].says
    said = {"fr": ("Ce que la classe a manqué", "Les erreurs classées selon les points qu'elles coûtent à la classe"),
            "zh": ("全班出错的地方", "按全班失分排序的错误")}
    for language, sentences in said.items():
        monkeypatch.setenv(render.REPORT_VARIABLE, language)
        write_html(course, graded, reports / "insight.html")
        html = (reports / "insight.html").read_text(encoding="utf-8")
        assert f'<html lang="{language}">' in html and all(s in html for s in sentences)     # trusted: not escaped
        assert str(escape(translations(language, PS1).gettext(trainable))) in html and str(escape(trainable)) not in html
        assert str(escape(i18n.translate(frozen, language))) in html and str(escape(frozen)) not in html
        for english in ("What the class got wrong", "Mistakes ranked", "Where the course teaches it", "points lost",
                        ">English<"):                                  # a count column named in the page's language
            assert english not in html, (language, english)
        copy = next((reports / "feedback" / "_anonymous").rglob("*.html")).read_text(encoding="utf-8")
        assert f'<html lang="{language}">' in copy
    monkeypatch.delenv(render.REPORT_VARIABLE)
    write_html(course, graded, reports / "insight.html")
    assert "What the class got wrong" in (reports / "insight.html").read_text(encoding="utf-8")
    monkeypatch.setenv(render.REPORT_VARIABLE, "de")
    with pytest.raises(ValueError, match="ATTNKIT_REPORT_LANG: expected one of en, fr, zh, got 'de'"):
        write_html(course, graded, reports / "insight.html")
    assert main(["--root", str(course.root), "grade", PS1]) == 2
    assert "ATTNKIT_REPORT_LANG" in capsys.readouterr().err


def test_an_assignment_nobody_handed_in_draws_its_figure_without_a_warning():
    """A course-wide report holds assignments nobody handed in yet: their panels have no bars, and the figure
    must come without matplotlib's 'No artists with labels' warning (seen in the Formgrader's Autograde dialog)."""
    import warnings

    from attnkit_grader.insight.render import distribution_figure

    empty = {"max_total": 11, "totals": {}, "cells": [{"grade_id": "test_pe_table", "max_points": 2, "scores": {}}]}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert distribution_figure(empty, ["en", "fr"])


def test_a_translated_report_names_the_assignments_and_the_course_s_sections_in_its_language(run):
    """The French and Chinese reports give each assignment's title (its catalog's), each check's kind, and each
    'where the course teaches it' as the translated lecture or edition says it (its heading at the same place),
    with that notebook's path; the English words stay in the English report only."""
    course, graded, _ = run
    found, _ = summary.summarise(course, graded)
    section = found["assignments"][0]["mistakes"][0]["teaches"][0]
    assert section["heading"] == "8. Preview: learned and relative encodings"
    assert section["languages"]["fr"]["notebook"] == "course/fr/03_positional_encoding.ipynb"
    english = ("Learnable positional encoding", "Lecture 3 — Positional encoding",
               "8. Preview: learned and relative encodings", "(course/03_positional_encoding.ipynb)",
               ", values</small>")                                            # a check's kind
    said = {"fr": ("Encodage positionnel appris", "Cours 3 — L&#39;encodage positionnel",
                   "(course/fr/03_positional_encoding.ipynb)", ", valeurs</small>"),
            "zh": ("可学习的位置编码", "第 3 讲 — 位置编码", "(course/zh/03_positional_encoding.ipynb)", ", 数值</small>",
                   ", 结构</small>")}
    assert all(words in str(render.fragment(found, links=False)) for words in english)
    for language, words in said.items():
        body = str(render.fragment(found, links=False, language=language))
        assert all(w in body for w in words), language
        assert not [w for w in english if w in body], language
        assert section["languages"][language]["heading"] in body.replace("&#39;", "'")


def test_every_section_the_catalogue_names_is_found_in_every_translation():
    """A translation of a lecture or an edition has the English notebook's headings, in order: a heading added or
    merged in one language only would leave that language's report pointing at the English words (or, counted
    wrong, at another section), so every catalogued 'teaches' link must resolve in French and Chinese too."""
    from attnkit_grader.teaching import resolve

    links = {link for name in registry.assignments() for bug in registry.get(name).bugs for link in bug.teaches}
    assert links
    for link in sorted(links):
        section = resolve(ROOT, link)
        assert section is not None, link
        assert [code for code, *_ in section.languages] == ["fr", "zh"], (
            f"{link}: the translated notebook has not the English one's headings ({section.notebook})")


def test_the_score_figure_s_words_are_the_page_s_language():
    """Every word drawn in the score distribution (the total's panel title included, which was drawn in English
    whatever the page's language) comes through the page's gettext."""
    asked = []

    def gettext(message):
        asked.append(message)
        return message

    part = {"max_total": 11, "totals": {"fr": [3.0]}, "cells": [{"grade_id": "test_pe_table", "max_points": 2,
                                                                  "scores": {"fr": [1.0]}}]}
    render.distribution_figure(part, ["fr"], gettext)
    assert {"total", "points", "submissions", "%(title)s (max %(top)s)"} <= set(asked)
    assert render.translations("zh").gettext("total") == "总分"

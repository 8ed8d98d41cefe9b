"""nbgrader's feedback page, finished by attnkit_grader.offline, read in Chromium with the network off and scripts off
(as JupyterLab's HTML viewer shows an untrusted page): every formula drawn, no request made, no verdict line cut at the
right edge. The page is nbgrader's own feedback template over problem set 2's solved release, with one failing
check's line as the grader writes it. Then the same page for a hand-in of the Chinese edition, its verdicts judged
on a known mistake, read in Chinese, and for one of the French edition, in French, through the kit's exporter: nbgrader's frame too.
Screenshots: build/browser-artifacts/feedback-offline.png, feedback-zh.png, feedback-fr.png (the verdicts),
feedback-zh-frame.png, feedback-fr-frame.png (the score and the table of contents).
"""

import os

import nbformat
import nbgrader
from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from traitlets.config import Config

from attnkit_grader import offline
from conftest import ARTIFACTS, ROOT, offline_page

VERDICT = ("FAIL [0/1] relative_position_index(4, 6, 2) is the matrix shown in the exercise\n"
           "       -> relative_position_index(4, 6, 2): 20 entries differ; first at index (0, 1): got 1, expected 3. "
           "These are exactly the numbers of a known mistake: the index uses i - j (query minus key) instead of j - i, "
           "so every distance has the wrong sign\n")


def nbgrader_feedback_page(verdict=VERDICT, language=None):
    """The HTML nbgrader's generate_feedback writes for the solved release of problem set 2 (its template, its
    preprocessors' resources), the first test cell's output ``verdict`` (a failing one). ``language``: a hand-in of
    that edition, written through the kit's exporter (attnkit_grader.offline, as nbgrader_config.py sets it) from
    the copy the sandboxed grader marks with the hand-in's language; None: nbgrader's own HTML exporter."""
    notebook = nbformat.read(ROOT / "examples" / "example_class" / "ref_solution" / "ps2_relative_pe" /
                             "ps2_relative_pe.ipynb", as_version=4)
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            meta["score"] = meta["points"]
        if meta.get("grade_id") == "test_index":
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=verdict)]
    templates = os.path.join(os.path.dirname(nbgrader.__file__), "server_extensions", "formgrader")
    config = Config()
    config.HTMLExporter.template_name = "feedback"
    config.HTMLExporter.extra_template_basedirs = [os.path.join(templates, "templates")]
    config.HTMLExporter.extra_template_paths = [os.path.join(templates, "static", "node_modules", "bootstrap", "dist",
                                                             "css")]
    if language is not None:
        notebook.metadata[offline.LANGUAGE_KEY] = {"language": language}
    exporter = (HTMLExporter if language is None else offline.FeedbackExporter)(config=config)
    exporter.register_preprocessor(CSSHTMLHeaderPreprocessor, enabled=True)
    page, _ = exporter.from_notebook_node(notebook, resources={"nbgrader": {
        "notebook": "ps2_relative_pe", "score": 20, "max_score": 20, "late_penalty": 0}})
    return page


def test_the_finished_feedback_page_is_complete_in_chromium_with_no_network_and_no_script(tmp_path, browser):
    raw = nbgrader_feedback_page()
    assert "cdnjs.cloudflare.com" in raw and "$$" in raw          # what nbgrader writes: MathJax from a CDN
    text, typeset = offline.finish(raw)
    assert typeset, f"MathJax was not found: {offline.WHERE}"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "ps2_relative_pe.html"
    path.write_text(text, encoding="utf-8")
    with offline_page(browser, path, 51) as page:
        verdict = page.locator("pre", has_text="These are exactly the numbers of a known mistake")
        verdict.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "feedback-offline.png"))
        width = page.viewport_size["width"]
        line = verdict.bounding_box()
        assert line["x"] + line["width"] <= width, "the verdict runs past the right edge"
        assert verdict.evaluate("e => e.scrollWidth <= e.clientWidth"), "the verdict is cut: its line does not wrap"
        assert "every distance has the wrong sign" in verdict.inner_text()
        shown = page.locator("body").inner_text()
        assert "\\operatorname" not in shown and "$$" not in shown


def read_edition_page(tmp_path, browser, language, heading):
    """The catalogue's i - j mistake of ps2_relative_pe on nbgrader's page in ``language``, read offline:
    (bug, checks, the verdict under the index's test cell (found by its ``heading``), the score and table of
    contents); screenshots feedback-LANGUAGE.png (the verdicts) and feedback-LANGUAGE-frame.png (the frame)."""
    from attnkit_grader import catalogue, registry
    from attnkit_grader.autograded_notebook import verdict_lines
    from attnkit_grader.judging import variants

    manifest = registry.get("ps2_relative_pe")
    bug = next(b for b in manifest.bugs if b.name == "index_i_minus_j")
    checks = catalogue.graded(manifest.name, variants.variant(manifest, bug))["test_index"]
    assert not all(check.passed for check in checks)
    verdict = verdict_lines(checks, sum(check.max_points for check in checks), language, manifest.name)
    path = tmp_path / "ps2_relative_pe.html"
    path.write_text(nbgrader_feedback_page(verdict, language), encoding="utf-8")
    with offline_page(browser, path, 51) as page:
        shown_verdict = page.locator("pre", has_text=heading)
        shown_verdict.scroll_into_view_if_needed()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"feedback-{language}.png"))
        page.locator("#toc").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"feedback-{language}-frame.png"))
        assert shown_verdict.evaluate("e => e.scrollWidth <= e.clientWidth"), "a verdict line is cut"
        frame = page.locator("#toc").inner_text() + page.locator(".panel-heading").first.inner_text()
        return bug, checks, shown_verdict.inner_text(), frame


def test_a_chinese_hand_ins_feedback_page_reads_in_chinese(tmp_path, browser):
    """nbgrader's page of a hand-in from ps2_relative_pe_zh as attnkit release-feedback hands it back: under the
    index's test cell, the grader's verdicts on the catalogue's i - j mistake, written in Chinese (the frame, each
    check's name, the known mistake's explanation), no English sentence of the grader left."""
    from attnkit import i18n
    from attnkit_grader.feedback import translations

    bug, checks, shown, frame = read_edition_page(tmp_path, browser, "zh", "由评分程序在笔记本之外检查")
    assert "测试单元格" in frame and "得分：" in frame and "Test cell" not in frame and "Score" not in frame, frame
    zh = translations("zh", "ps2_relative_pe").gettext
    assert "未通过" in shown and i18n.translate(bug.says, "zh") in shown, shown
    assert all(zh(check.name) in shown and zh(check.name) != check.name for check in checks), shown
    for english in ("Checked by the grader", "FAILED", "passed", bug.says, "known mistake"):
        assert english not in shown, english


def test_a_french_hand_ins_feedback_page_reads_in_french(tmp_path, browser):
    """The same page for a hand-in of ps2_relative_pe_fr: nbgrader's frame and the grader's verdicts in French, the
    colon set after a no-break space, no verdict line cut."""
    _, _, shown, frame = read_edition_page(tmp_path, browser, "fr", "Vérifié par le correcteur en dehors du notebook")
    assert "ÉCHOUÉE" in shown and "\u00a0: " in shown and "FAILED" not in shown, shown
    assert "Cellule de test" in frame and "note\u00a0:" in frame and "Test cell" not in frame, frame

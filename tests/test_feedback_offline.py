"""Feedback pages complete offline (attnkit_grader.offline): formulas typeset to SVG when the page is written, no
script and no request left, lines that wrap; students' TeX cannot link, style or script; without MathJax the page
is written all the same, with its TeX as text and a note. Chromium reads a finished page with the network off in
tests_browser/ (make test-browser), as JupyterLab's HTML viewer shows it.
"""

import re

import pytest

from attnkit_grader import offline

PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>feedback</title>
<script src="https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.7/latest.js?config=TeX-AMS_CHTML-full,Safe"></script>
<link rel="stylesheet" href="https://example.org/style.css">
</head><body>
<div class="text_cell_render"><p>Scores $e_{ij} = q_i \\cdot k_j / \\sqrt{d}$ and</p>
<p>$$\\alpha_{ij} = \\operatorname{softmax}_j(e_{ij}), \\qquad z_i = \\sum_j \\alpha_{ij} v_j$$</p>
<p>a price of \\$5, and \\(\\mathbf{P} \\in \\mathbb{R}^{L \\times d}\\).</p></div>
<div class="output_area"><pre>FAIL [0/1] the sum $x$ of a code output stays as it is</pre></div>
<code>$also code$</code>
</body></html>"""

needs_mathjax = pytest.mark.skipif(offline.mathjax() is None, reason=f"no MathJax to typeset with: {offline.WHERE}")


def svgs(text):
    return re.findall(r"<svg\b.*?</svg>", text, re.S)


@needs_mathjax
def test_formulas_become_svg_and_the_page_needs_no_script_and_no_request():
    text, typeset = offline.finish(PAGE)
    assert typeset and len(svgs(text)) == 3
    assert "<script" not in text and "<link" not in text
    assert f'content="{offline.POLICY}"' in text and "default-src 'none'" in offline.POLICY
    assert "e_{ij}" not in text and "\\operatorname" not in text and "\\mathbb" not in text
    assert "the sum $x$ of a code output" in text and "<code>$also code$</code>" in text     # code and outputs alone
    assert 'display="true"' in text                                                     # $$...$$ is a display
    assert "white-space: pre-wrap" in text and "attnkit-offline-note" not in text.split("</style>")[-1]


@needs_mathjax
def test_pages_of_one_assignment_are_typeset_together(tmp_path):
    paths = [tmp_path / f"{student}.html" for student in ("ada", "blake")]
    for path in paths:
        path.write_text(PAGE, encoding="utf-8")
    assert offline.finish_files(paths)
    first, second = (path.read_text(encoding="utf-8") for path in paths)
    assert svgs(first) == svgs(second) and len(svgs(first)) == 3


@needs_mathjax
def test_a_students_tex_cannot_link_style_script_or_load_anything():
    hostile = ["\\href{javascript:alert(1)}{x}", "\\style{background:url(https://example.org/x)}{y}", "\\class{evil}{z}",
               "\\cssId{top}{w}", "\\require{html}\\href{https://example.org}{v}", "\\unicode{x41}", "\\bbox[red]{u}",
               "</p><script>alert(1)</script>", "\\def\\a{\\a}\\a"]
    page = "<html><body><p>" + " ".join(f"${tex.replace('<', '&lt;')}$" for tex in hostile) + "</p></body></html>"
    text, _ = offline.finish(page)
    body = text.split("<body>", 1)[1]
    assert "<script" not in body and "<a" not in body and "href" not in body and "url(" not in body
    assert not re.search(r"\son\w+=", body) and 'id="top"' not in body and 'class="evil"' not in body
    assert all(re.fullmatch(r'style="\s*(vertical-align|min-width|margin-left|margin-right): -?[0-9.]+ex;?\s*"', style)
               for style in re.findall(r'style="[^"]*"', body))


def test_what_mathjax_writes_is_cut_down_to_its_own_drawing():
    written = ('<mjx-container class="MathJax" jax="SVG"><svg style="vertical-align: -0.5ex;" onload="alert(1)" '
               'xmlns="http://www.w3.org/2000/svg" width="2ex" viewBox="0 0 10 10"><a href="javascript:alert(1)">'
               '<path d="M0 0"/></a><script>alert(1)</script><g fill="red" style="fill:url(#x)"><path d="M1 1"/></g>'
               '<foreignObject><div>x</div></foreignObject></svg></mjx-container>')
    cleaned = offline._clean_svg(written)
    assert "onload" not in cleaned and "<a" not in cleaned and "script" not in cleaned and "url(" not in cleaned
    assert "foreignObject" not in cleaned and "<div" not in cleaned
    assert '<g fill="red"><path d="M1 1"></path></g>' in cleaned and 'style="vertical-align: -0.5ex;"' in cleaned
    assert offline._clean_svg("not <svg") is None


def test_without_mathjax_the_page_shows_tex_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv(offline.MATHJAX_VARIABLE, str(tmp_path / "no-mathjax"))
    assert offline.mathjax() is None
    text, typeset = offline.finish(PAGE)
    assert not typeset and not svgs(text)
    assert "$e_{ij} = q_i \\cdot k_j / \\sqrt{d}$" in text and offline.NO_MATHJAX in text
    assert "<script" not in text and "<link" not in text and offline.POLICY in text and "pre-wrap" in text
    monkeypatch.setenv("PATH", str(tmp_path))                 # MathJax there, but no Node.js to run it
    monkeypatch.delenv(offline.MATHJAX_VARIABLE)
    assert offline.mathjax() is None and offline.typeset([["x", False]]) == [None]
    page = tmp_path / "page.html"
    page.write_text("<html><body><p>no formula here</p></body></html>")
    assert offline.finish_files([page])                        # nothing to typeset: nothing missing


@needs_mathjax
@pytest.mark.slow
def test_nbgraders_own_generate_feedback_writes_the_finished_page(tmp_path):
    """The course's nbgrader_config.py names the kit's exporter: `nbgrader generate_feedback`, as an instructor types
    it (and as the Formgrader's Generate Feedback button runs it), writes the page attnkit release-feedback
    releases: formulas typeset, no script, no CDN, nothing to load."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from attnkit_grader import pipeline
    from conftest import ROOT, copy_course

    root = copy_course(tmp_path / "course")
    handed = tmp_path / "handed" / "bug_no_clip" / "ps2_relative_pe"
    shutil.copytree(ROOT / "examples" / "example_class" / "bug_no_clip" / "ps2_relative_pe", handed)
    pipeline.grade(root, ["ps2_relative_pe"], handed.parent.parent, grader="nbgrader")
    page = root / "feedback" / "bug_no_clip" / "ps2_relative_pe" / "ps2_relative_pe.html"
    first = page.read_text(encoding="utf-8")                   # the grader's own run (the course API)
    shutil.rmtree(root / "feedback")
    done = subprocess.run([sys.executable, "-m", "nbgrader", "generate_feedback", "ps2_relative_pe", "--student",
                           "bug_no_clip", "--force"], cwd=root, capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    text = page.read_text(encoding="utf-8")
    assert "<script" not in text and "cdnjs" not in text and "$$" not in text
    assert len(svgs(text)) >= 6 and offline.typeset_in(page) and offline.POLICY in text
    assert len(svgs(first)) == len(svgs(text))
    assert '<html lang="en">' in text and "Test cell</a> (Score: " in text
    # The same hand-in recorded by collect as a French one: nbgrader's frame in French.
    (root / "submitted" / "bug_no_clip" / "ps2_relative_pe" / "collect.json").write_text('{"language": "fr"}')
    done = subprocess.run([sys.executable, "-m", "nbgrader", "generate_feedback", "ps2_relative_pe", "--student",
                           "bug_no_clip", "--force"], cwd=root, capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    french = page.read_text(encoding="utf-8")
    assert '<html lang="fr">' in french and "Cellule de test</a> (note\u00a0: " in french
    assert "Test cell</a>" not in french and "(Score: " not in french        # the notebook itself is English


# ------------------------------------------------------------------------------------- nbgrader's frame, per language

FRAME = ("Score", "Test cell", "Comments", "Comment", "Written response", "Coding free-response", "Student's answer",
         "Student's task", "Grade cell", "Task", "(Top)", "Late submission", "In [", "Out[")   # nbgrader's words


def graded_copy(language=None):
    """An autograded notebook as nbgrader's GetGrades leaves it for the feedback page: a written answer with a
    comment, a code answer, a test cell with the verdict lines, each with its score; ``language``: the hand-in's,
    as the sandboxed grader marks its copy."""
    import nbformat
    from attnkit_grader.autograded_notebook import verdict_lines
    from attnkit_grader.results import CheckResult, Message

    def graded(grade_id, points, score, solution, grade=True, comment=None):
        return {"nbgrader": {"grade_id": grade_id, "grade": grade, "solution": solution, "locked": not solution,
                             "points": points, "score": score, "comment": comment, "schema_version": 3}}
    wrong = Message.make("{what} should have shape {expected}, got {actual}", what="the output", expected="(2, 3)",
                         actual="(3, 2)")
    checks = (CheckResult("c1", "the output's shape", 0.0, 1.0, False, kind="structure", message=wrong),)
    code = language or "en"
    answer = nbformat.v4.new_code_cell("def f(X):\n    return X.T", metadata=graded("answer", 0, None, True, False,
                                                                                       "Regardez la forme."))
    test = nbformat.v4.new_code_cell("checks.score()", metadata=graded("test_shape", 1.0, 0.0, False),
                                     execution_count=2)
    test.outputs = [nbformat.v4.new_output("stream", name="stdout", text=verdict_lines(checks, 1.0, code))]
    why = nbformat.v4.new_markdown_cell("Parce que.", metadata=graded("why", 2.0, 1.5, True, comment="Bien vu."))
    node = nbformat.v4.new_notebook(cells=[answer, test, why])
    if language:
        node.metadata["attnkit"] = {"language": language}
    return node


def nbgrader_exporter():
    """The kit's exporter configured as nbgrader's GenerateFeedback configures its HTML exporter."""
    import os
    import nbgrader.converters.generate_feedback as generate_feedback
    from traitlets.config import Config
    nbgrader_folder = os.path.dirname(os.path.dirname(generate_feedback.__file__))
    config = Config()
    config.HTMLExporter.template_name = "feedback"
    config.HTMLExporter.extra_template_basedirs = [os.path.join(nbgrader_folder, "server_extensions", "formgrader",
                                                                "templates")]
    config.HTMLExporter.extra_template_paths = [os.path.join(nbgrader_folder, "server_extensions", "formgrader",
                                                             "static", "node_modules", "bootstrap", "dist", "css")]
    return offline.FeedbackExporter(config=config)


def frame_page(node, assignment="ps1_learnable_pe", late=0.0):
    resources = {"nbgrader": {"notebook": "ps1_learnable_pe", "student": "ada", "assignment": assignment,
                              "score": 1.5, "max_score": 3.0, "late_penalty": late}}
    html, _ = nbgrader_exporter().from_notebook_node(node, resources=resources)
    return html


def visible_text(html):
    """The page's words as a reader sees them: no tags, no style, no code or outputs (the student's own text and the
    check names stay as written)."""
    from bs4 import BeautifulSoup
    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(["style", "script", "svg", "pre", "code", "title"]):
        tag.decompose()
    for tag in soup.select(".input_area, .output_area"):
        tag.decompose()
    return " ".join(soup.get_text(" ").split())


SAID = {   # nbgrader's frame as the page says it, per language
    "en": ('<html lang="en">', "ps1_learnable_pe (Score: 1.5 / 3.0)", "Test cell</a> (Score: 0.0 / 1.0)",
           "Written response</a> (Score: 1.5 / 2.0)", "Comments:",
           "Student's answer", "(Top)", "Late submission penalty (Score: -0.5)"),
    "fr": ('<html lang="fr">', "ps1_learnable_pe (note\u00a0: 1.5 / 3.0)", "Cellule de test", "Réponse écrite",
           "Commentaires\u00a0:", "Votre réponse", "(Haut de page)", "Pénalité de retard (note\u00a0: -0.5)",
           "Vérifié par le correcteur en dehors du notebook\u00a0: 0 / 1 points", "Cellule de test</a> (note\u00a0: 0.0 / 1.0)"),
    "zh": ('<html lang="zh">', "ps1_learnable_pe（得分：1.5 / 3.0）", "测试单元格", "书面回答", "评语：", "你的答案",
           "（回到顶部）", "迟交扣分（得分：-0.5）", "由评分程序在笔记本之外检查：0 / 1 分", "测试单元格</a>（得分：0.0 / 1.0）"),
}


@pytest.mark.parametrize("language", ["en", "fr", "zh"])
def test_nbgraders_feedback_frame_is_in_the_hand_ins_language(language):
    """nbgrader's feedback page written through the kit's exporter (as GenerateFeedback configures it), for a copy
    the sandboxed grader marked with the hand-in's language: the frame (score, table of contents, cell headings,
    comments, prompts) in that language, no English word of nbgrader's frame left in a French or Chinese page;
    the English page says what nbgrader's own says."""
    html = frame_page(graded_copy(language), late=0.5)
    for text in SAID[language]:
        assert text in html, (text, visible_text(html)[:2000])
    if language != "en":
        shown = visible_text(html)
        import re
        found = [word for word in FRAME if re.search(r"(?<!\w)" + re.escape(word) + r"(?!\w)", shown)]
        assert not found, (found, shown[:2000])
    assert "Bien vu." in html and "Parce que." in html           # the student's and the grader's own text


@pytest.mark.parametrize("assignment,language", [("ps1_learnable_pe_zh", "zh"), ("ps1_learnable_pe_fr", "fr"),
                                                 ("ps1_learnable_pe", "en")])
def test_an_unmarked_copy_takes_the_editions_language_from_its_folder(tmp_path, assignment, language):
    """A copy plain nbgrader autograded (no mark of the kit's grader): the language collect recorded for the hand-in
    (submitted/STUDENT/ASSIGNMENT/collect.json), else the edition named by the assignment's folder."""
    from traitlets.config import Config
    exporter = nbgrader_exporter()
    resources = {"nbgrader": {"student": "ada", "assignment": assignment}}
    assert exporter.language(graded_copy(), resources) == language
    folder = tmp_path / "submitted" / "ada" / "ps1_learnable_pe"
    folder.mkdir(parents=True)
    (folder / "collect.json").write_text('{"language": "zh"}')
    exporter.config = Config({"CourseDirectory": {"root": str(tmp_path)}})
    assert exporter.language(graded_copy(), {"nbgrader": {"student": "ada", "assignment": "ps1_learnable_pe"}}) == "zh"
    assert exporter.language(graded_copy("fr"), {"nbgrader": {"student": "ada", "assignment": "x"}}) == "fr"


def test_without_mathjax_the_note_is_in_the_pages_language(tmp_path, monkeypatch):
    """The note saying why formulas are left as TeX is in the language of the page (its <html lang>, which the kit's
    feedback template sets to the hand-in's)."""
    monkeypatch.setenv(offline.MATHJAX_VARIABLE, str(tmp_path / "no-mathjax"))
    said = {"fr": "Les formules de cette page sont affichées en source TeX", "zh": "本页中的公式以 TeX 源码显示",
            "en": offline.NO_MATHJAX}
    for language, note in said.items():
        text, typeset = offline.finish(PAGE.replace("<html>", f'<html lang="{language}">'))
        assert not typeset and note in text, (language, text[:600])
        if language != "en":
            assert offline.NO_MATHJAX not in text
    assert offline.NO_MATHJAX in offline.finish(PAGE)[0]            # no language said: English


def test_the_exporter_finds_the_course_from_the_autograded_copys_folder(tmp_path):
    """Without a course root in the configuration (the Formgrader's exporter): the copy's folder,
    autograded/STUDENT/ASSIGNMENT, names the course, whose submitted/ folder holds what collect recorded; a path
    too short for that is English, not an error."""
    folder = tmp_path / "submitted" / "ada" / "ps1_learnable_pe"
    folder.mkdir(parents=True)
    (folder / "collect.json").write_text('{"language": "fr"}')
    exporter = nbgrader_exporter()
    ids = {"student": "ada", "assignment": "ps1_learnable_pe"}
    copy = str(tmp_path / "autograded" / "ada" / "ps1_learnable_pe")
    assert exporter.language(graded_copy(), {"nbgrader": ids, "metadata": {"path": copy}}) == "fr"
    assert exporter.language(graded_copy(), {"nbgrader": ids, "metadata": {"path": "x"}}) == "en"
    assert exporter.language(graded_copy(), {}) == "en"

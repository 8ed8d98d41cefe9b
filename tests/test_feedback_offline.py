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

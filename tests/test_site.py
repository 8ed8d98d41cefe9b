"""The website's own checks, without building it: the link check finds what would break offline, the
pages link each notebook to where the student edition holds it (site/linkcheck.py, site/conf.py), and the
README, a front door, links into the guide's pages by paths that resolve.
The built site in a browser: tests_site/ (make test-site)."""

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "site"))
from linkcheck import check_markdown, check_site, markdown_anchors, slug  # noqa: E402
from attnkit_grader import teaching  # noqa: E402

README = ROOT / "README.md"
GUIDE = ROOT / "site" / "pages" / "en" / "guide"


def _write(path, html):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<!DOCTYPE html><html><head></head><body>{html}</body></html>", encoding="utf-8")


def _site_build():
    """site/build.py as a module (a script of site/, not PyPI's ``build``)."""
    spec = importlib.util.spec_from_file_location("site_build", ROOT / "site" / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    return build


def test_link_check_reports_broken_links_missing_images_anchors_and_remote_assets(tmp_path):
    _write(tmp_path / "en" / "index.html",
           '<a href="lectures/one.html#scores">ok</a> <a href="lectures/two.html">gone</a>'
           '<a href="lectures/one.html#nowhere">bad anchor</a> <a href="https://example.org/">not followed</a>'
           '<img src="_images/fig.png"> <img src="_images/missing.png">'
           '<script src="https://cdn.example.org/mathjax.js"></script>'
           '<link rel="stylesheet" href="https://fonts.example.org/font.css">'
           '<link rel="alternate" hreflang="fr" href="../fr/index.html">'
           '<a href="#top" id="top">self</a> <a href="../../outside.html">out</a>')
    _write(tmp_path / "en" / "lectures" / "one.html", '<h2 id="scores">Scores</h2><a href="../index.html">up</a>')
    (tmp_path / "en" / "_images").mkdir()
    (tmp_path / "en" / "_images" / "fig.png").write_bytes(b"\x89PNG")
    _write(tmp_path / "en" / "_static" / "template.html", '<a href="{{ pathto(x) }}">a theme template</a>')
    problems = check_site(tmp_path)
    expected = ("lectures/two.html", "#nowhere", "_images/missing.png", "cdn.example.org", "fonts.example.org",
                "../fr/index.html", "outside.html")
    assert len(problems) == len(expected), problems
    for fragment in expected:
        assert sum(fragment in problem for problem in problems) == 1, (fragment, problems)
    assert all(problem.startswith("en/index.html:") for problem in problems)


def test_link_check_passes_a_sound_site(tmp_path):
    _write(tmp_path / "index.html", '<a href="en/">English</a>')
    _write(tmp_path / "en" / "index.html", '<a href="../index.html#x">home</a><span id="y"></span>')
    (tmp_path / "index.html").write_text('<html><body id="x"><a href="en/">en</a></body></html>')
    assert check_site(tmp_path) == []


def _load_conf(monkeypatch, language):
    """site/conf.py loaded as Sphinx would for the site in ``language``, with a hub and a Binder of the course's."""
    monkeypatch.setenv("SITE_LANGUAGE", language)
    monkeypatch.setenv("SITE_HUB_URL", "https://hub.example.edu/")
    monkeypatch.setenv("SITE_BINDER_URL", "https://binder.example.edu/v2/gh/course/edition/HEAD")
    spec = importlib.util.spec_from_file_location(f"site_conf_{language}", ROOT / "site" / "conf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def conf(monkeypatch):
    """site/conf.py for the French site."""
    return _load_conf(monkeypatch, "fr")


def test_launch_links_open_the_notebook_where_the_student_edition_holds_it(conf):
    (hub, hub_url, hub_note), (binder, binder_url, binder_note) = conf.launch_links("lectures/01_self_attention")
    assert hub_url == "https://hub.example.edu/hub/user-redirect/lab/tree/course/fr/01_self_attention.ipynb"
    assert binder_url == ("https://binder.example.edu/v2/gh/course/edition/HEAD"
                          "?urlpath=lab%2Ftree%2Fcourse%2Ffr%2F01_self_attention.ipynb")
    assert hub_note == binder_note == "non testé"
    (_, hub_url, hub_note), (_, binder_url, _) = conf.launch_links("assignments/ps1_learnable_pe")
    # the French edition: where nbgrader fetches it on the hub, where the student edition holds it on Binder
    assert hub_url.endswith("/lab/tree/ps1_learnable_pe_fr/ps1_learnable_pe.ipynb")
    assert "Assignment List" in hub_note
    assert binder_url.endswith("release%2Fps1_learnable_pe_fr%2Fps1_learnable_pe.ipynb")
    assert conf.launch_links("index") == []


@pytest.mark.parametrize("language, edition", [("en", "ps2_relative_pe"), ("fr", "ps2_relative_pe_fr"),
                                               ("zh", "ps2_relative_pe_zh")])
def test_an_assignments_launch_links_open_the_languages_edition(monkeypatch, language, edition):
    conf = _load_conf(monkeypatch, language)
    (_, hub_url, _), (_, binder_url, _) = conf.launch_links("assignments/ps2_relative_pe")
    assert hub_url == f"https://hub.example.edu/hub/user-redirect/lab/tree/{edition}/ps2_relative_pe.ipynb"
    assert binder_url == ("https://binder.example.edu/v2/gh/course/edition/HEAD"
                          f"?urlpath=lab%2Ftree%2Frelease%2F{edition}%2Fps2_relative_pe.ipynb")
    assert conf.html_theme_options["header_dropdown_text"] == {"en": "More", "fr": "Plus", "zh": "更多"}[language]


def test_each_language_stages_its_edition_of_the_assignments_under_the_same_name(tmp_path, monkeypatch):
    build = _site_build()
    for folder in ("course", "course/fr", "course/zh"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "01_lecture.ipynb").write_text(folder)
    for name, edition in [("ps1_learnable_pe", "ps1_learnable_pe"), ("ps1_learnable_pe", "ps1_learnable_pe_fr"),
                          ("ps1_learnable_pe", "ps1_learnable_pe_zh"), ("ps2_relative_pe", "ps2_relative_pe"),
                          ("ps2_relative_pe", "ps2_relative_pe_fr")]:           # no Chinese edition of ps2
        (tmp_path / "release" / edition).mkdir(parents=True)
        (tmp_path / "release" / edition / f"{name}.ipynb").write_text(edition)
    monkeypatch.setattr(build, "ROOT", tmp_path)
    for language in ("en", "fr"):
        staged = build.stage(language, tmp_path / "staged")
        assert sorted(p.name for p in (staged / "assignments").iterdir()) == ["ps1_learnable_pe.ipynb",
                                                                             "ps2_relative_pe.ipynb"]
        for name in ("ps1_learnable_pe", "ps2_relative_pe"):
            wanted = name if language == "en" else f"{name}_{language}"
            assert (staged / "assignments" / f"{name}.ipynb").read_text() == wanted
    with pytest.raises(SystemExit, match="release/ps2_relative_pe_zh/ps2_relative_pe.ipynb"):
        build.stage("zh", tmp_path / "staged")


def test_language_switch_links_the_same_page_or_the_home_page(conf, tmp_path):
    for language in ("en", "fr", "zh"):
        (tmp_path / language / "lectures").mkdir(parents=True)
        (tmp_path / language / "index.md").write_text("# home")
    (tmp_path / "en" / "lectures" / "01_self_attention.ipynb").write_text("{}")
    (tmp_path / "fr" / "lectures" / "01_self_attention.ipynb").write_text("{}")

    class App:
        srcdir = str(tmp_path / "fr")

    switch = conf.language_switch(App, "lectures/01_self_attention")
    assert switch == [("en", "English", "../../en/lectures/01_self_attention.html", False),
                      ("fr", "Français", "../../fr/lectures/01_self_attention.html", True),
                      ("zh", "中文", "../../zh/index.html", False)]
    assert conf.language_switch(App, "index")[2] == ("zh", "中文", "../zh/index.html", False)


def test_the_readme_is_a_front_door_whose_links_into_the_guide_resolve():
    """Every relative link of README.md names a file of the repository and, for a page of the guide, one of its
    headings; every page of the guide is linked; the README stays under 8 kB (the guide holds the rest)."""
    problems = check_markdown(README, ROOT)
    assert not problems, "broken links in README.md:\n" + "\n".join(problems)
    linked = {link.split("#")[0] for link in re.findall(r"\]\((site/pages/[^)\s]+)\)", README.read_text())}
    pages = {page.relative_to(ROOT).as_posix() for page in GUIDE.glob("*.md")}
    assert pages <= linked, f"guide pages the README does not link: {sorted(pages - linked)}"
    assert README.stat().st_size <= 8 * 1024, f"README.md is {README.stat().st_size} bytes: move the detail to the guide"


def test_the_markdown_link_check_finds_missing_files_and_anchors(tmp_path):
    (tmp_path / "guide").mkdir()
    (tmp_path / "guide" / "page.md").write_text("# For instructors\n\n## On the course's `make hub`\n\n"
                                                "```bash\n# not a heading\n```\n\n## Reports\n\n## Reports\n")
    (tmp_path / "README.md").write_text(
        "[ok](guide/page.md) [ok](guide/page.md#on-the-courses-make-hub) [ok](guide/page.md#reports-1) "
        "[ok](#a-heading) [ok](https://example.org/x.md#nowhere) `[code](gone.md)`\n\n# A heading\n\n"
        "[bad](guide/gone.md) [bad](guide/page.md#not-a-heading) [bad](guide/page.md#reports-2) "
        "![bad](missing.png) [bad](#nowhere) [bad](../outside.md)\n")
    assert markdown_anchors(tmp_path / "guide" / "page.md") == {"for-instructors", "on-the-courses-make-hub",
                                                                 "reports", "reports-1"}
    problems = check_markdown(tmp_path / "README.md", tmp_path)
    expected = ("guide/gone.md", "#not-a-heading", "#reports-2", "missing.png", "'#nowhere'", "../outside.md")
    assert len(problems) == len(expected), problems
    for fragment in expected:
        assert sum(fragment in problem for problem in problems) == 1, (fragment, problems)
    assert slug("Written answers and the three editions") == "written-answers-and-the-three-editions"


def test_the_readme_picture_is_the_lectures_figure():
    """site/_static/'s PNG is the lecture's committed figure, byte for byte (make site rewrites it)."""
    build = _site_build()
    assert build.README_FIGURE_FILE.read_bytes() == build.lecture_figure(*build.README_FIGURE), \
        "the README's picture differs from the lecture's figure: run make site and commit the PNG"
    assert build.README_FIGURE_FILE.relative_to(ROOT).as_posix() in README.read_text()


def test_the_instructors_page_shows_the_example_class_insight_report_from_the_committed_json(tmp_path):
    """Staging the English pages renders guide/insight.json (kept current by tests/test_grading.py) into the
    raw block of the instructors' page: the ranked mistakes, a figure, and 'where the course teaches it' as
    links to the site's lectures and assignments whose headings exist; no grading, no feedback links."""
    build = _site_build()
    staged = build.stage("en", tmp_path / "staged")
    page = (staged / "guide" / "instructors.md").read_text()
    assert "```{raw} html\n:file: insight.html\n```" in page
    html = (staged / "guide" / "insight.html").read_text()
    summary = json.loads((ROOT / "site" / "pages" / "en" / "guide" / "insight.json").read_text())
    for entry in summary["ranked"]:
        assert f'<span class="mistake">{entry["name"]}</span>' in html
    assert "data:image/png;base64," in html and "feedback/_anonymous" not in html
    links = set(re.findall(r'href="\.\./((?:lectures|assignments)/[^"#]+)\.html#([^"]+)"', html))
    teaches = {s["link"] for part in summary["assignments"] for m in part["mistakes"] for s in m["teaches"]}
    assert len(links) == len(teaches)
    for page_name, anchor in links:                      # each a heading of the page, as the site anchors it
        folder, name = page_name.split("/")
        found = teaching.headings(ROOT / teaching.notebook_path(folder, name))
        assert anchor in {slug(heading) for _, heading in found}, (page_name, anchor)
    # MyST leaves math out of a heading's anchor (the built lecture 1 has id "4-why-divide-by-"); a code
    # host and the catalogue's links keep its letters, so the site rewrites those links
    assert slug("4. Why divide by $\\sqrt d$?") == "4-why-divide-by-"
    build.stage("en", tmp_path / "staged")                       # staged again: kept, not removed as stale
    assert (staged / "guide" / "insight.html").read_text() == html

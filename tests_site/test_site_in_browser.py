"""The course's website in a real browser: Debian's Chromium, driven by Playwright, reads the built site.

Run by ``make test-site`` after ``make site`` (it reads build/site/, or $SITE_DIR). The site is served from
127.0.0.1 and every request to any other host is refused and reported: pages must render offline. For each
language, the home page and one lecture: the language switch leads to the same page in the other languages,
every figure of the notebook is an image the browser decoded, every formula was typeset by MathJax with no
TeX left over, and the lecture links to the course's JupyterHub and to Binder; one assignment, shown in
the language's own edition (release/NAME_LANG/), whose launch links open that edition; and the search page,
which finds a word of the language (in Chinese, one that only a word segmenter indexes); and the guide, whose
students' page is in every language and whose other pages, in English only, switch to the other languages'
home pages. Screenshots: build/site-artifacts/.
"""

import functools
import json
import os
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(os.environ.get("SITE_DIR", ROOT / "build" / "site"))
ARTIFACTS = ROOT / "build" / "site-artifacts"
CHROMIUM = os.environ.get("ATTNKIT_CHROMIUM", "/usr/bin/chromium")
HUB_URL = os.environ.get("SITE_HUB_URL", "http://localhost:8000").rstrip("/")
LANGUAGES = {"en": ROOT / "course", "fr": ROOT / "course" / "fr", "zh": ROOT / "course" / "zh"}
LECTURE = "03_positional_encoding"      # figures, inline and display formulas
ASSIGNMENT = "ps2_relative_pe"         # formulas; its edition in each language: release/NAME[_LANG]/
MORE = {"en": "More", "fr": "Plus", "zh": "更多"}   # the header's menu of the pages it has no room for


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    """The built site over HTTP on 127.0.0.1 (a free port); its base URL."""
    if not (SITE / "en" / "index.html").exists():
        pytest.fail(f"no site in {SITE}: run make site first (make test-site does)")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(SITE)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"no Chromium at {CHROMIUM} (make site-browser-tools installs Debian's chromium)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        # --no-sandbox: Chromium's own sandbox refuses to run as root (CI runs as root)
        # and the others keep it from calling Google's services at start (refused here, and not the site's)
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run"])
        yield browser
        browser.close()


@pytest.fixture
def page(browser, server):
    """A page whose requests may go to the local server only; the others are refused and listed."""
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    context.set_default_timeout(30_000)
    remote, failed = [], []

    def route(request_route):
        if request_route.request.url.startswith(server + "/"):
            request_route.continue_()
        else:
            remote.append(request_route.request.url)
            request_route.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("response", lambda response: response.status >= 400 and failed.append(
        f"{response.status} {response.url}"))
    page.remote_requests, page.failed_responses = remote, failed
    yield page
    context.close()
    assert not remote, f"the page asked for files from the network: {remote}"
    assert not failed, f"files the site lacks: {failed}"


def figures_in(notebook):
    """How many PNG figures the notebook's outputs hold."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return sum("image/png" in output.get("data", {}) for cell in cells for output in cell.get("outputs", []))


def title_of(notebook):
    """The text of the notebook's first heading."""
    first = "".join(json.loads(notebook.read_text(encoding="utf-8"))["cells"][0]["source"])
    return first.splitlines()[0].lstrip("#").strip()


def heading(page):
    """The page's title as the reader sees it."""
    return page.inner_text("article h1").strip().rstrip("#").strip()


def language_switch(page):
    """{language code: href} of the switch's links in the header, and the code marked current (the theme
    repeats the header's items in the sidebar it opens on narrow screens: that copy must say the same)."""
    switches = page.eval_on_selector_all("nav.site-language-switch", """navs => navs.map(nav => [
        Array.from(nav.querySelectorAll('a')).map(a => [a.getAttribute('lang'), a.href]),
        Array.from(nav.querySelectorAll('.current')).map(s => s.lang)])""")
    assert switches and all(switch == switches[0] for switch in switches), switches
    visible = page.locator("nav.site-language-switch").first.is_visible()
    assert visible, "the language switch is not visible"
    links, current = switches[0]
    return dict(links), current


def wait_for_mathjax(page):
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    page.evaluate("() => MathJax.startup.promise")


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_home_page_lists_the_lectures_and_switches_language(page, server, language):
    page.goto(f"{server}/{language}/index.html")
    page.screenshot(path=str(ARTIFACTS / f"{language}-home.png"), full_page=True)
    assert page.get_attribute("html", "lang").startswith({"zh": "zh"}.get(language, language))
    links, current = language_switch(page)
    assert current == [language]
    assert set(links) == set(LANGUAGES) - {language}
    for other, href in links.items():
        assert href == f"{server}/{other}/index.html", (other, href)
    listed = page.eval_on_selector_all("article a.reference.internal", "links => links.map(a => a.href)")
    for lecture in sorted(LANGUAGES[language].glob("*.ipynb")):
        assert f"{server}/{language}/lectures/{lecture.stem}.html" in listed, lecture.name
    for assignment in ("ps1_learnable_pe", "ps2_relative_pe"):
        assert f"{server}/{language}/assignments/{assignment}.html" in listed, assignment
    more = page.locator(".navbar-header-items button[aria-controls^='pst-nav-more-links']")
    assert more.count() == 1 and more.is_visible() and more.inner_text().strip() == MORE[language], \
        more.all_inner_texts()


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_a_lecture_shows_its_figures_and_typeset_formulas(page, server, language):
    notebook = LANGUAGES[language] / f"{LECTURE}.ipynb"
    page.goto(f"{server}/{language}/lectures/{LECTURE}.html")
    wait_for_mathjax(page)
    page.screenshot(path=str(ARTIFACTS / f"{language}-{LECTURE}.png"), full_page=True)
    assert heading(page) == title_of(notebook)

    images = page.eval_on_selector_all(
        "article img", "imgs => imgs.map(i => [i.getAttribute('src'), i.complete, i.naturalWidth])")
    drawn = [src for src, complete, width in images if complete and width > 0]
    assert len(drawn) == len(images), f"figures the browser could not show: {[i for i in images if i[0] not in drawn]}"
    assert len(drawn) == figures_in(notebook) > 0

    typeset = page.locator("article mjx-container").count()
    display = page.locator("article mjx-container[display='true']").count()
    source = page.locator("article .math").count()
    assert typeset >= source > 0 and display > 0, (typeset, display, source)
    assert page.locator("article mjx-merror").count() == 0, "MathJax reported a TeX error"
    text = page.inner_text("article")
    leftovers = [marker for marker in ("$$", "\\(", "\\[", "\\frac", "\\mathbf") if marker in text]
    assert not leftovers, f"TeX left untypeset on the page: {leftovers}"

    launch = page.eval_on_selector_all(".site-launch a", "links => links.map(a => a.href)")
    edition_path = f"course/{LECTURE}.ipynb" if language == "en" else f"course/{language}/{LECTURE}.ipynb"
    assert launch[0] == f"{HUB_URL}/hub/user-redirect/lab/tree/{edition_path}", launch
    assert "binder" in launch[1] and edition_path.replace("/", "%2F") in launch[1], launch

    links, current = language_switch(page)
    assert current == [language] and set(links) == set(LANGUAGES) - {language}
    for other, href in links.items():
        assert href == f"{server}/{other}/lectures/{LECTURE}.html", (other, href)
        page.goto(href)
        assert heading(page) == title_of(LANGUAGES[other] / f"{LECTURE}.ipynb")


# A word of each language's lectures and where it must be found: in Chinese, a word only a word segmenter
# (jieba) puts in the index, since Chinese writes no spaces between words.
SEARCHES = {"en": ("positional", "lectures/03_positional_encoding"),
            "fr": ("requêtes", "lectures/01_self_attention"),
            "zh": ("注意力", "lectures/01_self_attention")}


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_search_finds_a_word_of_the_language(page, server, language):
    word, expected = SEARCHES[language]
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{server}/{language}/search.html?q={word}")
    try:        # Sphinx's search fills the summary line when it has listed every result
        page.wait_for_function("() => document.querySelector('#search-results .search-summary')?.innerText",
                               timeout=10_000)
    except Exception:  # noqa: BLE001 - a search that never finished: the assertions below say why
        pass
    page.screenshot(path=str(ARTIFACTS / f"{language}-search.png"))
    assert not errors, f"the search page raised: {errors}"
    found = page.eval_on_selector_all("#search-results ul.search li a", "links => links.map(a => a.href)")
    assert any(f"/{language}/{expected}.html" in href for href in found), (word, found)


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_an_assignment_page_shows_the_languages_edition(page, server, language):
    edition = ASSIGNMENT if language == "en" else f"{ASSIGNMENT}_{language}"
    notebook = ROOT / "release" / edition / f"{ASSIGNMENT}.ipynb"
    page.goto(f"{server}/{language}/assignments/{ASSIGNMENT}.html")
    wait_for_mathjax(page)
    page.screenshot(path=str(ARTIFACTS / f"{language}-{ASSIGNMENT}.png"))
    assert heading(page) == title_of(notebook)
    assert page.locator("article mjx-container").count() > 0
    assert page.locator("article mjx-merror").count() == 0, "MathJax reported a TeX error"
    text = page.inner_text("article")
    leftovers = [marker for marker in ("$$", "\\(", "\\[", "\\frac") if marker in text]
    assert not leftovers, f"TeX left untypeset on the page: {leftovers}"
    if language == "en":
        assert '"' in text and "«" not in text, "the English text typeset with French quotes"

    launch = page.eval_on_selector_all(".site-launch a", "links => links.map(a => a.href)")
    # on the hub, nbgrader fetches the edition into ~/EDITION/; on Binder, it is in the student edition's release/
    assert launch[0] == f"{HUB_URL}/hub/user-redirect/lab/tree/{edition}/{ASSIGNMENT}.ipynb", launch
    assert "binder" in launch[1] and f"release%2F{edition}%2F{ASSIGNMENT}.ipynb" in launch[1], launch

    links, current = language_switch(page)
    assert current == [language] and set(links) == set(LANGUAGES) - {language}
    for other, href in links.items():
        assert href == f"{server}/{other}/assignments/{ASSIGNMENT}.html", (other, href)
        page.goto(href)
        assert heading(page) == title_of(ROOT / "release" / (ASSIGNMENT if other == "en" else f"{ASSIGNMENT}_{other}")
                                          / f"{ASSIGNMENT}.ipynb")


GUIDE_TITLES = {"en": "For students", "fr": "Pour les étudiants", "zh": "学生指南"}


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_the_students_guide_is_in_every_language(page, server, language):
    page.goto(f"{server}/{language}/index.html")
    listed = page.eval_on_selector_all("article a.reference.internal", "links => links.map(a => a.href)")
    assert f"{server}/{language}/guide/students.html" in listed
    page.goto(f"{server}/{language}/guide/students.html")
    page.screenshot(path=str(ARTIFACTS / f"{language}-guide-students.png"), full_page=True)
    assert heading(page) == GUIDE_TITLES[language]
    assert page.locator("article table").count() == 1          # the lectures
    links, current = language_switch(page)
    assert current == [language] and set(links) == set(LANGUAGES) - {language}
    for other, href in links.items():
        assert href == f"{server}/{other}/guide/students.html", (other, href)


def test_the_guide_pages_in_english_only_switch_to_the_other_home_pages(page, server):
    page.goto(f"{server}/en/index.html")
    listed = page.eval_on_selector_all("article a.reference.internal", "links => links.map(a => a.href)")
    guide = sorted(p.stem for p in (ROOT / "site" / "pages" / "en" / "guide").glob("*.md"))
    for name in guide:
        assert f"{server}/en/guide/{name}.html" in listed, name
    page.goto(f"{server}/en/guide/instructors.html")
    page.screenshot(path=str(ARTIFACTS / "en-guide-instructors.png"), full_page=True)
    assert heading(page) == "For instructors"
    assert page.locator("article h2").count() >= 5 and page.locator("article pre").count() >= 3
    links, _ = language_switch(page)
    assert links == {"fr": f"{server}/fr/index.html", "zh": f"{server}/zh/index.html"}, links

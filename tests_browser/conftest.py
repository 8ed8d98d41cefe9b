"""The course's hub in a real browser: Playwright driving Debian's Chromium (never a downloaded browser).

Run by ``make test-browser`` as root (it creates the course's Unix users and starts JupyterHub). Each run
starts the course afresh (``hub/course.py setup --reset``), starts the hub and stops it at the end.
Screenshots go to build/browser-artifacts/ (every step's, named in the tests); on a failure, a screenshot
of every open page and a copy of the hub's log are added there too.
"""

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "hub"))
import course as hub  # noqa: E402 - hub/course.py, the course's setup script

ARTIFACTS = ROOT / "build" / "browser-artifacts"
EDITION = ROOT / "build" / "student-edition"
CHROMIUM = os.environ.get("ATTNKIT_CHROMIUM", "/usr/bin/chromium")
URL = f"http://127.0.0.1:{hub.PORT}"


def pytest_report_header(config):
    """Chromium and the rest of what the course takes from Debian (no lock pins them), in the test log."""
    from attnkit_grader import locks

    return "system: " + "; ".join(locks.system_versions())


def pytest_configure(config):
    if os.geteuid() != 0:
        pytest.exit("tests_browser: run as root (make test-browser): they create users and start JupyterHub", 2)


@pytest.fixture(scope="session")
def course():
    """The course set up afresh and its hub running; stopped (and its log kept) at the end."""
    if ARTIFACTS.exists():
        shutil.rmtree(ARTIFACTS)
    ARTIFACTS.mkdir(parents=True)
    subprocess.run([sys.executable, str(ROOT / "hub" / "course.py"), "setup", "--reset", "--edition", str(EDITION)],
                   check=True)
    subprocess.run([sys.executable, str(ROOT / "hub" / "course.py"), "start"], check=True)
    try:
        yield hub
    finally:
        subprocess.run([sys.executable, str(ROOT / "hub" / "course.py"), "stop"], check=False)
        if hub.log_file().exists():
            shutil.copy2(hub.log_file(), ARTIFACTS / "jupyterhub.log")


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"no Chromium at {CHROMIUM} (make browser-tools installs Debian's chromium)")
    with sync_playwright() as playwright:
        # --no-sandbox: Chromium's own sandbox refuses to run as root
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


OPEN_PAGES = []


@pytest.fixture
def new_page(browser):
    """Pages in a fresh browser context each (one person each); closed after the test."""
    contexts = []

    def make():
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        context.set_default_timeout(60_000)
        contexts.append(context)
        page = context.new_page()
        OPEN_PAGES.append(page)
        return page

    yield make
    OPEN_PAGES.clear()
    for context in contexts:
        context.close()


@contextlib.contextmanager
def offline_page(browser, path, least_formulas):
    """A page reading the file ``path`` as a student would, offline and with no script; its formulas are checked
    typeset (at least ``least_formulas``, the first one drawn, not an empty box) before the block runs, and
    after it that the page fetched nothing but files."""
    requests = []
    context = browser.new_context(java_script_enabled=False, offline=True, viewport={"width": 900, "height": 1000})
    try:
        page = context.new_page()
        page.on("request", lambda request: requests.append(request.url))
        page.goto(Path(path).as_uri())
        formulas = page.locator("mjx-container svg")
        assert formulas.count() >= least_formulas, f"{formulas.count()} typeset formulas, expected {least_formulas}"
        box = formulas.first.bounding_box()
        assert box and box["width"] > 2 and box["height"] > 2
        yield page
    finally:
        context.close()
    assert [url for url in requests if not url.startswith("file://")] == []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        name = item.name.replace("/", "_").replace("[", "-").replace("]", "")
        for number, page in enumerate(OPEN_PAGES):
            try:
                page.screenshot(path=str(ARTIFACTS / f"FAILED-{name}-{number}.png"), full_page=True)
            except Exception:  # noqa: BLE001 - a closed page has nothing to show
                pass
        if hub.log_file().exists():
            shutil.copy2(hub.log_file(), ARTIFACTS / "jupyterhub.log")

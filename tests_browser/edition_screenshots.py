"""Screenshots of a French and a Chinese problem set run with a known mistake, as the student sees it.

For each edition, the released notebook (release/NAME_fr, release/NAME_zh) is answered with one catalogued mistake
(the catalogue's harness puts the mistake's code in the first answer cell), run top to bottom by a Jupyter kernel
in a folder named as the student's fetched copy (NAME_fr: the edition's language), written as HTML with its
formulas typeset offline, and photographed in Debian's Chromium with scripts and the network off. Nothing
here starts the hub; the hub's own browser tests photograph the French edition there.

    .venv/bin/python tests_browser/edition_screenshots.py [--assignment NAME] [--bug BUG] [OUT]

OUT defaults to build/browser-artifacts/editions; the paths written are printed.
"""

import argparse
import os
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbconvert import HTMLExporter

from attnkit_grader import catalogue, offline, registry

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("ATTNKIT_CHROMIUM", "/usr/bin/chromium")


def run_edition(assignment, bug, edition, work):
    """The released notebook of ``edition`` answered with ``bug``, executed in ``work``/NAME_edition: its HTML."""
    folder = work / f"{assignment}_{edition}"
    folder.mkdir(parents=True)
    found = [known for known in registry.get(assignment).bugs if known.name == bug]
    if not found:
        raise SystemExit(f"--bug: {bug!r} is no catalogued mistake of {assignment}")
    notebook = catalogue.answered_notebook(assignment, found[0], edition=edition)
    env = {**os.environ, "ATTNKIT_LANG": ""}          # the folder's name decides, as on a student's machine
    client = NotebookClient(notebook, timeout=600, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(folder)}}, env=env)
    client.execute()
    nbformat.write(notebook, folder / f"{assignment}.ipynb")
    html, _ = HTMLExporter().from_notebook_node(notebook)
    page, typeset = offline.finish(html)
    if not typeset:
        print(f"{edition}: formulas left as TeX (MathJax not found: make setup)", file=sys.stderr)
    path = folder / f"{assignment}.html"
    path.write_text(page, encoding="utf-8")
    return path


def photograph(pages, out):
    """One screenshot per HTML page, at its first failing check; the paths."""
    from playwright.sync_api import sync_playwright

    shots = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            for name, path in pages:
                context = browser.new_context(java_script_enabled=False, offline=True,
                                              viewport={"width": 1100, "height": 900})
                page = context.new_page()
                page.goto(path.as_uri())
                failing = page.locator("pre", has_text="FAIL").first
                if failing.count():
                    failing.scroll_into_view_if_needed()
                shot = out / f"{name}.png"
                page.screenshot(path=str(shot))
                context.close()
                shots.append(shot)
        finally:
            browser.close()
    return shots


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=ROOT / "build" / "browser-artifacts" / "editions")
    parser.add_argument("--assignment", default="ps2_relative_pe")
    parser.add_argument("--bug", default="scale_missing", help="a catalogued mistake of the assignment")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        pages = [(f"{args.assignment}_{edition}-{args.bug}", run_edition(args.assignment, args.bug, edition,
                                                                          Path(work)))
                 for edition in ("fr", "zh")]
        for name, path in pages:
            (args.out / f"{name}.html").write_bytes(path.read_bytes())
        for shot in photograph([(name, args.out / f"{name}.html") for name, _ in pages], args.out):
            print(shot)


if __name__ == "__main__":
    main()

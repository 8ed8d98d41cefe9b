"""Build the course's website from the committed executed notebooks, offline; then check its links.

    python site/build.py --mathjax node_modules/mathjax [--out build/site] [--languages en fr zh]

One Sphinx build per language (conf.py beside this file), each in a tree of its own: OUT/en/, OUT/fr/,
OUT/zh/, plus OUT/index.html to choose one (Sphinx builds in build/site-work/html/LANG/, which is copied).
The pages of a language are staged first in build/site-work/src/LANG/: its own pages (site/pages/LANG/:
the home page, index.md, and the guide, guide/*.md), the lectures (course/NAME.ipynb, course/fr/...,
course/zh/...) and the assignments in the language's edition (release/NAME/NAME.ipynb, release/NAME_fr/NAME.ipynb,
release/NAME_zh/NAME.ipynb), each as assignments/NAME.ipynb: the same page names in every language.
Notebooks are read, never executed. MathJax comes from the npm package given by --mathjax, copied into each
language's _static/.
Exit status 1 on any Sphinx warning or on a broken internal link or image (site/linkcheck.py).
"""

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

SITE = Path(__file__).resolve().parent
ROOT = SITE.parent
sys.path.insert(0, str(SITE))
from linkcheck import check_site, slug  # noqa: E402  (a module of this folder, not a package)
from attnkit_grader import teaching  # noqa: E402
from attnkit_grader.editions import edition_name, graded_assignments  # noqa: E402

LANGUAGES = ("en", "fr", "zh")
NAMES = {"en": "English", "fr": "Français", "zh": "中文"}
# What the pages use of MathJax 3: the TeX + MathML component, its CommonHTML fonts, the TeX extensions
# that it loads on demand (\boldsymbol, \mathbb...); 2 MB instead of the package's 24.
MATHJAX_FILES = ("es5/tex-mml-chtml.js", "es5/output/chtml/fonts/woff-v2", "es5/input/tex/extensions")
# The README's picture: a figure of lecture 1 (the notebook, the id of the cell that draws it), committed as a
# PNG file that every build rewrites from the notebook when they differ (tests/test_site.py fails until then).
README_FIGURE = (ROOT / "course" / "01_self_attention.ipynb", "e41b3359")
README_FIGURE_FILE = SITE / "_static" / "attention-in-three-places.png"
# The instructors' guide shows the example class's insight report, rendered from this committed file beside
# its page (tests/test_grading.py keeps it what grading the class writes today): the site build never grades.
INSIGHT = Path("guide") / "insight.json"
# The course's glossary (English, French, Chinese in one table): the repository's own copy, a page of each
# language's guide; tests/test_glossary.py holds the catalogs, lectures and editions to it.
GLOSSARY = SITE / "glossary.md"


def lecture_figure(notebook, cell_id):
    """The PNG bytes of the first figure that cell ``cell_id`` of ``notebook`` outputs, as committed."""
    for cell in json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]:
        if cell.get("id") == cell_id:
            for output in cell.get("outputs", []):
                if "image/png" in output.get("data", {}):
                    return base64.b64decode(output["data"]["image/png"])
            raise SystemExit(f"site: cell {cell_id} of {notebook} has no figure (the README's picture)")
    raise SystemExit(f"site: {notebook} has no cell {cell_id} (the README's picture): update README_FIGURE")


def write_readme_figure():
    """site/_static/: the README's picture, rewritten only when the lecture's figure changed."""
    figure = lecture_figure(*README_FIGURE)
    if not README_FIGURE_FILE.exists() or README_FIGURE_FILE.read_bytes() != figure:
        README_FIGURE_FILE.write_bytes(figure)


def copy_if_changed(source, target):
    """Copy ``source`` to ``target`` unless it is already there unchanged (keeps Sphinx's rebuilds small)."""
    if target.exists() and target.stat().st_size == source.stat().st_size \
            and target.read_bytes() == source.read_bytes():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, target)


def stage(language, staged):
    """build/site-work/src/LANG/: the pages of one language, under the names its site uses; return the folder."""
    folder = staged / language
    pages = SITE / "pages" / language                  # the home page and the guide's pages
    wanted = {folder / page.relative_to(pages): page for page in sorted(pages.rglob("*.md"))}
    wanted[folder / "guide" / "glossary.md"] = GLOSSARY    # one trilingual page, in every language's guide
    lectures = ROOT / "course" if language == "en" else ROOT / "course" / language
    for lecture in sorted(lectures.glob("*.ipynb")):
        wanted[folder / "lectures" / lecture.name] = lecture
    english = {p.name for p in (ROOT / "course").glob("*.ipynb")}
    here = {p.name for p in lectures.glob("*.ipynb")}
    if here != english:
        raise SystemExit(f"course/{language}/ has lectures {sorted(here)}, the English ones are {sorted(english)}")
    # release/ holds each graded assignment (NAME/) and its editions (NAME_fr/, NAME_zh/); a page per assignment,
    # under the same name in every language, showing the language's edition.
    release = ROOT / "release"
    missing = []
    for name in graded_assignments(p.name for p in release.iterdir() if p.is_dir()):
        edition = release / edition_name(name, language) / f"{name}.ipynb"
        if not edition.is_file():
            missing.append(str(edition.relative_to(ROOT)))
        wanted[folder / "assignments" / f"{name}.ipynb"] = edition
    if missing:
        raise SystemExit(f"site: the {language} site has no edition of some assignments: {', '.join(missing)} "
                         "missing (attnkit release writes them from source/)")
    for target, source in wanted.items():
        copy_if_changed(source, target)
    rendered = render_insight(pages / INSIGHT, folder / INSIGHT.with_suffix(".html"))
    for stale in [p for p in folder.rglob("*") if p.is_file() and p not in wanted and p != rendered]:
        stale.unlink()
    return folder


def render_insight(source, target):
    """``target``: the insight report of ``source`` (a committed insight.json) as HTML for a page's raw block,
    each 'where the course teaches it' a link to the site's lecture or assignment, the examples unlinked (their
    feedback pages are not on the site); None when there is no ``source``."""
    if not source.is_file():
        return None
    from attnkit_grader.insight.render import fragment        # matplotlib: imported only where it is drawn

    summary = json.loads(source.read_text(encoding="utf-8"))
    for part in summary["assignments"]:
        for mistake in part["mistakes"]:
            for section in mistake["teaches"]:
                section["link"] = site_link(section["link"])
    html = str(fragment(summary, links=False, teaching_base="../"))
    if not target.exists() or target.read_text(encoding="utf-8") != html:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html, encoding="utf-8")
    return target


def site_link(link):
    """A catalogue entry's ``teaches`` link ('lectures/NAME#anchor', the anchor a code host gives the notebook's
    heading) with the anchor this site gives that heading instead: they differ where the heading holds math,
    which MyST leaves out. Unchanged when the notebook cannot be read or has no such heading (the link check of
    the built site then names it)."""
    folder, name, anchor = teaching.parse(link)
    try:
        heading = dict(teaching.headings(ROOT / teaching.notebook_path(folder, name))).get(anchor)
    except (OSError, ValueError):
        heading = None
    return link if heading is None else f"{folder}/{name}#{slug(heading)}"


def stage_mathjax(package, work):
    """WORK/mathjax-static/mathjax/: the MathJax files the pages load; return WORK/mathjax-static."""
    package = Path(package)
    if not (package / "es5" / "tex-mml-chtml.js").exists():
        raise SystemExit(f"--mathjax: {package} is not MathJax 3's npm package (no es5/tex-mml-chtml.js)")
    static = work / "mathjax-static"
    target = static / "mathjax"
    if target.exists():
        shutil.rmtree(target)
    for name in MATHJAX_FILES:
        source, relative = package / name, Path(name).relative_to("es5")
        if source.is_dir():
            shutil.copytree(source, target / relative)
        else:
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / relative)
    return static


def sphinx(language, source, html, doctrees, mathjax_static):
    """Start one language's Sphinx build into ``html`` (warnings are errors); return the process. myst-nb
    writes its copies of the outputs beside ``html``, so each language gets a folder of its own."""
    env = {**os.environ, "SITE_LANGUAGE": language, "SITE_MATHJAX_STATIC": str(mathjax_static),
           "PYTHONHASHSEED": "0"}
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-n", "-q",
               "-c", str(SITE), "-d", str(doctrees / language), str(source), str(html)]
    return subprocess.Popen(command, env=env)


def chooser(out):
    """OUT/index.html: the site's entry, one link per language."""
    links = "\n".join(f'    <li><a href="{code}/index.html" lang="{code}" hreflang="{code}">{NAMES[code]}</a></li>'
                      for code in LANGUAGES if (out / code / "index.html").exists())
    (out / "index.html").write_text(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n  <meta charset=\"utf-8\">\n"
        "  <title>Attention course · Cours sur l'attention · 注意力机制课程</title>\n</head>\n<body>\n"
        "  <h1>Attention course · Cours sur l'attention · 注意力机制课程</h1>\n  <ul>\n"
        f"{links}\n  </ul>\n</body>\n</html>\n", encoding="utf-8")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mathjax", required=True, help="MathJax 3's npm package folder (node_modules/mathjax)")
    parser.add_argument("--out", default=str(ROOT / "build" / "site"))
    parser.add_argument("--work", default=str(ROOT / "build" / "site-work"),
                        help="staged pages, doctrees and MathJax files (kept between builds)")
    parser.add_argument("--languages", nargs="+", default=list(LANGUAGES), choices=LANGUAGES)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="languages built at once (default: 2)")
    args = parser.parse_args(argv)
    out, work = Path(args.out).resolve(), Path(args.work).resolve()
    started = time.monotonic()
    write_readme_figure()
    mathjax_static = stage_mathjax(args.mathjax, work)
    staged = {language: stage(language, work / "src") for language in LANGUAGES}
    failed, running, waiting = [], [], list(args.languages)
    while waiting or running:
        while waiting and len(running) < args.jobs:
            language = waiting.pop(0)
            html = work / "html" / language / "html"
            running.append((language, sphinx(language, staged[language], html, work / "doctrees", mathjax_static)))
        language, process = running.pop(0)
        if process.wait() != 0:
            failed.append(language)
    if failed:
        print(f"site: the Sphinx build failed for {', '.join(failed)} (warnings count as errors)", file=sys.stderr)
        return 1
    if out.exists():
        shutil.rmtree(out)
    for language in args.languages:
        shutil.copytree(work / "html" / language / "html", out / language,
                        ignore=shutil.ignore_patterns(".buildinfo", ".buildinfo.bak", "_sources"))
    chooser(out)
    problems = check_site(out)
    for problem in problems:
        print(f"site: {problem}", file=sys.stderr)
    if problems:
        print(f"site: {len(problems)} broken internal link(s), image(s) or remote asset(s)", file=sys.stderr)
        return 1
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    files = sum(1 for p in out.rglob("*") if p.is_file())
    print(f"site: built {', '.join(args.languages)} in {time.monotonic() - started:.0f} s: {out} "
          f"({size / 2**20:.1f} MiB, {files} files); links and images checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())

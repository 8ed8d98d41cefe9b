"""Sphinx configuration of the course's website, one build per language (site/build.py runs them).

site/build.py stages each language's pages under build/site-work/src/LANG/ (its home page from
site/pages/LANG/, the lectures from course/ or course/LANG/, the assignments from the language's edition:
release/NAME/, release/NAME_fr/ or release/NAME_zh/) and calls sphinx-build with this folder as the
configuration directory and SITE_LANGUAGE=LANG. The notebooks are read as committed, with
their outputs: myst-nb never executes them.
"""

import logging
import os
import posixpath
from pathlib import Path
from urllib.parse import quote


from attnkit_grader.editions import edition_name

SITE = Path(__file__).resolve().parent
LANGUAGE = os.environ.get("SITE_LANGUAGE", "en")
LANGUAGES = {"en": "English", "fr": "Français", "zh": "中文"}   # the tree of each: build/site/LANG/
SPHINX_LANGUAGE = {"en": "en", "fr": "fr", "zh": "zh_CN"}
# Where students run the notebooks. Both are plain URLs; the pages say they are untested from here.
HUB_URL = os.environ.get("SITE_HUB_URL", "http://localhost:8000").rstrip("/")
BINDER_URL = os.environ.get("SITE_BINDER_URL", "https://mybinder.org/v2/gh/OWNER/REPO/HEAD").rstrip("/")
MATHJAX = os.environ.get("SITE_MATHJAX_STATIC")          # a folder holding mathjax/ (site/build.py fills it)

STRINGS = {
    "en": {
        "project": "Attention course",
        "run": "Run this notebook:",
        "hub": "on the course's JupyterHub",
        "binder": "on Binder",
        "untested": "untested",
        "fetch_first": "after fetching it from Nbgrader → Assignment List",
        "languages": "Languages",
        "more": "More",
    },
    "fr": {
        "project": "Cours sur l'attention",
        "run": "Exécuter ce notebook :",
        "hub": "sur le JupyterHub du cours",
        "binder": "sur Binder",
        "untested": "non testé",
        "fetch_first": "après l'avoir récupéré par Nbgrader → Assignment List",
        "languages": "Langues",
        "more": "Plus",
    },
    "zh": {
        "project": "注意力机制课程",
        "run": "运行这个笔记本：",
        "hub": "在课程的 JupyterHub 上",
        "binder": "在 Binder 上",
        "untested": "未经测试",
        "fetch_first": "需先通过 Nbgrader → Assignment List 获取",
        "languages": "语言",
        "more": "更多",
    },
}
TEXT = STRINGS[LANGUAGE]

project = TEXT["project"]
author = "The attention course kit's authors"
copyright = "the attention course kit's authors, MIT licence"
language = SPHINX_LANGUAGE[LANGUAGE]

extensions = ["myst_nb", "sphinx.ext.mathjax"]
nb_execution_mode = "off"                      # the committed outputs are the lecture; never run them here
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
smartquotes = False        # the text as its authors and translators typed it, quotes included
suppress_warnings = ["mystnb.unknown_mime_type"]

# MathJax 3 from the npm package, copied into _static/mathjax/ by site/build.py: no CDN at read time.
# myst-parser sets mathjax3_config (which HTML classes MathJax typesets).
mathjax_path = "mathjax/tex-mml-chtml.js"

html_theme = "pydata_sphinx_theme"
html_title = TEXT["project"]
html_static_path = ["_static"] + ([MATHJAX] if MATHJAX else [])
html_css_files = ["site.css"]
templates_path = ["_templates"]
html_show_sourcelink = False
html_copy_source = False
html_last_updated_fmt = None
html_sidebars = {"**": []}                     # the header lists every page; no empty sidebar
html_theme_options = {
    "header_links_before_dropdown": 4,
    "header_dropdown_text": TEXT["more"],     # the theme's "More" has no French or Chinese translation
    "navbar_end": ["language-switch", "theme-switcher"],
    "article_header_end": ["launch-links"],
    "secondary_sidebar_items": ["page-toc"],
    "show_prev_next": True,
    "navigation_with_keys": False,
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_context = {"site_language": LANGUAGE, "site_text": TEXT}


def _edition_path(pagename):
    """Where a page's notebook lies in the student edition (None for pages that are not notebooks)."""
    folder, _, name = pagename.partition("/")
    if folder == "lectures" and name:
        return posixpath.join("course", "" if LANGUAGE == "en" else LANGUAGE, name + ".ipynb")
    if folder == "assignments" and name:
        return f"release/{edition_name(name, LANGUAGE)}/{name}.ipynb"       # the language's edition
    return None


def launch_links(pagename):
    """[(label, url, note)]: the page's notebook on the course's JupyterHub and on Binder."""
    path = _edition_path(pagename)
    if path is None:
        return []
    folder, _, name = pagename.partition("/")
    # nbgrader fetches an assignment into ~/EDITION/ (NAME, NAME_fr or NAME_zh: the exchange's name of the edition)
    hub_path = path if folder == "lectures" else f"{edition_name(name, LANGUAGE)}/{name}.ipynb"
    hub_note = TEXT["untested"] if folder == "lectures" else f"{TEXT['fetch_first']}; {TEXT['untested']}"
    return [(TEXT["hub"], f"{HUB_URL}/hub/user-redirect/lab/tree/{quote(hub_path)}", hub_note),
            (TEXT["binder"], f"{BINDER_URL}?urlpath={quote('lab/tree/' + path, safe='')}", TEXT["untested"])]


def language_switch(app, pagename):
    """[(code, name, href, current)]: the same page in every language, relative to this page."""
    staged = Path(app.srcdir).parent                # build/site-work/src/, one folder per language
    up = "../" * (pagename.count("/") + 1)          # from build/site/LANG/PAGE.html to build/site/
    links = []
    for code, name in LANGUAGES.items():
        other = staged / code
        exists = any((other / (pagename + suffix)).exists() for suffix in (".md", ".ipynb"))
        target = pagename if exists or pagename in ("genindex", "search") else "index"
        links.append((code, name, f"{up}{code}/{target}.html", code == LANGUAGE))
    return links


def add_page_links(app, pagename, templatename, context, doctree):
    context["site_switch"] = language_switch(app, pagename)
    context["site_launch"] = launch_links(pagename)


def chinese_search():
    """Sphinx's Chinese search index (words segmented by jieba), with a search page that runs: Sphinx 9 ends
    the page's language_data.js with ``window.Stemmer = ChineseStemmer``, a class nothing defines (the
    stemmer it ships for Latin words in Chinese text is english-stemmer.js, class EnglishStemmer), and every
    search then stops on a ReferenceError (sphinx-doc/sphinx#14229). Imported here, not at the top: the
    kit's unit tests load this file without the site extra (make test runs before make site)."""
    from sphinx.search.zh import SearchChinese

    class ChineseSearch(SearchChinese):
        language_name = "English"

    return ChineseSearch


def setup(app):
    app.connect("html-page-context", add_page_links)
    if LANGUAGE == "zh":
        import jieba            # the site extra installs it: without it Sphinx indexes no Chinese word at all

        jieba.setLogLevel(logging.WARNING)          # not its "Building prefix dict" lines on every build
        app.add_search_language(chinese_search())
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Feedback pages complete offline: formulas typeset when the page is written, no script, no network, lines wrapped.

nbgrader's feedback page (``nbgrader generate_feedback``, which ``attnkit release-feedback`` runs) keeps the
notebook's formulas as TeX for MathJax to typeset in the browser, from a CDN; a student reading it in
JupyterLab's HTML viewer, which runs no script on an untrusted page, or without a network, sees raw TeX. Its
output lines (the checks' verdicts) sit in ``<pre>`` blocks that do not wrap, so a message naming a mistake is
cut at the right edge. :func:`finish` rewrites such a page once, when it is written:

- every formula of the page's text (``$...$``, ``$$...$$``, ``\\(...\\)``, ``\\[...\\]``; never inside code or
  outputs) becomes an inline SVG image, typeset by MathJax 3 (the npm package ``mathjax``) in Node.js, with
  the TeX packages ``base``, ``ams``, ``newcommand`` and ``noundefined`` only: no ``\\href``, ``\\class``,
  ``\\style`` or ``\\require``, which turn into red text like any unknown command. Students' written answers
  are typeset too, so each SVG is also cut down to the elements and attributes MathJax draws with;
- every ``<script>`` and every ``<link>`` is removed, and a Content-Security-Policy allows neither scripts nor
  any request: the page needs nothing but itself;
- preformatted text wraps.

Where MathJax or Node.js is missing (a grading machine without npm: see :func:`mathjax`), the page is
written all the same, with the TeX shown as text and a note saying why; :func:`finish` returns whether the
formulas were typeset, so the command can warn (:func:`typeset_in` reads it back from a written page).

Every way nbgrader writes a feedback page goes through :class:`FeedbackExporter`, its HTML exporter with
:func:`finish` applied to each page: the course's ``nbgrader_config.py`` and the hub's name it as
``GenerateFeedback.exporter_class``, so ``nbgrader generate_feedback`` and the Formgrader's *Generate
Feedback* button write the page ``attnkit release-feedback`` releases (the grader's NbGraderAPI sets it
whatever the course's configuration says: :meth:`attnkit_grader.course.Course.api`).
"""

import html
import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from xml.etree import ElementTree

from bs4 import BeautifulSoup, NavigableString
from attnkit.i18n import N_
from nbconvert.exporters import HTMLExporter

from . import feedback
from .editions import ENGLISH, LANGUAGES
from .feedback import POLICY

__all__ = ["EXPORTER", "FeedbackExporter", "MATHJAX_VARIABLE", "finish", "finish_files", "mathjax", "typeset",
           "typeset_in"]

EXPORTER = "attnkit_grader.offline.FeedbackExporter"   # GenerateFeedback.exporter_class, as configurations name it

MATHJAX_VARIABLE = "ATTNKIT_MATHJAX"   # the mathjax npm package's folder, if not under the environment's share/
TIMEOUT = 120                          # seconds for Node.js to typeset one page's formulas
STYLE = """
pre, .output_area pre, .output_text pre { white-space: pre-wrap; overflow-wrap: anywhere; word-break: normal; }
mjx-container { display: inline-block; }
mjx-container[display="true"] { display: block; text-align: center; margin: 1em 0; }
mjx-container svg { overflow: visible; }
.attnkit-offline-note { background: #fff8e1; border-left: 4px solid #f0b400; padding: .5rem .8rem; margin: 1rem; }
"""
WHERE = (f"make setup installs it with npm into the environment's share/attnkit/node_modules; or set "
         f"{MATHJAX_VARIABLE} to a mathjax package folder, with Node.js on the PATH")
NO_MATHJAX = N_("The formulas on this page are shown as TeX source: MathJax (Node.js with the npm package mathjax) "
              "was not found where this page was written.")
NOTE = "attnkit-offline-note"
SKIPPED = {"script", "style", "pre", "code", "textarea", "svg", "mjx-container", "title"}
MATH = re.compile(r"\$\$(?P<d1>.+?)\$\$|\\\[(?P<d2>.+?)\\\]|\\\((?P<i1>.+?)\\\)|(?<!\\)\$(?P<i2>[^$]+?)(?<!\\)\$", re.S)

# What MathJax's SVG output is made of (fontCache "none": no <use>, no ids): all that survives in a formula.
SVG_ELEMENTS = {"mjx-container", "svg", "g", "path", "rect", "text", "title"}
SVG_ATTRIBUTES = {"class", "jax", "display", "width", "height", "viewbox", "role", "focusable", "aria-hidden",
                  "transform", "d", "fill", "stroke", "stroke-width", "x", "y", "font-family", "font-size",
                  "font-style", "font-weight", "data-mml-node", "data-c", "data-mjx-texclass", "data-mjx-error",
                  "data-variant", "style"}
SAFE_STYLE = re.compile(r"\s*(vertical-align|min-width|margin-left|margin-right)\s*:\s*-?[0-9.]+ex\s*;?\s*")

# Node.js: read [[tex, display], ...] as JSON on stdin, write [svg or null, ...] as JSON on stdout.
_NODE = r"""
const mathjax = process.env.ATTNKIT_MATHJAX_DIR;
const formulas = JSON.parse(require('fs').readFileSync(0, 'utf8'));
require(mathjax).init({
  loader: {load: ['input/tex-base', '[tex]/ams', '[tex]/newcommand', '[tex]/noundefined', 'output/svg'],
           paths: {mathjax: mathjax + '/es5'}},
  tex: {packages: ['base', 'ams', 'newcommand', 'noundefined']},
  svg: {fontCache: 'none'},
  startup: {typeset: false}
}).then((MathJax) => {
  const adaptor = MathJax.startup.adaptor;
  const typeset = formulas.map(([tex, display]) => {
    try { return adaptor.outerHTML(MathJax.tex2svg(tex, {display: display})); } catch (error) { return null; }
  });
  process.stdout.write(JSON.stringify(typeset));
}).catch((error) => { process.stderr.write(String(error)); process.exit(1); });
"""


def mathjax():
    """The folder of the npm package mathjax (3.x) to typeset with, or None: ``$ATTNKIT_MATHJAX``, else
    ``share/attnkit/node_modules/mathjax`` of the running Python environment (where ``make setup`` and the hub's
    setup install it); None also when Node.js is not on the PATH."""
    found = os.environ.get(MATHJAX_VARIABLE) or Path(sys.prefix) / "share" / "attnkit" / "node_modules" / "mathjax"
    found = Path(found)
    if shutil.which("node") is None or not (found / "es5" / "node-main.js").is_file():
        return None
    return found


def typeset(formulas, folder=None):
    """[SVG text or None] for [(tex, display)]: MathJax in one Node.js process; None for each formula when
    MathJax (``folder``, default :func:`mathjax`) or Node.js is missing or fails."""
    folder = folder or mathjax()
    if not formulas:
        return []
    if folder is None:
        return [None] * len(formulas)
    try:
        done = subprocess.run(["node", "-e", _NODE], input=json.dumps(formulas), capture_output=True, text=True,
                              timeout=TIMEOUT, env={**os.environ, "ATTNKIT_MATHJAX_DIR": str(folder)})
        svgs = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError):
        svgs = None
    if not isinstance(svgs, list) or len(svgs) != len(formulas):
        return [None] * len(formulas)
    return [svg if isinstance(svg, str) else None for svg in svgs]


def _clean_svg(text):
    """MathJax's output (well-formed XML) cut down to SVG_ELEMENTS and SVG_ATTRIBUTES (a style only if it is one of
    MathJax's shifts), as HTML text; None when it is not what MathJax writes."""
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError:
        return None

    def write(element):
        name = element.tag.rpartition("}")[2]
        if name not in SVG_ELEMENTS:
            return ""
        attributes = []
        for key, value in element.attrib.items():
            key = key.rpartition("}")[2]
            if key.lower() not in SVG_ATTRIBUTES or (key.lower() == "style" and not SAFE_STYLE.fullmatch(value)) \
                    or "url(" in value.lower():
                continue
            attributes.append(f' {key}="{html.escape(value, quote=True)}"')
        if name == "svg":
            attributes.append(' xmlns="http://www.w3.org/2000/svg"')
        inner = html.escape(element.text or "", quote=False) + "".join(
            write(child) + html.escape(child.tail or "", quote=False) for child in element)
        return f"<{name}{''.join(attributes)}>{inner}</{name}>"

    return write(root) or None


def _math_nodes(soup):
    """[(text node, [match, ...])] of the page's text holding formulas, outside code, outputs and scripts."""
    found = []
    for node in soup.find_all(string=True):
        if isinstance(node, NavigableString) and type(node) is NavigableString and \
                not any(parent.name in SKIPPED for parent in node.parents):
            matches = [m for m in MATH.finditer(str(node)) if (m.group("d1") or m.group("d2") or m.group("i1")
                                                               or m.group("i2") or "").strip()]
            if matches:
                found.append((node, matches))
    return found


def _formula(match):
    """(tex, display) of a match of MATH."""
    tex = next(g for g in (match.group("d1"), match.group("d2"), match.group("i1"), match.group("i2")) if g is not None)
    return tex, bool(match.group("d1") or match.group("d2"))


def _finish(soup, svgs):
    """The parsed page ``soup`` as HTML text, each formula replaced by its SVG from ``svgs`` {(tex, display): SVG text
    or None}, and whether every formula was typeset."""
    for tag in soup.find_all(["script", "link"]):
        tag.decompose()
    typeset_all, seen, placed = True, False, {}
    for node, matches in _math_nodes(soup):
        pieces, start = [], 0
        for match in matches:
            seen = True
            svg = svgs.get(_formula(match))
            pieces.append(str(node)[start:match.start()])
            if svg is None:
                typeset_all = False
                pieces.append(match.group(0))
            else:                   # a token in the text, replaced by the SVG once the page is text again
                token = f"attnkit{uuid.uuid4().hex}formula"
                placed[token] = svg
                pieces.append(token)
            start = match.end()
        pieces.append(str(node)[start:])
        node.replace_with(NavigableString("".join(pieces)))
    head = soup.head
    if head is None:
        head = soup.new_tag("head")
        (soup.html or soup).insert(0, head)
    head.insert(0, soup.new_tag("meta", attrs={"http-equiv": "Content-Security-Policy", "content": POLICY}))
    style = soup.new_tag("style")
    style.string = STYLE
    head.append(style)
    if seen and not typeset_all:
        note = soup.new_tag("p", attrs={"class": NOTE})
        language = soup.html.get("lang") if soup.html is not None else None
        words = feedback.translations(language if language in LANGUAGES else ENGLISH)
        note.string = words.gettext(NO_MATHJAX)       # in the page's language (<html lang>, the kit's pages set it)
        (soup.body or soup).insert(0, note)
    text = str(soup)
    for token, svg in placed.items():
        text = text.replace(token, svg, 1)
    return text, typeset_all


def _typeset_pages(soups, folder):
    """{(tex, display): cleaned SVG or None} for every formula of the parsed pages, each typeset once, in one
    Node.js run."""
    wanted = list(dict.fromkeys(_formula(m) for soup in soups for _, matches in _math_nodes(soup) for m in matches))
    typeset_ = typeset([list(f) for f in wanted], folder)
    return {formula: _clean_svg(svg) if svg else None for formula, svg in zip(wanted, typeset_)}


def finish(page, folder=None):
    """(the HTML text ``page`` made complete offline, whether its formulas were typeset); see the module's
    docstring. ``folder``: the mathjax package to use (default :func:`mathjax`)."""
    soup = BeautifulSoup(page, "html.parser")
    return _finish(soup, _typeset_pages([soup], folder))


def finish_files(paths, folder=None):
    """Rewrite the pages at ``paths`` with :func:`finish`, their formulas typeset together (the pages of one
    assignment share most of theirs); returns whether every formula of every page was typeset."""
    paths = [Path(path) for path in paths]
    soups = [BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser") for path in paths]
    svgs = _typeset_pages(soups, folder)
    typeset_all = True
    for path, soup in zip(paths, soups):
        text, done = _finish(soup, svgs)
        typeset_all = typeset_all and done
        path.write_text(text, encoding="utf-8")
    return typeset_all


def typeset_in(path):
    """Whether the page written at ``path`` by :func:`finish` has every formula typeset (no note saying not)."""
    return f'class="{NOTE}"' not in Path(path).read_text(encoding="utf-8")


TEMPLATES = Path(__file__).parent / "templates"
TEMPLATE = "attnkit_feedback"            # nbgrader's feedback template with its words in the hand-in's language
NBGRADER_TEMPLATE = "feedback"           # the template GenerateFeedback names, which ours stands in for
LANGUAGE_KEY = "attnkit"                 # the autograded copy's metadata: {"language": the hand-in's}


def template_source():
    """The text of the kit's feedback template (its gettext calls are extracted into the grader's catalog)."""
    return (TEMPLATES / TEMPLATE / "index.html.j2").read_text(encoding="utf-8")


class FeedbackExporter(HTMLExporter):
    """nbgrader's feedback page (``GenerateFeedback``'s HTML exporter), in the hand-in's language and made complete
    offline by :func:`finish` as it is exported; a page left with TeX says so in nbgrader's log.

    Where nbgrader asks for its ``feedback`` template, the page is written with the kit's (``templates/
    attnkit_feedback``), which extends nbgrader's and replaces only the blocks holding words ("Score", "Test
    cell", "Comments", the table of contents, the prompts), looked up in the grader's catalog in the language of
    :meth:`language`; ``<html lang>`` says that language.
    """

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        if self.template_name == NBGRADER_TEMPLATE:
            nbgrader_dirs = list(self.extra_template_basedirs)    # where "feedback/index.html.j2" is, for extends
            self.extra_template_basedirs = [str(TEMPLATES), *nbgrader_dirs]
            self.extra_template_paths = [*self.extra_template_paths, *nbgrader_dirs]
            self.template_name = TEMPLATE
            self.template_paths = self._template_paths()      # computed once, from the template's name

    def language(self, nb, resources):
        """The hand-in's language: the one the sandboxed grader wrote into the autograded copy (its metadata's
        ``LANGUAGE_KEY`` entry), else :func:`attnkit_grader.feedback.language` of its folder in submitted/ (what
        collect recorded, else the edition's name: an assignment NAME_fr), found from nbgrader's resources (the
        student, the assignment, and the course root of the configuration or the autograded copy's folder)."""
        marked = nb.get("metadata", {}).get(LANGUAGE_KEY, {})
        marked = marked.get("language") if isinstance(marked, dict) else None
        if marked == ENGLISH or marked in LANGUAGES:
            return marked
        ids = (resources or {}).get("nbgrader", {})
        student, assignment = ids.get("student"), ids.get("assignment")
        if not student or not assignment:
            return ENGLISH
        course = self.config.get("CourseDirectory", {})
        root = course.get("root") or None
        if root is None:
            path = (resources or {}).get("metadata", {}).get("path")          # autograded/STUDENT/ASSIGNMENT
            parents = Path(path).resolve().parents if path else ()
            root = parents[2] if len(parents) > 2 else Path(".")
        return feedback.language(Path(root) / course.get("submitted_directory", "submitted") / student / assignment)

    def from_notebook_node(self, nb, resources=None, **kw):
        if self.template_name == TEMPLATE:
            code = self.language(nb, resources)
            words = feedback.translations(code)

            def _(message, **values):
                text = words.gettext(message)
                return text % values if values else text

            self.environment.globals["_"] = _
            resources = {**(resources or {}), "attnkit": {"language": code}}
        output, resources = super().from_notebook_node(nb, resources, **kw)
        if self.template_name == TEMPLATE:
            output = re.sub(r"<html(?=[\s>])", f'<html lang="{code}"', output, count=1)
        output, typeset_all = finish(output)
        if not typeset_all:
            self.log.warning("feedback: formulas left as TeX, MathJax was not found (%s)", WHERE)
        return output, resources

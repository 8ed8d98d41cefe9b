"""Check a built site without the network: every internal link, image, script and stylesheet resolves.

    python site/linkcheck.py build/site
    python site/linkcheck.py README.md        (a Markdown file: its relative links, see check_markdown)

For each page (HTML file outside _static/): every relative ``href``/``src`` must name a file of the site (a folder means its
index.html), and a ``#fragment`` must be an ``id`` (or ``name``) in the page it points to. Scripts,
stylesheets, images and fonts must be local: a page that loads any of them from another host would not
render offline, so that is an error too. Links to other sites (the JupyterHub and Binder launch links, a
reference) are not followed.
"""

import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

ASSET_RELS = {"stylesheet", "preload", "icon", "modulepreload", "shortcut"}   # <link>s the browser loads


class _Page(HTMLParser):
    """The references (tag, attribute, value, loaded) and the ids of one HTML page; ``loaded``: the browser
    fetches it to show the page (script, image, stylesheet...), as opposed to a link a reader may follow."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.references, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.ids.add(attrs["name"])
        for attribute in ("href", "src"):
            value = attrs.get(attribute)
            if not value:
                continue
            if tag == "link":
                loaded = bool(ASSET_RELS & set((attrs.get("rel") or "").lower().split()))
            else:
                loaded = tag in ("script", "img", "source", "iframe", "embed", "audio", "video")
            self.references.append((tag, attribute, value, loaded))


def _parse(path, cache):
    if path not in cache:
        page = _Page()
        page.feed(path.read_text(encoding="utf-8", errors="replace"))
        cache[path] = page
    return cache[path]


def check_site(root):
    """Return the problems found in the site under ``root``, as sentences (empty when all is well)."""
    root = Path(root).resolve()
    problems, cache = [], {}
    pages = [p for p in sorted(root.rglob("*.html")) if "_static" not in p.relative_to(root).parts]
    for page_path in pages:                       # _static/ holds the theme's templates, not pages
        page = _parse(page_path, cache)
        where = page_path.relative_to(root).as_posix()
        for tag, attribute, value, loaded in page.references:
            parts = urlsplit(value)
            if parts.scheme in ("data", "mailto", "javascript"):
                continue
            if parts.scheme or parts.netloc:
                if loaded:
                    problems.append(f"{where}: <{tag} {attribute}> loads {value} from the network")
                continue
            target = page_path
            if parts.path:
                target = (page_path.parent / unquote(parts.path)).resolve()
                if target.is_dir():
                    target = target / "index.html"
                if root != target and root not in target.parents:
                    problems.append(f"{where}: <{tag} {attribute}={value!r}> points outside the site")
                    continue
                if not target.is_file():
                    problems.append(f"{where}: <{tag} {attribute}={value!r}> names no file of the site")
                    continue
            fragment = unquote(parts.fragment)
            if fragment and target.suffix == ".html" and fragment not in _parse(target, cache).ids:
                problems.append(f"{where}: <{tag} {attribute}={value!r}>: no id {fragment!r} in "
                                f"{target.relative_to(root).as_posix()}")
    return problems


# Markdown sources: the README links into the guide by relative paths to the guide's source pages
# (site/pages/LANG/guide/NAME.md), which resolve on a code host, in a clone and in an editor alike.
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
_CODE = re.compile(r"`[^`\n]*`")
_MATH = re.compile(r"\$[^$\n]*\$")
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def slug(heading):
    """The anchor MyST's heading anchors give a Markdown heading: lower case, punctuation dropped, spaces made
    hyphens ("On the course's JupyterHub" -> "on-the-courses-jupyterhub"), and math left out as MyST leaves
    it ("4. Why divide by $\\sqrt d$?" -> "4-why-divide-by-"; a code host keeps its letters)."""
    text = _CODE.sub(lambda m: m.group()[1:-1], _MATH.sub("", heading)).strip().lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)              # a link in a heading: its text
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def markdown_anchors(path):
    """The anchors of a Markdown file's headings (code blocks left out); a repeated one gets -1, -2..."""
    anchors, seen = set(), {}
    for heading in _HEADING.findall(_FENCE.sub("", Path(path).read_text(encoding="utf-8"))):
        base = slug(heading)
        anchors.add(base if base not in seen else f"{base}-{seen[base]}")
        seen[base] = seen.get(base, 0) + 1
    return anchors


def markdown_target_problem(target, base, root):
    """Why the relative link ``target`` of a Markdown file in folder ``base`` is broken, or None: it must name
    a file or folder inside ``root`` and, for a Markdown file, a ``#fragment`` must be one of its headings."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return None                                   # another site: not followed
    path = (Path(base) / unquote(parts.path)).resolve() if parts.path else None
    root = Path(root).resolve()
    if path is not None and root != path and root not in path.parents:
        return f"{target!r} points outside {root}"
    if path is not None and not path.exists():
        return f"{target!r} names no file"
    if parts.fragment and (path is None or path.suffix == ".md"):
        if unquote(parts.fragment) not in markdown_anchors(path or base):
            return f"{target!r}: no heading with the anchor {parts.fragment!r}"
    return None


def check_markdown(path, root):
    """The broken relative links and images of the Markdown file ``path`` (code left out), as sentences."""
    path = Path(path).resolve()
    text = _CODE.sub("", _FENCE.sub("", path.read_text(encoding="utf-8")))
    problems = []
    for target in _LINK.findall(text):
        problem = markdown_target_problem(target, path if target.startswith("#") else path.parent, root)
        if problem:
            problems.append(f"{path.name}: {problem}")
    return problems


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0].endswith(".md"):
        problems = check_markdown(argv[0], Path(argv[0]).resolve().parent)
    else:
        problems = check_site(argv[0])
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

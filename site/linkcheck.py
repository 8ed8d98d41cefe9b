"""Check a built site without the network: every internal link, image, script and stylesheet resolves.

    python site/linkcheck.py build/site

For each page (HTML file outside _static/): every relative ``href``/``src`` must name a file of the site (a folder means its
index.html), and a ``#fragment`` must be an ``id`` (or ``name``) in the page it points to. Scripts,
stylesheets, images and fonts must be local: a page that loads any of them from another host would not
render offline, so that is an error too. Links to other sites (the JupyterHub and Binder launch links, a
reference) are not followed.
"""

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


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    problems = check_site(argv[0])
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

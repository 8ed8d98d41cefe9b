"""Where the course teaches what a catalogued mistake gets wrong: the ``teaches`` links of a
:class:`~attnkit_grader.authoring.Bug`, resolved to a heading of a lecture or of an assignment.

A link is the website's page name and a heading's anchor, ``"lectures/NAME#anchor"`` (the lecture
``course/NAME.ipynb``) or ``"assignments/NAME#anchor"`` (the English release ``release/NAME/NAME.ipynb``),
so the site can link it as it is and a course folder can resolve it to the heading's words. Anchors are
made as the website makes them (MyST's heading anchors, levels 1 to 3): lower case, punctuation dropped,
spaces made hyphens, a repeated one numbered ``-1``, ``-2``...
"""

import functools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from .editions import ENGLISH, LANGUAGES, edition_name

LEVELS = 3                                  # site/conf.py's myst_heading_anchors
KINDS = {"lectures": "lecture", "assignments": "exercise"}
_HEADING = re.compile(r"^(#{1,%d})[ \t]+(.+?)[ \t#]*$" % LEVELS, re.M)
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)


@dataclass(frozen=True)
class Section:
    """A resolved link: ``kind`` 'lecture' or 'exercise', the notebook (relative to the course folder), its
    title (the first heading) and the heading the anchor names."""

    link: str
    kind: str
    notebook: str
    title: str
    heading: str
    languages: tuple = ()       # ((code, notebook, title, heading), ...): the same section in each translation

    def to_json(self):
        found = {"link": self.link, "kind": self.kind, "notebook": self.notebook, "title": self.title,
                 "heading": self.heading}
        if self.languages:
            found["languages"] = {code: {"notebook": notebook, "title": title, "heading": heading}
                                  for code, notebook, title, heading in self.languages}
        return found


def slug(heading):
    """The anchor of a heading: "4. Why divide by $\\sqrt d$?" -> "4-why-divide-by-sqrt-d"."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.replace("`", "")).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def plain(heading):
    """A heading as a reader sees it, without Markdown's code and math marks."""
    return re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").replace("$", "").strip()


def parse(link):
    """(folder, name, anchor) of a link; ValueError when it has not the form 'lectures|assignments/NAME#anchor'."""
    match = re.fullmatch(r"(lectures|assignments)/([A-Za-z0-9_]+)#([\w-]+)", link) if isinstance(link, str) else None
    if match is None:
        raise ValueError(f"teaches: expected 'lectures/NAME#anchor' or 'assignments/NAME#anchor', got {link!r}")
    return match.groups()


def notebook_path(folder, name, language=ENGLISH):
    """The notebook (relative to the course folder) of the website's page ``folder/name``, in ``language``: the
    translated lecture (course/LANG/NAME.ipynb) or the assignment's edition (release/NAME_LANG/NAME.ipynb)."""
    if folder == "lectures":
        return Path("course") / f"{name}.ipynb" if language == ENGLISH else Path("course") / language / f"{name}.ipynb"
    return Path("release") / edition_name(name, language) / f"{name}.ipynb"


def headings(path):
    """[(anchor, heading)] of a notebook's Markdown cells, in order (code blocks left out)."""
    status = os.stat(path)
    return list(_headings(os.path.abspath(path), status.st_mtime_ns, status.st_size))


@functools.lru_cache(maxsize=64)
def _headings(path, mtime, size):
    """:func:`headings` of the file as it is at ``mtime`` with ``size`` (an insight report asks for each lecture's
    headings once per catalogued mistake: a lecture is read once)."""
    found, seen = [], {}
    cells = json.loads(Path(path).read_text(encoding="utf-8")).get("cells", [])
    for cell in cells:
        if cell.get("cell_type") != "markdown":
            continue
        source = cell.get("source", "")
        text = _FENCE.sub("", "".join(source) if isinstance(source, list) else source)
        for _, heading in _HEADING.findall(text):
            base = slug(heading)
            found.append((base if base not in seen else f"{base}-{seen[base]}", heading))
            seen[base] = seen.get(base, 0) + 1
    return tuple(found)


def resolve(root, link):
    """The :class:`Section` ``link`` names in the course folder ``root``; None when the notebook is not there
    (a course folder without the lectures) or has no such heading. ValueError for a malformed link."""
    folder, name, anchor = parse(link)
    relative = notebook_path(folder, name)
    path = Path(root) / relative
    if not path.is_file():
        return None
    found = headings(path)
    heading = dict(found).get(anchor)
    if heading is None or not found:
        return None
    return Section(link, KINDS[folder], relative.as_posix(), plain(found[0][1]), plain(heading),
                   tuple(translated(root, folder, name, [a for a, _ in found].index(anchor), len(found))))


def translated(root, folder, name, position, count):
    """(code, notebook, title, heading) of the heading at ``position`` (of ``count``) in each translation of the
    page ``folder/name`` found in ``root``: a translation has the English notebook's headings, in the same order
    (the anchors differ: they are made of the translated words). A translation whose headings are not as many is
    left out (its section would be guessed)."""
    for code in LANGUAGES:
        relative = notebook_path(folder, name, code)
        if not (Path(root) / relative).is_file():
            continue
        found = headings(Path(root) / relative)
        if len(found) == count:
            yield code, relative.as_posix(), plain(found[0][1]), plain(found[position][1])

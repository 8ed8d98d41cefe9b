"""The French lectures and assignment editions follow French typography: no line may break before : ; ! ? » or after «.

French sets a space before the high punctuation marks and inside guillemets. An ordinary space there lets
the browser break the line and start the next one with a lone « ? » or « » »; the space must be a no-break
one: U+00A0 before a colon, U+202F (narrow) before ; ! ? and inside « » (U+00A0 is accepted everywhere).
Only the prose of markdown cells is checked: code cells, code spans, formulas and URLs are left as they are.
`python tests/test_french_typography.py` puts the no-break spaces where ordinary ones (or line breaks) are.
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LECTURES = sorted((ROOT / "course" / "fr").glob("*.ipynb"))
EDITIONS = sorted((ROOT / "translations").glob("*_fr/*.ipynb"))      # release/*_fr is generated from them
FRENCH = LECTURES + EDITIONS
NO_BREAK = "\u00a0\u202f"
# Code blocks and spans, display and inline formulas, link targets, HTML tags, URLs: not prose.
NOT_PROSE = re.compile(r"```.*?```|`[^`\n]*`|(?<!\\)\$\$.+?(?<!\\)\$\$|(?<!\\)\$.+?(?<!\\)\$|\]\([^)]*\)|<[^>\n]+>"
                       r"|https?://\S+", re.DOTALL)
BREAKABLE_BEFORE = re.compile(r"(\S{0,20})([ \t\n]+)([;:!?»])")
BREAKABLE_AFTER = re.compile(r"«([ \t\n]+)(\S{0,20})")
BARE = re.compile(r"«(?![\s" + NO_BREAK + r"])|(?<![\s" + NO_BREAK + r"])»")


def prose(markdown):
    """The markdown with everything that is not prose replaced by a placeholder word."""
    return NOT_PROSE.sub("CODE", markdown)


def typography_problems(markdown):
    """One sentence per place where a French line may break before : ; ! ? » or after «, or a guillemet
    lacks its space."""
    text, problems = prose(markdown), []
    for before, _, mark in BREAKABLE_BEFORE.findall(text):
        wanted = "U+00A0" if mark == ":" else "U+202F"
        problems.append(f"{before + ' ' + mark!r}: an ordinary space or line break before {mark!r}, "
                        f"a no-break space ({wanted}) is needed")
    for _, after in BREAKABLE_AFTER.findall(text):
        problems.append(f"{'« ' + after!r}: an ordinary space or line break after '«', U+202F is needed")
    for bare in BARE.finditer(text):
        problems.append(f"{text[max(0, bare.start() - 20):bare.end() + 20]!r}: a guillemet without its "
                        "no-break space (U+202F) inside")
    return problems


@pytest.mark.parametrize("path", FRENCH, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_french_notebook_uses_no_break_spaces(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    problems = [f"cell {index}: {problem}" for index, cell in enumerate(cells) if cell["cell_type"] == "markdown"
                for problem in typography_problems("".join(cell["source"]))]
    assert not problems, (f"{path.relative_to(ROOT)}: {len(problems)} places break French typography "
                          f"(cells count from 0):\n  " + "\n  ".join(problems[:30]))


def test_there_are_french_lectures_and_assignment_editions():
    assert len(LECTURES) == 4 and len(EDITIONS) == 3, [p.name for p in FRENCH]


def test_ordinary_spaces_and_line_breaks_are_reported():
    problems = typography_problems("Pourquoi ? Voici : un « exemple » ;\nla suite\n: encore « \ncoupé\u202f»")
    assert len(problems) == 7, problems
    assert "a no-break space (U+00A0) is needed" in problems[1] and "(U+202F)" in problems[0], problems


def test_no_break_spaces_code_formulas_and_urls_pass():
    text = ("Pourquoi\u202f? Voici\u00a0: un «\u202fexemple\u202f»\u202f; la suite\u00a0: `a if b : c` et $f : x "
            "\\mapsto y$ et [lien](https://example.org/a?b=c) et\n```\nx = {1 : 2}\n```\n")
    assert typography_problems(text) == []


def test_guillemets_without_any_space_are_reported():
    problems = typography_problems("un «exemple» ici")
    assert len(problems) == 2 and all("without its no-break space" in p for p in problems), problems


CATALOGS = sorted((ROOT / "lib").glob("**/locale/fr/LC_MESSAGES/*.po"))


def french_messages(path):
    """The French translations of the catalog at ``path`` (what a student reads in a notebook or on a page)."""
    from babel.messages.pofile import read_po
    with open(path, "rb") as file:
        return [m.string for m in read_po(file) if m.id and isinstance(m.string, str) and m.string]


@pytest.mark.parametrize("path", CATALOGS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_french_catalogs_use_no_break_spaces(path):
    """The messages the checks, the verdict lines and the feedback page print in French: a no-break space before
    : ; ! ? and inside « », and no mark glued to the word before it (the verdict line's "name : message"
    among them)."""
    problems = [f"{message!r}: {problem}" for message in french_messages(path)
                for problem in typography_problems(message)]
    glued = [message for message in french_messages(path) if re.search(r"[^\W\d_][:;!?](\s|$)", message)]
    assert not problems and not glued, problems + glued


def test_the_french_catalogs_are_found_and_a_colon_without_its_space_is_reported():
    assert len(CATALOGS) >= 4, CATALOGS
    assert typography_problems("{check} : {message}") and not typography_problems("{check}\u00a0: {message}")


# ------------------------------------------------------------------------------------------- the fixer

def typeset(markdown):
    """``markdown`` with no-break spaces where French typography needs them and the text has an ordinary
    space or a line break (which moves after the mark, or before the '«')."""
    def fix(text):
        def mark_after_break(m):
            indent, mark, rest = m.groups()
            return ("\u00a0" if mark == ":" else "\u202f") + mark + ("\n" + indent if rest else "")
        text = re.sub(r"[ \t]*\n([ \t]*)([;:!?»])([ \t]+)?", mark_after_break, text)
        text = re.sub(r"[ \t]+«[ \t]*\n([ \t]*)", lambda m: "\n" + m.group(1) + "«\u202f", text)
        text = re.sub(r"[ \t]+([;:!?»])", lambda m: ("\u00a0" if m.group(1) == ":" else "\u202f") + m.group(1), text)
        return re.sub(r"«[ \t]+", "«\u202f", text)
    pieces, last = [], 0
    for code in NOT_PROSE.finditer(markdown):
        pieces += [fix(markdown[last:code.start()]), code.group()]
        last = code.end()
    return "".join(pieces + [fix(markdown[last:])])


def test_the_fixer_leaves_nothing_to_report():
    text = "Pourquoi ? Voici : un « exemple » ;\nla suite\n: encore « \ncoupé » et `a : b`, $f : x$."
    fixed = typeset(text)
    assert typography_problems(fixed) == [] and "`a : b`" in fixed and "$f : x$" in fixed, fixed
    assert typeset(fixed) == fixed


if __name__ == "__main__":
    import nbformat
    for path in FRENCH:
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            if cell.cell_type == "markdown":
                cell.source = typeset(cell.source)
        nbformat.write(notebook, path)


SITE_PAGES = sorted((ROOT / "site" / "pages" / "fr").rglob("*.md"))


@pytest.mark.parametrize("path", SITE_PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_french_site_pages_use_no_break_spaces(path):
    """The website's French pages (its home page, the students' guide) are French prose too: the notebooks' and
    catalogs' rules hold there."""
    problems = typography_problems(path.read_text(encoding="utf-8"))
    assert not problems, f"{path.relative_to(ROOT)}:\n  " + "\n  ".join(problems[:30])


def test_the_glossarys_french_lines_use_no_break_spaces():
    """site/glossary.md is trilingual: its lines that are French (the introduction's French sentence and the
    French column of the table) follow the French rules."""
    text = (ROOT / "site" / "glossary.md").read_text(encoding="utf-8")
    french = [line.split("|")[2] if line.startswith("| ") else line for line in text.splitlines()
              if line.startswith(("| ", "Les termes"))]
    problems = [p for line in french for p in typography_problems(line)]
    assert SITE_PAGES and not problems, problems

"""The website's own words in French and Chinese follow the course's terms and French typography, as the
notebooks and the catalogs do: its pages (site/pages/fr, site/pages/zh) and the labels site/conf.py puts on every
page of a language ("Run this notebook:", the language menu...), which no other test reads.

A refused word is given with the glossary's term that replaces it. Code spans and blocks, links' targets and HTML
tags are not prose and are left alone (a path, a command, a message quoted as the checks print it).
"""

import ast
import re
from pathlib import Path

import pytest
from test_french_typography import typography_problems

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(path for code in ("fr", "zh") for path in (ROOT / "site" / "pages" / code).rglob("*.md"))
NOT_PROSE = re.compile(r"```.*?```|`[^`\n]*`|<[^>\n]+>|\]\([^)]*\)|https?://\S+", re.S)
# (refused, the glossary's term) per language: the site's share of the course's terms.
REFUSED = {
    "fr": [(r"\bprécision\b", "« exactitude » for accuracy (« précision » is precision)"),
           (r"\bbuffers?\b(?!\*?\))", "« tampon » (the English in parentheses at most)"),
           (r"\bGiB\b", "« Gio »"),
           (r"\bchiffrée?s?\b", "« dérivé » or « calculé » (« chiffré » means encrypted)"),
           (r"\b(le|un|du|au) softmax\b", "« la softmax », as the lectures and the catalogs say")],
    "zh": [(r"(?<!（)\bnotebook\b(?!）)", "笔记本 (JupyterLab's zh_CN word; the English in parentheses once)"),
           (r"单元(?!格)", "单元格 for a notebook's cell"),
           (r"读出层", "输出层"),
           (r"裁剪", "截断 (clipping a relative distance)"),
           (r"skew 版本", "错位版本"),
           (r"\bbuffer", "缓冲区")],
}


def refused(text, language):
    """'word' -> 'the glossary's term', one line for each refused word in the prose of ``text``."""
    prose = NOT_PROSE.sub(" ", text)
    return [f"{match.group()!r} -> {term}: …{prose[max(0, match.start() - 20):match.end() + 20]}…"
            for pattern, term in REFUSED[language] for match in re.finditer(pattern, prose, re.I)]


def site_labels():
    """{language: {key: label}} of site/conf.py's STRINGS, read without running the configuration."""
    tree = ast.parse((ROOT / "site" / "conf.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "STRINGS" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError("site/conf.py has no STRINGS: update tests/test_site_words.py")


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_sites_translated_pages_use_the_glossarys_terms(path):
    language = path.relative_to(ROOT / "site" / "pages").parts[0]
    found = refused(path.read_text(encoding="utf-8"), language)
    assert not found, f"{path.relative_to(ROOT)}:\n  " + "\n  ".join(found)


def test_the_sites_labels_use_the_glossarys_terms_and_french_typography():
    labels = site_labels()
    assert set(labels) == {"en", "fr", "zh"} and labels["fr"].keys() == labels["en"].keys() == labels["zh"].keys()
    found = [f"{language} {key}: {problem}" for language in ("fr", "zh") for key, label in labels[language].items()
             for problem in refused(label, language)]
    found += [f"fr {key}: {problem}" for key, label in labels["fr"].items() for problem in typography_problems(label)]
    assert not found, "site/conf.py's STRINGS:\n  " + "\n  ".join(found)


def test_the_refused_words_are_found_in_prose_and_not_in_code():
    assert refused("运行这个 notebook：", "zh") and refused("某个单元为何得 0 分", "zh")
    assert not refused("以笔记本（notebook）形式；测试单元格；`notebooks` 附加依赖", "zh")
    assert len(refused("une précision ; le softmax ; 2 GiB", "fr")) == 3
    assert not refused("un tampon (*buffer*) ; la softmax ; `précision`", "fr")
    assert typography_problems("Exécuter ce notebook :") and not typography_problems("Exécuter ce notebook\u00a0:")

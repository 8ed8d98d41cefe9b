"""The course's glossary (site/glossary.md, the repository's own copy) holds the translations to their terms.

Each rule below names a word a French or Chinese text must not use, the glossary's term in its place, and where
the rule applies: the gettext catalogs (what a student or an instructor reads), the translated lectures'
prose (course/fr, course/zh) and the assignment editions' prose (translations/NAME_fr, NAME_zh). Prose is a
markdown cell without its code spans, formulas and links; in a catalog, the translation (msgstr) only. A
rule's preferred term must itself be in the glossary, so the rules cannot drift from it.
"""

import json
import re
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from test_french_typography import prose     # markdown without code spans, formulas and links

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "site" / "glossary.md"
CATALOGS, LECTURES, EDITIONS = "catalogs", "lectures", "editions"
EVERYWHERE = (CATALOGS, LECTURES, EDITIONS)

# (language, refused pattern, the glossary's term, where, why)
RULES = [
    ("fr", r"\bprécision\b", "exactitude", (CATALOGS, EDITIONS), "accuracy is « exactitude »; « précision » is precision"),
    ("fr", r"\b(?:le|un|du|au) softmax\b", "softmax", EVERYWHERE, "« la softmax », as the lectures say"),
    ("fr", r"(?<![\w_(*])buffers?\b(?![*)])", "tampon", EVERYWHERE, "a module's buffer is a « tampon » (buffer)"),
    ("fr", r"\bGiB\b|\bMiB\b", "Gio", (CATALOGS,), "binary units are written Gio, Mio in French"),
    ("fr", r"version skew\b|\bavec skew\b", "skewing", EVERYWHERE, "« la version avec skewing »"),
    ("fr", r"\bchiffrée?s?\b", "", EVERYWHERE, "« chiffré » means encrypted"),
    ("zh", r"读出层", "输出层", EVERYWHERE, "the read-out layer is 输出层"),
    ("zh", r"得分", "注意力分数", (LECTURES,), "an attention score is a 分数; 得分 means points earned"),
    ("zh", r"裁剪", "截断", EVERYWHERE, "clipping a distance is 截断"),
    ("zh", r"skew\s*版本", "错位技巧", EVERYWHERE, "the skewed version is the 错位版本"),
    ("zh", r"(?<![\w_(])buffer", "缓冲区", EVERYWHERE, "a module's buffer is a 缓冲区"),
    ("zh", r"目录", "已知错误清单", (CATALOGS,), "the catalogue of known mistakes is a 清单, not a 目录"),
    ("zh", r"(?<![\w_/.`{(])notebook(?![\w_/.`})])", "笔记本", EVERYWHERE, "JupyterLab's zh_CN says 笔记本"),
]


def glossary_text():
    return GLOSSARY.read_text(encoding="utf-8")


def catalog_texts(language):
    """{where: text} of every translation in the catalogs of ``language``."""
    texts = {}
    for path in sorted((ROOT / "lib").glob(f"**/locale/{language}/LC_MESSAGES/*.po")):
        if "build" in path.parts:
            continue
        with open(path, "rb") as handle:
            for message in read_po(handle):
                if message.id and message.string:
                    strings = message.string if isinstance(message.string, tuple) else (message.string,)
                    texts[f"{path.relative_to(ROOT)}: {str(message.id)[:50]!r}"] = " ".join(strings)
    return texts


def notebook_texts(paths):
    texts = {}
    for path in paths:
        for index, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            if cell["cell_type"] == "markdown":
                texts[f"{path.relative_to(ROOT)} cell {index}"] = prose("".join(cell["source"]))
    return texts


def texts(language, where):
    if where == CATALOGS:
        return catalog_texts(language)
    if where == LECTURES:
        return notebook_texts(sorted((ROOT / "course" / language).glob("*.ipynb")))
    return notebook_texts(sorted((ROOT / "translations").glob(f"*_{language}/*.ipynb")))


def violations(rules, language, where, found):
    """['WHERE: RULE'] for every text of ``found`` ({where: text}) using a refused word."""
    problems = []
    for rule_language, pattern, _, places, why in rules:
        if rule_language == language and where in places:
            for name, text in found.items():
                match = re.search(pattern, text)
                if match:
                    problems.append(f"{name}: {match.group(0)!r} ({why})")
    return problems


def test_the_glossary_is_the_repositorys_own_and_holds_every_preferred_term():
    text = glossary_text()
    assert text.startswith("# Glossary") and "| English | Français | 中文 |" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and line.count("|") == 4]
    assert len(rows) > 40, len(rows)
    missing = [term for _, _, term, _, _ in RULES if term and term not in text]
    assert not missing, f"rules prefer terms the glossary lacks: {missing}"
    assert "../shared" not in text


@pytest.mark.parametrize("language, where", [(lang, where) for lang in ("fr", "zh") for where in EVERYWHERE])
def test_translations_use_the_glossarys_terms(language, where):
    found = texts(language, where)
    assert found, f"no {where} in {language}"
    problems = violations(RULES, language, where, found)
    assert not problems, f"{len(problems)} word(s) the glossary rules out:\n  " + "\n  ".join(problems[:30])


def test_a_refused_word_is_reported_and_code_or_formulas_are_not_prose():
    fake = {"a.po: 'x'": "remplissez les scores avec -inf avant le softmax", "b.po: 'y'": "avant la softmax"}
    assert violations(RULES, "fr", CATALOGS, fake) == [
        "a.po: 'x': 'le softmax' (« la softmax », as the lectures say)"]
    assert violations(RULES, "zh", LECTURES, {"c": "注意力得分"}) and not violations(RULES, "zh", CATALOGS, {"c": "得分"})
    assert not violations(RULES, "zh", EDITIONS, {"d": prose("见 `release/ps1/ps1.ipynb` 与 `notebook`")})

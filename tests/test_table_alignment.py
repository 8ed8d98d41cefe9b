"""The tables a translated lecture prints line up as the English ones do, counted in display columns.

A lecture prints small tables: a header line, then rows of numbers right-aligned under it. A translated header
(French words, or Chinese characters, two columns wide each) must still end where the numbers below it end,
wherever the English header does; the drift test compares only the numbers, so two misaligned Chinese tables
went unnoticed (lecture 3's dot products by offset, lecture 4's FLOPs by head count). Widths are those of
:func:`attnkit.text.display_width`, as a terminal or a notebook's monospace output shows them.
"""

import json
import re
from pathlib import Path

import pytest

from attnkit.text import display_width

ROOT = Path(__file__).resolve().parents[1]
TRANSLATED = sorted(p for folder in ("fr", "zh") for p in (ROOT / "course" / folder).glob("*.ipynb"))
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|True|False|nan|inf)%?,?")


def is_row(line):
    tokens = line.split()
    return len(tokens) >= 2 and sum(bool(NUMBER.fullmatch(t)) for t in tokens) * 2 >= len(tokens) + 1


def ends(line, separator):
    """Display column where each field of ``line`` ends, fields split by ``separator``."""
    found = set()
    for match in re.finditer(r"\S+(?:" + separator + r"\S+)*" if separator else r"\S+", line):
        found.add(display_width(line[:match.end()]))
    return found


def header_alignments(text):
    """For each table in ``text`` (a header, then two rows or more; not a tensor's repr nor a table ruled with
    '|'): (the columns where a header field, split at two spaces or more, ends where a row's field ends; the
    columns where any word of the header ends)."""
    lines = text.splitlines()
    found, index = [], 1
    while index < len(lines):
        if is_row(lines[index]) and index + 1 < len(lines) and is_row(lines[index + 1]) and not is_row(lines[index - 1]):
            rows = []
            while index < len(lines) and is_row(lines[index]):
                rows.append(lines[index])
                index += 1
            header = lines[index - len(rows) - 1]
            if "|" in header or "tensor(" in text:
                continue
            columns = set().union(*(ends(row, "") for row in rows))
            found.append((ends(header, " ") & columns, ends(header, "")))   # fields may hold single spaces
        else:
            index += 1
    return found


def tables(notebook):
    """{cell id: [alignment per table]} of a notebook's printed text (a cell's streams joined: a header and its
    rows may arrive in two outputs)."""
    found = {}
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        text = "".join("".join(o["text"]) for o in cell.get("outputs", []) if o.get("output_type") == "stream")
        alignments = header_alignments(text)
        if alignments:
            found[cell.get("id")] = alignments
    return found


@pytest.mark.parametrize("path", TRANSLATED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_translated_table_lines_up_wherever_the_english_one_does(path):
    english = tables(ROOT / "course" / path.name)
    translated = tables(path)
    worse = [f"cell {key}: no header word ends at column(s) {sorted(aligned - words)}, where "
             f"the English header and the numbers below it end"
             for key, theirs in english.items() for (aligned, _), (_, words) in zip(theirs, translated.get(key, []))
             if not aligned <= words]
    assert not worse, f"{path.relative_to(ROOT)}: pad the header by display width (attnkit.text.pad):\n  " + \
        "\n  ".join(worse)


def test_a_header_two_columns_off_is_found_and_an_aligned_one_passes():
    rows = "    0       16.0000\n   10       10.0589\n"
    (aligned, _), = header_alignments("delta   mean over i\n" + rows)
    assert aligned == {5, 19}
    assert aligned <= header_alignments("delta   对 i 的均值\n" + rows)[0][1]         # 11 columns wide, like the English
    assert not aligned <= header_alignments("delta   对 i 的均值值\n" + rows)[0][1]   # two columns too wide
    assert tables(ROOT / "course" / "03_positional_encoding.ipynb"), "lecture 3 prints tables"

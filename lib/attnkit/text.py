"""Aligned printed tables in any language: pad text by the columns a terminal or notebook gives it."""

import unicodedata


def display_width(text):
    """Columns ``text`` takes in a monospaced font: 2 per wide or full-width (CJK) character, 0 per combining mark."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return sum(0 if unicodedata.combining(char) else 2 if unicodedata.east_asian_width(char) in "WF" else 1
               for char in text)


def pad(text, width, align="<"):
    """``text`` padded with spaces to ``width`` columns, left (``"<"``) or right (``">"``) aligned.

    Use it where a format spec such as ``f"{name:15s}"`` would count a Chinese character as one column.
    Text already ``width`` columns wide or wider is returned unchanged, as the format spec does.
    """
    if align not in ("<", ">"):
        raise ValueError(f"align must be '<' or '>', got {align!r}")
    fill = " " * max(0, width - display_width(text))
    return text + fill if align == "<" else fill + text

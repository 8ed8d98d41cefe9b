"""attnkit.pad aligns printed tables by display width: a Chinese character takes two columns."""

import pytest

from attnkit import display_width, pad


def test_display_width_counts_cjk_characters_twice():
    assert display_width("conv") == 4
    assert display_width("卷积") == 4
    assert display_width("因果 & [3, 5]") == 13
    assert display_width("précision µs ‖") == 14          # accented, ambiguous-width: one column each
    assert display_width("e\u0301") == 1                  # a combining accent takes no column
    assert display_width("，：") == 4                      # full-width punctuation


def test_pad_matches_the_format_spec_on_ascii_and_aligns_cjk():
    for text in ("", "conv", "attention core", "a very long name indeed"):
        assert pad(text, 15) == f"{text:15s}" and pad(text, 15, ">") == f"{text:>15s}"
    rows = [pad(name, 14) + "|" for name in ("卷积", "注意力核心", "RNN", "因果 & [3, 5]")]
    assert {display_width(row) for row in rows} == {15}, rows
    assert pad("实测", 9, ">") == "     实测"


def test_pad_rejects_bad_arguments():
    with pytest.raises(ValueError, match="align must be '<' or '>', got '\\^'"):
        pad("x", 3, "^")
    with pytest.raises(TypeError, match="text must be a str, got int"):
        pad(3, 5)

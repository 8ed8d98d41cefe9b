"""Chinese text in figures: attnkit.plotting adds a CJK font as a fallback, and English figures stay the same.

The Chinese lectures run the same code as the English ones, so the font cannot be chosen in a notebook cell;
importing attnkit.plotting does it. `make fonts` installs the font (Debian's fonts-noto-cjk).
"""

import copy
import io
import logging
import os
import subprocess
import sys
import warnings

import matplotlib
import matplotlib.pyplot as plt
import pytest
from matplotlib import font_manager

from attnkit import plotting

NO_FONT = "no CJK font installed (make fonts installs Debian's fonts-noto-cjk)"


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture
def cjk_family():
    """The CJK family attnkit.plotting uses; skipped without one, but a failure in CI, where make test installs it."""
    family = plotting.use_cjk_fallback()
    if family is None:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(NO_FONT)
    return family


def draw(fig):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def chinese_figures():
    yield plotting.plot([1, 2, 4], [[1, 4, 16], [1, 2, 4]], xlabel="维度 d", ylabel="得分的方差",
                        legend=["q·k（实测）", "d（理论值）"], title="方差随 d 增长；缩放后为 1")
    yield plotting.show_heatmaps([[[0.2, 0.8], [1.0, 0.0]]], xlabel="键：源语言词元", ylabel="查询：目标语言词元",
                                 titles=["交叉注意力权重"], xticklabels=["鸟", "歌"], yticklabels=["查询一", "查询二"],
                                 suptitle="掩码：深色 = 可以关注")


def test_chinese_text_draws_without_missing_glyph_warnings(cjk_family, caplog):
    assert matplotlib.rcParams["font.family"][-1] == cjk_family
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING, logger="matplotlib"):
        warnings.simplefilter("always")
        for fig in chinese_figures():
            draw(fig)
    messages = [str(w.message) for w in caught] + [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "missing from font" in m or "not found" in m], messages


def test_the_fallback_is_what_draws_chinese(cjk_family, monkeypatch):
    """Without the fallback the same figure warns: the test above cannot pass by accident."""
    monkeypatch.setitem(matplotlib.rcParams, "font.family", ["sans-serif"])
    with pytest.warns(UserWarning, match="missing from font"):
        draw(next(chinese_figures()))


def test_english_figures_are_unchanged_by_the_fallback(cjk_family, monkeypatch):
    def english_png():
        fig = plotting.plot([1, 2, 4], [[1, 4, 16], [1, 2, 4]], xlabel="d (query/key dimension)",
                            legend=["q·k", "q·k / √d"], title="Score variance ‖∂α/∂s‖ — l'oiseau")
        return draw(fig)

    with_fallback = english_png()
    monkeypatch.setitem(matplotlib.rcParams, "font.family",
                        [f for f in matplotlib.rcParams["font.family"] if f != cjk_family])
    assert english_png() == with_fallback


def test_a_font_installed_after_the_cache_was_built_is_found(cjk_family, monkeypatch):
    stale = copy.copy(font_manager.fontManager)             # a cache built before the font was installed
    cjk_files = {entry.fname for entry in stale.ttflist if entry.name in plotting.CJK_FAMILIES}
    stale.ttflist = [entry for entry in stale.ttflist if entry.fname not in cjk_files]
    monkeypatch.setattr(font_manager, "fontManager", stale)
    monkeypatch.setitem(matplotlib.rcParams, "font.family", ["sans-serif"])
    assert plotting.use_cjk_fallback() == cjk_family
    assert matplotlib.rcParams["font.family"] == ["sans-serif", cjk_family]


def test_without_a_cjk_font_nothing_changes(monkeypatch):
    monkeypatch.setattr(plotting, "CJK_FAMILIES", ("No Such CJK Family",))
    monkeypatch.setattr(font_manager, "findSystemFonts", lambda *args, **kwargs: [])
    monkeypatch.setitem(matplotlib.rcParams, "font.family", ["sans-serif"])
    assert plotting.use_cjk_fallback() is None
    assert matplotlib.rcParams["font.family"] == ["sans-serif"]


def test_the_fallback_is_added_once():
    families = list(matplotlib.rcParams["font.family"])
    plotting.use_cjk_fallback()
    assert list(matplotlib.rcParams["font.family"]) == families



LOG_AXES_FIGURE = """
import io, sys
import matplotlib
matplotlib.use("Agg")
if sys.argv[1] == "attnkit":
    import attnkit.plotting
import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.plot([1, 2, 4, 8], [1, 4, 16, 64])
ax.set_xscale("log")
ax.set_yscale("log")                                  # tick labels 10^k: mathtext, with matplotlib's own fonts
fig.savefig(io.BytesIO(), format="png")
"""


def draw_log_axes(tmp_path, importing):
    """stderr of a fresh process drawing log axes whose font cache was written without matplotlib's own fonts."""
    bundled = os.path.join(matplotlib.get_data_path(), "fonts")
    deficient = copy.copy(font_manager.fontManager)
    deficient.ttflist = [entry for entry in deficient.ttflist if not entry.fname.startswith(bundled)]
    assert len(deficient.ttflist) < len(font_manager.fontManager.ttflist)
    cache = tmp_path / "mplconfig"
    cache.mkdir(exist_ok=True)
    font_manager.json_dump(deficient, cache / f"fontlist-v{font_manager.FontManager.__version__}.json")
    done = subprocess.run([sys.executable, "-c", LOG_AXES_FIGURE, importing], capture_output=True, text=True,
                          env={**os.environ, "MPLCONFIGDIR": str(cache)}, timeout=120, check=True)
    return done.stderr


def test_a_cache_without_matplotlib_s_own_fonts_makes_log_axes_warn(tmp_path):
    """What CI saw: every lecture's first log-scale figure printed "findfont: ... not found" to stderr."""
    assert "not found" in draw_log_axes(tmp_path, "matplotlib")


def test_importing_attnkit_plotting_gives_matplotlib_its_own_fonts_back(tmp_path):
    assert draw_log_axes(tmp_path, "attnkit") == ""

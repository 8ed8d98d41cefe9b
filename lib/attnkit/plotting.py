"""Matplotlib helpers for curves and grids of heat maps; both return the Figure.

Importing this module also lets figures draw Chinese text when a CJK font is installed (see
``use_cjk_fallback``): the Chinese lectures label their plots in Chinese with the same code as the English ones.
It also gives matplotlib back its own fonts when the font cache it read lacks them (see ``restore_bundled_fonts``).
"""

from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib import font_manager

# Fonts with the Han characters of simplified Chinese, best first. Debian's fonts-noto-cjk (installed by
# `make fonts`) provides the first; the others are what Windows, macOS and other Linux systems usually have.
CJK_FAMILIES = ("Noto Sans CJK SC", "Source Han Sans SC", "Source Han Sans CN", "WenQuanYi Zen Hei",
                "WenQuanYi Micro Hei", "Microsoft YaHei", "PingFang SC", "Heiti SC", "SimHei")


def _installed_cjk_family():
    names = {entry.name for entry in font_manager.fontManager.ttflist}
    return next((family for family in CJK_FAMILIES if family in names), None)


def _add_fonts(paths):
    """Add to this process's font list the font files under ``paths`` (None: the system's) that it lacks."""
    known = {entry.fname for entry in font_manager.fontManager.ttflist}
    added = 0
    for path in font_manager.findSystemFonts(paths):
        if path not in known:
            try:
                font_manager.fontManager.addfont(path)
            except (OSError, RuntimeError, ValueError):     # a file FreeType cannot read: skip it
                continue
            added += 1
    return added


def restore_bundled_fonts():
    """Add matplotlib's own fonts (STIX, Computer Modern, DejaVu Sans Display) if the font cache lacks them.

    Matplotlib reads its font list from a cache file shared by every process of the user with the same
    matplotlib version (~/.cache/matplotlib/fontlist-vNNN.json). A process that could not read the fonts
    shipped with matplotlib (another copy of it, or one run with fewer rights) writes a list without them,
    and every later figure with mathtext, such as the 10^k labels of a log axis, then prints "findfont: Font
    family ['cmr10'] not found" to stderr. Return how many fonts were added for this process (the cache file
    is not rewritten).
    """
    bundled = [str(Path(matplotlib.get_data_path(), "fonts", "ttf"))]
    return _add_fonts(bundled)


def use_cjk_fallback():
    """Append an installed CJK font to rcParams["font.family"] as a fallback; return its name, or None if none.

    Matplotlib (>= 3.6) looks up one font per entry of font.family (a generic entry such as "sans-serif"
    stands for the first installed font of font.sans-serif, DejaVu Sans by default) and takes each glyph
    from the first of those fonts that has it. Appended last, the CJK font draws only the characters the
    usual font lacks, so figures without Chinese text look exactly as before. A font installed after
    matplotlib built its font cache is missing from that cache, so when no CJK family is known the system's
    font files the cache lacks are added for this process (the cache file is not rewritten). Without any
    CJK font nothing changes, and Chinese text warns about missing glyphs as it would anyway.
    """
    family = _installed_cjk_family()
    if family is None:
        _add_fonts(None)
        family = _installed_cjk_family()
    if family is None:
        return None
    families = list(matplotlib.rcParams["font.family"])
    if family not in families:
        matplotlib.rcParams["font.family"] = families + [family]
    return family


restore_bundled_fonts()
use_cjk_fallback()


def _to_numpy(values):
    if isinstance(values, torch.Tensor):
        return values.detach().cpu().numpy()
    return np.asarray(values)


def plot(X, Y=None, xlabel=None, ylabel=None, legend=None, title=None, xlim=None, ylim=None,
         xscale="linear", yscale="linear", fmts=("-", "m--", "g-.", "r:"), figsize=(4.5, 3), axes=None):
    """Draw one or more curves; X and Y are a sequence, a list of sequences, or a 2-D array (rows)."""

    def as_curves(values):
        if isinstance(values, (list, tuple)) and values and np.ndim(_to_numpy(values[0])) > 0:
            return [_to_numpy(v) for v in values]
        array = _to_numpy(values)
        return list(array) if array.ndim == 2 else [array]

    if Y is None:
        Y = as_curves(X)
        X = [np.arange(len(y)) for y in Y]
    else:
        X, Y = as_curves(X), as_curves(Y)
        if len(X) == 1:
            X = X * len(Y)
    if len(X) != len(Y):
        raise ValueError(f"X holds {len(X)} curves but Y holds {len(Y)}")
    if axes is None:
        fig, axes = plt.subplots(figsize=figsize)
    fig = axes.figure
    for i, (x, y) in enumerate(zip(X, Y)):
        axes.plot(x, y, fmts[i % len(fmts)])
    axes.set_xscale(xscale)
    axes.set_yscale(yscale)
    if xlim is not None:
        axes.set_xlim(xlim)
    if ylim is not None:
        axes.set_ylim(ylim)
    axes.set_xlabel(xlabel or "")
    axes.set_ylabel(ylabel or "")
    if title:
        axes.set_title(title)
    if legend:
        axes.legend(legend)
    axes.grid(True, alpha=0.3)
    return fig


def show_heatmaps(matrices, xlabel, ylabel, titles=None, figsize=(2.5, 2.5), cmap="Reds",
                  xticklabels=None, yticklabels=None, suptitle=None):
    """Grid of heat maps with one shared colour bar; ``matrices`` is (h, w), (cols, h, w) or (rows, cols, h, w).

    ``titles`` labels the columns; tick labels (e.g. tokens) apply to every panel.
    """
    matrices = _to_numpy(matrices)
    if matrices.ndim not in (2, 3, 4):
        raise ValueError(f"matrices must have 2, 3 or 4 dimensions, got shape {matrices.shape}")
    matrices = matrices.reshape((1,) * (4 - matrices.ndim) + matrices.shape)  # (rows, cols, h, w)
    num_rows, num_cols = matrices.shape[:2]
    if titles is not None and len(titles) != num_cols:
        raise ValueError(f"titles must have one entry per column ({num_cols}), got {len(titles)}")
    fig, axes = plt.subplots(num_rows, num_cols, figsize=(figsize[0] * num_cols, figsize[1] * num_rows),
                             sharex=True, sharey=True, squeeze=False, layout="constrained")
    vmin, vmax = float(matrices.min()), float(matrices.max())
    for i in range(num_rows):
        for j in range(num_cols):
            ax = axes[i, j]
            image = ax.imshow(matrices[i, j], cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
            if xticklabels is not None:
                ax.set_xticks(range(len(xticklabels)), xticklabels, rotation=90)
            if yticklabels is not None:
                ax.set_yticks(range(len(yticklabels)), yticklabels)
            if i == num_rows - 1:
                ax.set_xlabel(xlabel)
            if j == 0:
                ax.set_ylabel(ylabel)
            if titles is not None and i == 0:
                ax.set_title(titles[j])
    fig.colorbar(image, ax=axes, shrink=0.6)
    if suptitle:
        fig.suptitle(suptitle)
    return fig

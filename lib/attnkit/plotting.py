"""Matplotlib helpers for curves and grids of heat maps; both return the Figure."""

import matplotlib.pyplot as plt
import numpy as np
import torch


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

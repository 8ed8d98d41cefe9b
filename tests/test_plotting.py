"""attnkit.plotting and check_shape: figures that tests can inspect, errors that show both shapes."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from attnkit import check_shape, plot, show_heatmaps


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_plot_draws_every_curve_with_labels_and_legend():
    x = torch.arange(10.0)
    fig = plot(x, [x.sin(), x.cos()], xlabel="position", ylabel="value", legend=["sin", "cos"], title="t")
    (ax,) = fig.axes
    assert len(ax.lines) == 2
    np.testing.assert_allclose(ax.lines[1].get_ydata(), x.cos().numpy())
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("position", "value", "t")
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["sin", "cos"]


def test_plot_rows_of_a_matrix_are_curves():
    fig = plot(np.arange(5), np.ones((3, 5)), yscale="log")
    assert len(fig.axes[0].lines) == 3 and fig.axes[0].get_yscale() == "log"


def test_heatmap_grid_shares_one_colour_scale():
    matrices = torch.rand(2, 3, 4, 5)
    matrices[1, 2, 0, 0] = 7.0
    fig = show_heatmaps(matrices, "keys", "queries", titles=["a", "b", "c"],
                        xticklabels=list("vwxyz"), yticklabels=list("abcd"))
    panels, colorbars = fig.axes[:6], fig.axes[6:]
    assert len(panels) == 6 and len(colorbars) == 1
    assert all(ax.images[0].get_clim() == (float(matrices.min()), 7.0) for ax in panels)
    assert [ax.get_title() for ax in panels[:3]] == ["a", "b", "c"]
    assert panels[3].get_xlabel() == "keys" and panels[0].get_ylabel() == "queries"
    assert [t.get_text() for t in panels[0].get_yticklabels()] == list("abcd")


def test_heatmap_accepts_a_single_matrix_and_rejects_bad_shapes():
    assert len(show_heatmaps(np.eye(3), "x", "y").axes) == 2
    with pytest.raises(ValueError, match="matrices"):
        show_heatmaps(np.zeros((1, 1, 1, 2, 2)), "x", "y")
    with pytest.raises(ValueError, match="titles"):
        show_heatmaps(np.zeros((2, 3, 3)), "x", "y", titles=["only one"])


def test_check_shape_message_shows_both_shapes():
    check_shape(torch.zeros(2, 4, 100), (2, 4, 100))
    with pytest.raises(ValueError, match=r"expected shape \(2, 4, 100\), got \(2, 4, 99\)"):
        check_shape(torch.zeros(2, 4, 99), (2, 4, 100))

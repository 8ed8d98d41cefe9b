"""attnkit.positional: float64 references, the rotation property, odd widths, bad input."""

import math

import numpy as np
import pytest
import torch

from attnkit import PositionalEncoding, relative_rotation, sinusoidal_table


def reference_table(num_steps, num_hiddens):
    """P in float64 straight from the formula, one entry at a time."""
    P = np.zeros((num_steps, num_hiddens))
    for i in range(num_steps):
        for col in range(num_hiddens):
            angle = i / 10000 ** (2 * (col // 2) / num_hiddens)
            P[i, col] = math.sin(angle) if col % 2 == 0 else math.cos(angle)
    return torch.from_numpy(P)


@pytest.mark.parametrize("num_hiddens", [1, 7, 32, 33, 64])
@pytest.mark.parametrize("num_steps, tol", [(128, 1e-5), (1024, 1e-4)])
def test_table_matches_float64_reference(num_steps, tol, num_hiddens):
    P = sinusoidal_table(num_steps, num_hiddens)
    assert P.dtype == torch.float32 and P.shape == (num_steps, num_hiddens)
    error = (P.double() - reference_table(num_steps, num_hiddens)).abs().max().item()
    assert error < tol, f"max error {error:.2e} at {num_steps} positions, d={num_hiddens}"


def test_known_values():
    P = sinusoidal_table(50, 16, dtype=torch.float64)
    assert torch.equal(P[0], torch.tensor([0.0, 1.0] * 8, dtype=torch.float64))
    torch.testing.assert_close(P.square().sum(-1), torch.full((50,), 8.0, dtype=torch.float64))


@pytest.mark.parametrize("num_hiddens", [2, 8, 32])
@pytest.mark.parametrize("delta", [-7, -1, 0, 1, 3, 50])
def test_rotation_maps_every_row_to_its_offset(num_hiddens, delta):
    num_steps = 120
    P = sinusoidal_table(num_steps, num_hiddens, dtype=torch.float64)
    M = relative_rotation(delta, num_hiddens, dtype=torch.float64)
    rows = torch.arange(max(0, -delta), min(num_steps, num_steps - delta))   # every i with i + delta in range
    torch.testing.assert_close(P[rows] @ M.T, P[rows + delta], atol=1e-10, rtol=0)
    M32 = relative_rotation(delta, num_hiddens)
    assert M32.dtype == torch.float32
    torch.testing.assert_close(M32.double(), M, atol=1e-5, rtol=0)  # float32 angles up to 50


def test_rotation_is_block_diagonal_and_orthogonal():
    M = relative_rotation(5, 8, dtype=torch.float64)
    block = torch.zeros(8, 8, dtype=torch.bool)
    for j in range(4):
        block[2 * j:2 * j + 2, 2 * j:2 * j + 2] = True
    assert (M[~block] == 0).all()
    torch.testing.assert_close(M @ M.T, torch.eye(8, dtype=torch.float64))
    torch.testing.assert_close(relative_rotation(2, 8, torch.float64) @ relative_rotation(3, 8, torch.float64), M)


def test_module_adds_the_table_and_applies_dropout():
    torch.manual_seed(0)
    encoding = PositionalEncoding(9, dropout=0.0, max_len=20)
    X = torch.randn(2, 11, 9)
    torch.testing.assert_close(encoding(X), X + sinusoidal_table(11, 9))
    dropped = PositionalEncoding(9, dropout=0.5, max_len=20)
    assert (dropped(X) == 0).any()
    assert torch.equal(dropped.eval()(X), X + sinusoidal_table(11, 9))
    assert "P" not in encoding.state_dict(), "the fixed table is a buffer, not saved state"


def test_module_accepts_a_sequence_of_exactly_max_len():
    encoding = PositionalEncoding(4, max_len=6)
    assert encoding(torch.zeros(1, 6, 4)).shape == (1, 6, 4)


@pytest.mark.parametrize("make, argument", [
    (lambda: PositionalEncoding(8, max_len=10)(torch.zeros(1, 11, 8)), "max_len"),
    (lambda: PositionalEncoding(8)(torch.zeros(1, 5, 6)), "X"),
    (lambda: PositionalEncoding(8)(torch.zeros(5, 8)), "X"),
    (lambda: PositionalEncoding(8, dropout=-0.2), "dropout"),
    (lambda: relative_rotation(1, 7), "num_hiddens"),
    (lambda: sinusoidal_table(10, 0), "num_hiddens"),
])
def test_bad_input_raises_value_error_naming_the_argument(make, argument):
    with pytest.raises(ValueError, match=argument):
        make()

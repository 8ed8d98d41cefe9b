"""attnkit.checking: the visible checks' points rule, messages and helpers, as the notebooks use them."""


import pytest
import torch

from attnkit.checking import (CellScoredZero, CheckFailed, Checks, expect_close, expect_equal, expect_raises,
                              single_parameter, table_of)




# ---------------------------------------------------------------------------------------------------
# attnkit.checking

def test_checks_give_partial_credit_as_a_plain_float(capsys):
    checks = Checks(points=3)
    with checks("passes", 1):
        pass
    with checks("fails with a message", 1.5):
        raise CheckFailed("scores should be scaled by sqrt(head_dim)=8, got 64")
    with checks("student code crashes", 0.5):
        raise NotImplementedError
    score = checks.score()
    assert type(score) is float and score == 1.0
    out = capsys.readouterr()
    assert "sqrt(head_dim)=8, got 64" in out.out and "NotImplementedError" in out.out and out.err == ""


def test_checks_send_stderr_and_warnings_to_stdout(capsys):
    import sys
    import warnings
    checks = Checks(points=1)
    with checks("noisy but right", 1):
        print("to stderr", file=sys.stderr)
        warnings.warn("careful")
    assert checks.score() == 1.0
    out = capsys.readouterr()
    assert out.err == "" and "to stderr" in out.out and "careful" in out.out


def test_checks_scale_to_the_checks_that_ran_and_disqualify():
    visible_only = Checks(points=4)
    with visible_only("one visible check", 1):
        pass
    assert visible_only.score() == 4.0        # the student version: hidden checks are absent
    cheated = Checks(points=2)
    with cheated("passes", 2):
        pass
    cheated.disqualify("copied")
    with pytest.raises(CellScoredZero, match="earned 0 of 2 points.\nNot graded: copied"):
        cheated.score()
    with pytest.raises(CellScoredZero, match="no check ran"):
        Checks(points=2).score()
    free = Checks(points=0)                        # a cell worth nothing has nothing to fail
    with free("shown", 0):
        raise CheckFailed("wrong")
    assert free.score() == 0.0


def test_structure_checks_count_only_beside_a_passing_check_of_the_values(capsys):
    def cell(values_pass):
        checks = Checks(points=2)
        with checks("the output has the input's shape", 0.5, kind="structure"):
            pass
        with checks("shown, not scored", 0):
            pass
        with checks("the values equal the reference", 1.5):
            if not values_pass:
                raise CheckFailed("wrong values")
        return checks.score()

    assert cell(values_pass=True) == 2.0
    with pytest.raises(CellScoredZero, match="What failed:\n- the values equal the reference: wrong values"):
        cell(values_pass=False)
    out = capsys.readouterr().out
    assert "[not scored] shown, not scored" in out and "count once a comparison with the expected values" in out
    visible_only = Checks(points=4)                # the student version: no evidence rule on a partial run
    with visible_only("shape", 0.5, kind="structure"):
        pass
    assert visible_only.score() == 4.0
    masks = Checks(points=1)                       # a property alone counts for nothing either
    with masks("masked keys get weight 0", 0.5, kind="property"):
        pass
    with masks("the weights equal the reference", 0.5):
        raise CheckFailed("wrong weights")
    with pytest.raises(CellScoredZero, match="wrong weights"):
        masks.score()
    alone = Checks(points=1)                       # every check passed, but a property alone proves nothing
    with alone("masked keys get weight 0", 1, kind="property"):
        pass
    with pytest.raises(CellScoredZero, match=r"count\s+only\s+beside\s+a\s+passing\s+check"):
        alone.score()
    with pytest.raises(ValueError, match="kind"):
        Checks(points=1)("typo", 1, kind="shape")


def test_keyboard_interrupt_is_not_swallowed():
    checks = Checks(points=1)
    with pytest.raises(KeyboardInterrupt):
        with checks("a timeout interrupts", 1):
            raise KeyboardInterrupt


def test_expectations_explain_what_is_wrong():
    with pytest.raises(CheckFailed, match=r"index \(1,\)"):
        expect_equal(torch.tensor([1, 5]), torch.tensor([1, 2]), "x")
    with pytest.raises(CheckFailed, match="tolerance"):
        expect_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5]), "y", atol=1e-3)
    with pytest.raises(CheckFailed, match="expected ValueError, got IndexError"):
        expect_raises(ValueError, lambda: [][1], "z")
    with pytest.raises(CheckFailed, match="found 0"):
        single_parameter(torch.nn.Identity())
    assert table_of(torch.nn.Embedding(3, 2), "t").shape == (3, 2)




def test_dropout_is_checked_the_same_way_whatever_entries_it_zeroes():
    """expect_dropout: a right dropout passes on any draw; each wrong one fails with one message, the same on
    every draw (so the message can name a known mistake on any machine's random numbers)."""
    from torch.nn import functional as F
    from attnkit.checking import expect_dropout

    before = torch.ones(4, 40, 16) + torch.arange(16.0) / 10

    def messages(wrong):
        found = set()
        for seed in range(3):
            torch.manual_seed(seed)
            try:
                expect_dropout(wrong(before), before, 0.5, "pe(X) in train mode")
            except CheckFailed as failure:
                found.add(str(failure))
            else:
                found.add(None)
        return found

    assert messages(lambda x: F.dropout(x, 0.5, training=True)) == {None}
    cases = {"does nothing": lambda x: x,
             "not X + P times one number": lambda x: F.dropout(torch.ones_like(x), 0.5, training=True) + (x - 1),
             "times 1.111": lambda x: F.dropout(x, 0.1, training=True),
             "fraction 1.00": lambda x: torch.zeros_like(x)}
    for words, wrong in cases.items():
        found = messages(wrong)
        assert len(found) == 1 and words in next(iter(found)), (words, found)

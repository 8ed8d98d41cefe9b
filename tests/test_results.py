"""The result record (attnkit_grader.results): messages as data, and records that survive JSON unchanged."""

import json

import numpy as np
import pytest

from attnkit_grader.results import (KINDS, VERSION, CellResult, CheckResult, Message, SubmissionResult, check_text,
                                    message)


def test_a_message_renders_as_the_f_string_it_replaces():
    worst, shape = np.float32(0.123456), (2, 3)
    made = Message.make("{what} is off by up to {worst:.3g} at {shape}", what="pe(X)", worst=worst, shape=shape)
    assert made.render() == f"pe(X) is off by up to {worst:.3g} at {shape}"
    assert dict(made.args) == {"what": "pe(X)", "worst": pytest.approx(0.123456), "shape": "(2, 3)"}
    assert isinstance(dict(made.args)["worst"], float)          # a number stays a number, for a report to use


def test_a_message_names_what_its_template_lacks():
    with pytest.raises(ValueError, match="args: the template .* needs \\['worst'\\]"):
        Message.make("off by {worst}")
    with pytest.raises(TypeError, match="template"):
        Message.make(3)


def test_text_made_elsewhere_is_shown_as_it_is_even_with_braces():
    assert message("a {brace} and {0}").render() == "a {brace} and {0}"
    assert message(None) is None and message(Message.text("x")) == Message.text("x")


def test_a_translation_replaces_the_template_and_nested_messages_follow():
    inner = Message.make("{count} entries differ", count=3)
    outer = Message.make("{what}: {why}", what="rel_index", why=inner)
    french = {"{count} entries differ": "{count} valeurs diffèrent", "{what}: {why}": "{what} : {why}"}
    assert outer.render() == "rel_index: 3 entries differ"
    assert outer.render(lambda template: french.get(template, template)) == "rel_index : 3 valeurs diffèrent"
    assert Message.from_json(json.loads(json.dumps(outer.to_json()))) == outer


def test_check_text_is_one_line_and_longer_when_it_names_a_mistake():
    long = Message.text("word\n" * 200)
    assert "\n" not in check_text(long) and len(check_text(long)) == 400
    assert len(check_text(long, mistakes=("bug_scale",))) == 800


def test_one_word_per_kind_on_both_sides_of_the_trust_boundary():
    from attnkit.checking import Checks
    from attnkit_grader import authoring
    from attnkit_grader.autograded_notebook import KIND_NAMES
    assert KINDS == ("values", "structure", "property") == Checks.KINDS     # the student package cannot import ours
    assert authoring.KINDS is KINDS and tuple(KIND_NAMES) == KINDS
    with pytest.raises(ValueError, match="kind: expected one of"):
        CheckResult("c", "name", 0.0, 1.0, False, "reference")


def example():
    failed = CheckResult("pe_values", "values of pe(X)", 0.0, 1.5, False, "values",
                         Message.make("off by up to {worst:.3g}", worst=0.5), ("bug_no_scale",))
    passed = CheckResult("pe_shape", "shape of pe(X)", 0.5, 0.5, True, "structure")
    return SubmissionResult("ada", "ps1_learnable_pe", "graded", ["a remark", Message.make("{n} later", n=2)],
                            {"test_pe": CellResult("test_pe", "test", 2.0, 0.5, (passed, failed)),
                             "written": CellResult("written", "written", 1.0, None, answered=True)},
                            3.25, sha256="ab", grader="fp", notebook="ps1_learnable_pe", seed="7",
                            run={"outputs": {"2": [["stdout", "hi\n"]]}})


def test_a_submission_result_survives_json_in_order():
    result = example()
    again = SubmissionResult.from_json(json.loads(json.dumps(result.to_json(), sort_keys=True)))
    assert again == result and list(again.cells) == ["test_pe", "written"]
    assert again.to_json()["version"] == VERSION
    assert again.scores() == {"test_pe": 0.5, "written": None}
    assert again.failures() == {"test_pe": "off by up to 0.5"}
    assert [check.mistakes for checks in again.checked.values() for check in checks] == [(), ("bug_no_scale",)]


def test_a_record_of_another_version_or_status_is_refused():
    data = example().to_json()
    with pytest.raises(ValueError, match="version 1, not 2"):
        SubmissionResult.from_json({**data, "version": 1})
    with pytest.raises(ValueError, match="status: expected one of"):
        SubmissionResult("ada", "a", "done")

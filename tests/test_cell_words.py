"""The test cells' own words (check names, subjects, messages) reach the student in the edition's language through
catalogs the student wheel ships (attnkit/locale/*/LC_MESSAGES/attnkit_NAME.mo, see the authors' guide)."""

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from attnkit import i18n
from attnkit.checking import Checks, Text, expect, expect_shape
from attnkit_grader import catalogs

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENTS = [domain.cells for domain in catalogs.CELL_DOMAINS]


def test_every_assignment_with_a_source_notebook_has_a_cell_catalog():
    assert {"ps1_learnable_pe", "ps2_relative_pe"} <= set(ASSIGNMENTS)
    for domain in catalogs.CELL_DOMAINS:
        assert domain.name == f"attnkit_{domain.cells}" and domain.locale == catalogs.PACKAGE / "locale"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_test_cell_writes_its_words_as_an_f_string(assignment):
    """A message or subject built with an f-string (or + or .format) is no msgid: a catalog cannot hold it."""
    notebook = catalogs.SOURCE / assignment / f"{assignment}.ipynb"
    problems = [problem for source in catalogs.test_cells(notebook) for problem in catalogs.cell_words(source)[1]]
    assert not problems, "\n".join(problems)


def test_an_f_string_message_or_subject_is_found_and_a_literal_or_a_text_is_not():
    words, problems = catalogs.cell_words(
        'with checks("the name", 1):\n'
        '    expect(ok, f"got {x}")\n'
        '    expect_shape(y, (2,), "the output " + name)\n'
        '    expect(ok, Text("got {x}", x=x))\n'
        '    expect_worked(y, "a/b", Text("f({n})", n=n))\n'
        '    expect(ok, message)\n')
    assert words == ["the name", "got {x}", "f({n})"] or sorted(words) == sorted(["the name", "got {x}", "f({n})"])
    assert len(problems) == 2 and "line 2" in problems[0] and "line 3" in problems[1], problems


def test_hidden_tests_are_not_extracted(tmp_path):
    notebook = tmp_path / "n.ipynb"
    source = 'with checks("seen", 1):\n    pass\n### BEGIN HIDDEN TESTS\nchecks("hidden", 1)\n### END HIDDEN TESTS\n'
    notebook.write_text(json.dumps({"cells": [{"cell_type": "code", "source": source, "metadata": {
        "nbgrader": {"grade": True, "solution": False}}}]}))
    assert [catalogs.cell_words(s)[0] for s in catalogs.test_cells(notebook)] == [["seen"]]


def test_a_check_name_a_subject_and_a_message_print_in_french_and_compare_in_english(capsys, monkeypatch):
    monkeypatch.setenv(i18n.ENVIRONMENT, "fr")
    checks = Checks(points=1)
    with checks("returns an int64 tensor of shape (num_queries, num_keys) = (3, 5)", 1, kind="structure"):
        expect(False, Text("the index must be int64 (it selects table rows), got {dtype}", dtype="torch.float32"))
    printed = capsys.readouterr().out
    assert "renvoie un tenseur int64" in printed and "l'indice doit être int64" in printed, printed
    assert checks.results[0][2] == "the index must be int64 (it selects table rows), got torch.float32"
    checks = Checks(points=1)
    with checks("returns an int64 tensor of shape (num_queries, num_keys) = (3, 5)", 1):
        expect_shape([], (3, 5), Text("relative_position_index({q}, {n}, {k}) (an edge case)", q=0, n=3, k=1))
    printed = capsys.readouterr().out
    assert "relative_position_index(0, 3, 1) (un cas limite)" in printed, printed
    assert checks.results[0][2].startswith("relative_position_index(0, 3, 1) (an edge case) should be")


def test_a_check_name_must_be_a_str():
    with pytest.raises(TypeError, match="what"):
        Checks(points=1)(Text("x"), 1)
    with pytest.raises(TypeError, match="template"):
        Text(3)


@pytest.mark.slow
def test_the_built_wheel_translates_the_test_cells_words(tmp_path, student_wheel):
    """Installed from the wheel alone (no repository, no grader), a French kernel finds PS2's test cells' words."""
    wheel = student_wheel
    names = set(zipfile.ZipFile(wheel).namelist())
    for assignment in ASSIGNMENTS:
        for code in catalogs.TRANSLATED:
            assert f"attnkit/locale/{code}/LC_MESSAGES/attnkit_{assignment}.mo" in names, sorted(names)
    zipfile.ZipFile(wheel).extractall(tmp_path / "site")
    script = ("from attnkit.i18n import Text; import attnkit; print(attnkit.__file__); "
              "print(Text('relative_position_index(4, 6, 2) is the matrix shown in the exercise').render('fr')); "
              "print(Text('returns an int64 tensor of shape (num_queries, num_keys) = (3, 5)').render('zh'))")
    shown = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(tmp_path / 'site')!r}); "
                            + script], capture_output=True, text=True, check=True, cwd=tmp_path).stdout.splitlines()
    assert shown[0].startswith(str(tmp_path / "site")), shown
    assert shown[1:] == ["relative_position_index(4, 6, 2) est la matrice donnée dans l'exercice",
                         "返回形状为 (num_queries, num_keys) = (3, 5) 的 int64 张量"]

"""The student's language (attnkit.i18n): chosen by the edition's folder, ATTNKIT_LANG or set_language; the
checks' messages in it; the grades and the known mistakes' recognition the same in every language."""

import json
import shutil
from pathlib import Path

import nbformat
import pytest
import torch

import attnkit
from attnkit import checking, i18n
from attnkit.checking import CellScoredZero, Checks, expect_shape, expect_worked

CASE = "ps1_learnable_pe/known_table"     # a worked case whose first known mistake (table_last_rows) matches alone

SAID = {   # what a student reads, per language, for the same wrong answer
    "en": ("is off by up to", "These are exactly the numbers of a known mistake", "this cell earned 0 of 2 points.",
           "What failed:", "should have shape (2, 3), got (3, 2)", "forward takes the last n rows of the table"),
    "fr": ("écart allant jusqu'à", "Ce sont exactement les nombres d'une erreur connue",
           "cette cellule a obtenu 0 point sur 2.", "Ce qui a échoué\u00a0:", "forme attendue (2, 3), obtenue (3, 2)",
           "forward prend les n dernières lignes de la table"),
    "zh": ("误差最大达", "这些正是一个已知错误给出的数值", "此单元格得 0 分（满分 2 分）。", "未通过的检查：",
           "形状应为 (2, 3)，实际为 (3, 2)", "forward 取的是表的最后 n 行"),
}


@pytest.fixture(autouse=True)
def no_choice_made(monkeypatch):
    monkeypatch.delenv(i18n.ENVIRONMENT, raising=False)
    i18n.set_language(None)
    yield
    i18n.set_language(None)


def graded_cell():
    """A cell with a known mistake's numbers in one check and a wrong shape in another: (score, printed, raised)."""
    entry = json.load(open(checking.WORKED + "/ps1_learnable_pe.json"))["cases"]["known_table"]
    mistake = torch.tensor(entry["variants"][0]["values"], dtype=torch.float64)
    checks = Checks(points=2)
    with checks("the worked case", 1):
        expect_worked(mistake, CASE, "pe(X)")
    with checks("the shape", 1, kind="structure"):
        expect_shape(torch.zeros(3, 2), (2, 3), "the output")
    try:
        return checks.score(), checks, None
    except CellScoredZero as raised:
        return 0.0, checks, raised


@pytest.mark.parametrize("language", ["en", "fr", "zh"])
def test_a_notebook_in_an_editions_folder_speaks_its_language(language, tmp_path, monkeypatch, capsys):
    """A kernel started in the folder a hub fetch or the student edition gives the edition (NAME_fr, NAME_zh)
    prints the checks in that language; the English folder in English. The score and the recognition of the
    known mistake (CheckFailed's English text, matched) are the same in every language."""
    folder = tmp_path / ("ps1_learnable_pe" if language == "en" else f"ps1_learnable_pe_{language}")
    folder.mkdir()
    monkeypatch.chdir(folder)
    assert i18n.language() == language
    score, checks, raised = graded_cell()
    printed = capsys.readouterr()
    shown = printed.out + str(raised)
    for text in SAID[language]:
        assert text in shown, (text, shown)
    if language != "en":
        for text in SAID["en"]:
            assert text not in shown, (text, shown)
    assert printed.err == ""
    assert (score, checks.matched, checks.unsupported()) == (0.0, True, 0.0)
    english = checks.results
    assert "These are exactly the numbers of a known mistake" in english[0][2]


def test_the_environment_variable_and_set_language_choose_from_any_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert i18n.language() == "en"
    monkeypatch.setenv("ATTNKIT_LANG", "zh_CN.UTF-8")
    assert i18n.language() == "zh"
    attnkit.set_language("fr")                  # the student's own cell wins over the variable
    graded_cell()
    assert "Ce qui a échoué" in capsys.readouterr().out + str(graded_cell()[2])
    attnkit.set_language(None)
    assert i18n.language() == "zh"
    monkeypatch.chdir(tmp_path.parent)
    (tmp_path / "ps2_relative_pe_fr").mkdir()
    monkeypatch.chdir(tmp_path / "ps2_relative_pe_fr")
    assert i18n.language() == "zh"               # the variable wins over the folder
    monkeypatch.setenv("ATTNKIT_LANG", "")
    assert i18n.language() == "fr"
    with pytest.raises(ValueError, match="language: expected one of en, fr, zh, got 'de'"):
        attnkit.set_language("de")


def test_grades_do_not_depend_on_the_language(tmp_path, monkeypatch, capsys):
    """The same answers, in each language: the same scores, the same known mistake named (by its English text,
    as the grader and the worked cases compare it)."""
    seen = set()
    for language in ("en", "fr", "zh"):
        attnkit.set_language(language)
        score, checks, _ = graded_cell()
        passing = Checks(points=3)
        with passing("right", 1):
            pass
        with passing("wrong", 2):
            expect_shape(torch.zeros(1), (2,), "X")
        seen.add((score, checks.matched, tuple(checks.results), passing.score()))
    assert len(seen) == 1, seen
    assert capsys.readouterr().err == ""


VALIDATE = {   # nbgrader validate on a blank release: how a cell that earned nothing says so, per language
    "en": ("CellScoredZero: this cell earned 0 of", "What failed:"),
    "fr": ("CellScoredZero: cette cellule a obtenu 0 point sur", "Ce qui a échoué\u00a0:"),
    "zh": ("CellScoredZero: 此单元格得 0 分", "未通过的检查："),
}


@pytest.mark.slow
@pytest.mark.parametrize("language", ["fr", "zh"])
def test_validate_in_an_editions_folder_lists_the_failing_checks_in_its_language(language, tmp_path):
    """nbgrader validate (the Validate button) on the edition's blank release, in a folder named as the hub
    fetches it: every cell that earned nothing says so in the edition's language, none in English, and every
    test cell earns nothing, as in the English edition."""
    from test_assignments import ROOT, nbgrader
    folder = tmp_path / f"ps1_learnable_pe_{language}"
    folder.mkdir()
    shutil.copy(ROOT / "release" / folder.name / "ps1_learnable_pe.ipynb", folder)
    # From another folder, as JupyterLab's Validate button calls it from the server's root: nbgrader's validator
    # runs the kernel in the notebook's folder.
    code, log = nbgrader("validate", str(folder / "ps1_learnable_pe.ipynb"), cwd=tmp_path)
    tests = [c for c in nbformat.read(folder / "ps1_learnable_pe.ipynb", as_version=4).cells
             if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution")]
    zeroed, failed = VALIDATE[language]
    assert log.count(zeroed) == log.count(failed) == len(tests) > 0, log[-3000:]
    assert VALIDATE["en"][0] not in log and VALIDATE["en"][1] not in log, log[-3000:]


def test_a_chinese_hand_in_gets_a_chinese_feedback_page(tmp_path):
    """The feedback page of a hand-in collected from ps2_relative_pe_zh: the page's sentences, the judge's frame of
    a diagnosis and the catalogue's explanation in Chinese; the same result for an English hand-in in English;
    the scores the same."""
    from attnkit_assignments.ps2_relative_pe.bugs import BUGS
    from attnkit_grader import feedback
    from attnkit_grader.judging import compare, engine, variants
    from attnkit_grader.results import CellResult, CheckResult, Message, SubmissionResult

    bug = next(bug for bug in BUGS if bug.name == "index_i_minus_j")
    wrong = Message.make("{what} should have shape {expected}, got {actual}", what="the index", expected="(4, 6)",
                         actual="(6, 4)")
    checks = (CheckResult("c1", "the index of a 4 x 6 case", 0.0, 2.0, False, message=Message.make(
                  engine.DIAGNOSED, diagnosis=variants.diagnosis([bug]), message=wrong), mistakes=(bug.name,)),
              CheckResult("c2", "the index is int64", 1.0, 1.0, True, kind="structure"),
              CheckResult("c3", "the index on random sizes", 0.0, 0.0, False,
                          message=compare.Fail("{what} contains NaN or inf", what="the index").message))
    result = SubmissionResult("student_zh", "ps2_relative_pe", "graded",
                              cells={"test_index": CellResult("test_index", "test", 3.0, 1.0, checks),
                                     "why": CellResult("why", "written", 2.0, None)})
    folder = tmp_path / "submitted" / "student_zh" / "ps2_relative_pe"
    folder.mkdir(parents=True)
    (folder / "collect.json").write_text(json.dumps({"edition": "ps2_relative_pe_zh", "language": "zh"}))
    assert feedback.language(folder) == "zh"
    assert feedback.language(tmp_path / "ps2_relative_pe_fr") == "fr"        # no record: the edition's folder
    assert feedback.language(tmp_path / "ps2_relative_pe") == "en"

    page = feedback.page(result, language=feedback.language(folder))
    for text in ('<html lang="zh">', "ps2_relative_pe：给 student_zh 的反馈", "自动评分：1 / 3 分。",
                 "书面回答（why）由教师人工评分。", "评分程序用它选取的新输入调用了你的函数",
                 "你的数值与一个已知错误给出的数值完全相同：索引用的是 i - j（查询减键），而不是 j - i，因此每个距离的符号都反了。",
                 "（the index：形状应为 (4, 6)，实际为 (6, 4)）", "(1 / 3 分)", "书面回答：由教师人工评分。",
                 "the index：包含 NaN 或 inf"):
        assert text in page, (text, page)
    for english in ("feedback for", "Autograded", "graded by hand", "known mistake", "should have shape",
                    "instead of j - i", "contains NaN"):
        assert english not in page, english
    assert "the index of a 4 x 6 case" in page                 # a check's name: the test cell's own text

    english = feedback.page(result)
    assert "Autograded: 1 / 3 points." in english and bug.says in english and "自动评分" not in english


def test_chinese_lines_of_a_zeroed_cell_fit_validates_width():
    """A Chinese character takes two columns: the lines of CellScoredZero fit LINE columns by display width."""
    import unicodedata
    attnkit.set_language("zh")
    checks = Checks(points=1)
    for number in range(3):
        with checks(f"check {number} of a cell", 1 / 3):
            expect_shape(torch.zeros(3, 2), (2, 3), "relative_position_index(4, 6, 2) 的结果，以及它的形状和数据类型")
    with pytest.raises(CellScoredZero) as raised:
        checks.score()
    lines = str(raised.value).split("\n")
    width = [sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line) for line in lines]
    assert len(lines) > 5 and max(width) <= checking.LINE, list(zip(width, lines))
    assert "形状应为 (2, 3)" in "".join(lines)


@pytest.mark.parametrize("language", ["en", "fr", "zh"])
def test_each_editions_header_says_its_messages_language_and_how_to_switch(language):
    """The released notebook's 'how this notebook is graded' cell, in each edition: the messages' language, the
    edition's folder, and the call that switches (issue 26, point 3)."""
    from test_assignments import ROOT
    said = {"en": "English here", "fr": "ici en français", "zh": "这里是中文"}[language]
    for name in ("ps1_learnable_pe", "ps2_relative_pe"):
        folder = name if language == "en" else f"{name}_{language}"
        header = nbformat.read(ROOT / "release" / folder / f"{name}.ipynb", as_version=4).cells[1].source
        assert said in header and "attnkit.set_language(" in header, header[-600:]
        assert f"`{name}_{'fr' if language == 'en' else language}`" in header
        # the marker of a check shown but not counted, as the checks print it in this language
        assert f"`{i18n.Text('not scored').render(language)}`" in header, header


PACKS = {"fr": "fr_FR", "zh": "zh_CN"}        # JupyterLab's language packs, installed with the student package


def jupyterlab_says(language):
    """gettext(context, English) of JupyterLab's interface in ``language``, from its installed language pack."""
    if language == "en":
        return lambda context, text: text
    import importlib
    pack = importlib.import_module(f"jupyterlab_language_pack_{PACKS[language]}")
    catalog = Path(pack.__file__).parent / "locale" / PACKS[language] / "LC_MESSAGES" / "jupyterlab.json"
    data = json.loads(catalog.read_text(encoding="utf-8"))
    data = data.get("locale_data", data).get("jupyterlab", data)
    return lambda context, text: data[f"{context}\x04{text}" if context else text][0]


@pytest.mark.parametrize("language", ["en", "fr", "zh"])
def test_each_editions_header_names_jupyterlabs_menus_as_its_language_pack_shows_them(language):
    """The header's two menu paths (run everything; restart and run everything before handing in) are written as
    JupyterLab shows them in the edition's language; nbgrader's Validate button, which no language pack
    translates, keeps its English name; the translations also give the English interface's paths."""
    from test_assignments import ROOT
    say = jupyterlab_says(language)
    run_all = f"*{say('menu', 'Run')} → {say(None, 'Run All Cells')}*"
    restart = f"*{say('menu', 'Kernel')} → {say(None, 'Restart Kernel and Run All Cells…')}*"
    for name in ("ps1_learnable_pe", "ps2_relative_pe"):
        folder = name if language == "en" else f"{name}_{language}"
        header = " ".join(nbformat.read(ROOT / "release" / folder / f"{name}.ipynb", as_version=4).cells[1].source.split())
        assert run_all in header and restart in header and "*Validate*" in header, (run_all, restart, header)
        if language != "en":
            assert "*Run → Run All Cells*" in header and "*Kernel → Restart Kernel and Run All Cells…*" in header


@pytest.mark.parametrize("language", ["en", "fr", "zh"])
def test_the_students_guide_quotes_the_markers_as_its_language_prints_them(language):
    """The students' guide in each language explains the lines the checks print: the markers it quotes are the
    ones the checks print in that language."""
    import re
    from test_assignments import ROOT
    page = (ROOT / "site" / "pages" / language / "guide" / "students.md").read_text(encoding="utf-8")
    for template in ("not scored", "FLAGGED: {remark}", "NOT GRADED: {reason}",
                     "not implemented yet: your code still raises NotImplementedError"):
        marker = re.split(r"\s*[:：]", i18n.translate(template, language))[0]
        assert f"`{marker}" in page, (language, marker)


def test_the_runners_command_line_names_attnkits_languages_and_variable():
    """The runner's command line is read without importing attnkit: its copies of the two names stay attnkit's."""
    from attnkit_sandbox import command

    assert command.LANGUAGES == i18n.LANGUAGES and command.LANGUAGE_VARIABLE == i18n.ENVIRONMENT


def test_the_autograded_copys_verdict_lines_follow_the_hand_ins_language():
    """What the formgrader and nbgrader's feedback page show under a test cell of a French or Chinese hand-in:
    the frame and the message in that language, the check's name as the test cell wrote it; English unchanged."""
    from attnkit_grader.autograded_notebook import verdict_lines
    from attnkit_grader.results import CheckResult, Message

    wrong = Message.make("{what} should have shape {expected}, got {actual}", what="the output", expected="(2, 3)",
                         actual="(3, 2)")
    checks = (CheckResult("c1", "the output's shape", 0.0, 1.0, False, kind="structure", message=wrong),
              CheckResult("c2", "row i is added to position i", 2.0, 2.0, True))
    said = {"en": ("Checked by the grader outside the notebook: 2 / 3 points",
                   "FAILED 0/1 [structure] the output's shape: the output should have shape (2, 3), got (3, 2)",
                   "passed 2/2 [values] row i is added to position i"),
            "fr": ("Vérifié par le correcteur en dehors du notebook\u00a0: 2 / 3 points",
                   "ÉCHOUÉE 0/1 [structure] the output's shape\u00a0: the output : forme attendue (2, 3), obtenue (3, 2)",
                   "réussie 2/2 [valeurs] row i is added to position i"),
            "zh": ("由评分程序在笔记本之外检查：2 / 3 分", "未通过 0/1 [结构] the output's shape：the output：形状应为 (2, 3)，实际为 (3, 2)",
                   "通过 2/2 [数值] row i is added to position i")}
    for language, lines in said.items():
        assert verdict_lines(checks, 3.0, language).splitlines() == list(lines), language
    assert verdict_lines((), 1.0, "fr").splitlines()[1] == "aucune vérification automatique n'a été exécutée pour cette cellule"


# Validate's error text in Chinese, as it was wrapped inside words ("nn.Paramet/er", "require/s_grad", "int6/4") and
# with lines starting with ，；： (issue 37).
CHINESE_ERRORS = (
    "- 表是一个参数：表是 requires_grad=False 的 nn.Parameter，因此永远不会被训练；表被注册为 buffer，而不是 "
    "nn.Parameter：它没有梯度，训练永远不会改变它",
    "- 索引的数据类型：索引是 int32 张量；它用来选取表的行，必须是 int64（torch.long）；或者 "
    "relative_position_index(4, 6, 2) 的结果：形状应为 (4, 6)，实际为 (6, 4)",
)
CLOSING_MARKS = "，。、；：！？）」』》】"


def words_of(text):
    """The Latin words, identifiers and numbers of ``text`` (what a line must never cut)."""
    import re
    return re.findall(r"[A-Za-z0-9_.=()\[\],]+", text)


@pytest.mark.parametrize("text", CHINESE_ERRORS)
@pytest.mark.parametrize("width", list(range(31, 61)) + [80])     # 31: the longest word and the indent fit
def test_chinese_text_wraps_by_display_width_between_words_never_inside_them(text, width):
    """attnkit.i18n.wrap of Chinese with code in it: every line fits ``width`` columns (a Chinese character takes
    two), no Latin word, identifier or number is cut, no line starts with closing punctuation or ends with opening
    punctuation, and nothing but the spaces at the breaks is lost."""
    from attnkit.text import display_width
    lines = i18n.wrap(text, width, subsequent_indent="    ")
    assert all(display_width(line) <= width for line in lines), lines
    assert not any(line.strip()[0] in CLOSING_MARKS for line in lines), lines
    assert not any(line.rstrip()[-1] in "（「『《【" for line in lines), lines
    kept = [word for line in lines for word in words_of(line)]
    for word in ("nn.Parameter", "requires_grad=False", "int64", "int32", "torch.long", "buffer"):
        if word in text:
            assert any(word in piece for piece in kept), (word, lines)
    assert kept == words_of(" ".join(lines)), lines
    assert "".join("".join(lines).split()) == "".join(text.split())


def test_wrap_breaks_chinese_between_characters_and_english_at_spaces():
    """Known answers: a Chinese line breaks between two characters, a comma staying with the word before it; a
    word longer than a line is cut as textwrap cuts it; English text wraps as textwrap does; a width that leaves
    no room is an error naming the argument."""
    assert i18n.wrap("表是 nn.Parameter，因此永远不会被训练", 16) == ["表是", "nn.Parameter，因", "此永远不会被训练"]
    assert i18n.wrap("形状应为 (2, 3)，实际为 (3, 2)", 20) == ["形状应为 (2, 3)，实", "际为 (3, 2)"]
    assert i18n.wrap("实际为 requires_grad_and_more", 10) == ["实际为", "requires_g", "rad_and_mo", "re"]
    assert i18n.wrap("表是 nn.Parameter，因此", 12) == ["表是", "nn.Paramete", "r，因此"]
    english = "the table is an nn.Parameter with requires_grad=False, so it never trains"
    assert i18n.wrap(english, 30, "  ") == ["the table is an nn.Parameter", "  with requires_grad=False, so",
                                            "  it never trains"]
    with pytest.raises(ValueError, match="width"):
        i18n.wrap("表", 4, subsequent_indent="    ")


DISQUALIFIED = {   # how a cell whose code comes from the reference solutions says so, per language
    "en": ("NOT GRADED: skew comes from the reference solutions (attnkit_assignments.ps2_relative_pe.reference), "
           "not from your notebook. Only work written in this notebook earns points; this cell scores 0.",
           "this cell earned 0 of 2 points.\nNot graded: skew comes from"),
    "fr": ("CELLULE NOTÉE 0\u00a0: skew provient des solutions de référence (attnkit_assignments.ps2_relative_pe."
           "reference), et non de votre notebook. Seul le travail écrit dans ce notebook rapporte des points\u202f; "
           "cette cellule obtient 0.", "cette cellule a obtenu 0 point sur 2.\nMotif\u00a0: skew provient"),
    "zh": ("本单元格记 0 分：skew 来自参考答案（attnkit_assignments.ps2_relative_pe.reference），而不是来自你的"
           "笔记本。只有在本笔记本中写出的代码才能得分；本单元格得 0 分。", "此单元格得 0 分（满分 2 分）。\n原因：skew 来自"),
}


@pytest.mark.parametrize("language", ["en", "fr", "zh"])
def test_a_disqualified_cell_says_why_in_the_students_language_and_not_as_a_check_not_scored(language, capsys):
    """Code taken from the reference solutions scores the cell 0 (the hidden checks' provenance test): the line and
    the cell's error say so and why in the student's language, with words other than those of a check marked 'not
    scored' (which the header explains as shown to help, not counted)."""
    from attnkit_assignments.ps2_relative_pe import reference
    from attnkit_grader import registry
    from attnkit_grader.judging import provenance
    attnkit.set_language(language)
    checks = Checks(points=2)
    assert provenance.check(checks, reference.skew, "skew", registry.get("ps2_relative_pe")) is False
    with pytest.raises(CellScoredZero) as raised:
        checks.score()
    printed = capsys.readouterr().out
    line, error = DISQUALIFIED[language]
    assert line in printed and error in str(raised.value), (printed, str(raised.value))
    not_scored = i18n.translate("not scored", language)
    assert not_scored.lower() not in (printed + str(raised.value)).lower()
    if language != "en":
        assert "reference solutions" not in printed and "Only work" not in printed


def chinese_spacing(text):
    """Where ``text`` has a space between two Chinese characters (Chinese sets a space between its characters and
    Latin text or numbers, never between two of its own): the places, as 'X Y'."""
    import re
    han = r"[\u3400-\u9fff]"
    return re.findall(f"{han} +{han}", text)


def test_the_spacing_finder_finds_a_space_between_chinese_words_only():
    for wrong in ("实际形状为 未知", "实际为 其他形状", "实际为 其他值", "；或者 表是"):
        assert chinese_spacing("模块的参数" + wrong), wrong
    assert chinese_spacing("实际为 (3, 2)，模块 nn.Parameter 的 requires_grad=False；或者表是") == []


def zh_templates():
    """(catalog, msgid, Chinese template) of every catalog of the kit."""
    import glob
    from babel.messages.pofile import read_po
    from test_assignments import ROOT
    for path in sorted(glob.glob(str(ROOT / "lib" / "**" / "locale" / "zh" / "LC_MESSAGES" / "*.po"), recursive=True)):
        with open(path, "rb") as file:
            for message in read_po(file):
                if message.id and isinstance(message.string, str) and "{" in message.string:
                    yield Path(path).stem, message.id, message.string


def filled(template, chinese):
    """``template``'s placeholders: a Chinese word (``chinese``) or a shape, numbers where a format spec wants one."""
    import string
    return {name: 1.5 if spec else ("其他形状" if chinese else "(3, 2)")
            for _, name, spec, _ in string.Formatter().parse(template) if name}


def test_no_chinese_message_puts_a_space_between_chinese_text_and_a_placeholder_filled_with_chinese():
    """Every Chinese template of every catalog (the student package's, the grader's, the assignments'), shown
    through attnkit's Text and the grader's Message with each placeholder filled with Chinese: no space between two
    Chinese words; filled with a shape, the space before the shape stays."""
    from attnkit_grader.results import Message
    templates = list(zh_templates())
    assert len(templates) > 100
    found = []
    for domain, msgid, template in templates:
        for chinese in (True, False):
            values = filled(template, chinese)
            shown = {i18n.fill(template, values), Message(template, tuple(sorted(values.items()))).render()}
            found += [(domain, msgid, text) for text in shown if chinese_spacing(text)]
            if not chinese:          # Latin text and numbers keep their space: the same as str.format
                assert shown == {template.format(**values)}, (domain, msgid, shown)
    assert not found, found[:10]


def test_the_checks_messages_set_no_space_before_a_chinese_value():
    """The cases seen in Validate's and the feedback page's Chinese text: a shape found 'unknown', 'another shape',
    'something else', and known mistakes listed with 'or'."""
    from attnkit_grader import feedback
    from attnkit_grader.judging.compare import sentence
    cases = {
        "ps2_relative_pe": (sentence(
            "{name} should hold 2 * max_distance + 1 = {rows} rows of head_dim = {head_dim} values "
            "(max_distance={max_distance}, num_hiddens={num_hiddens}, num_heads={num_heads}), got shape {found}",
            name="rel_table", rows=5, head_dim=2, max_distance=2, num_hiddens=4, num_heads=2,
            found=sentence("unknown")), "实际形状为未知"),
        "ps1_learnable_pe": (sentence("the positional table should have shape (max_len, num_hiddens) = {shape}, got "
                                      "{found}", shape="(10, 4)", found=sentence("another shape")), "实际为其他形状"),
    }
    for assignment, (message, expected) in cases.items():
        shown = message.render(feedback.translations("zh", assignment).gettext)
        assert expected in shown and not chinese_spacing(shown), shown
    shape = sentence("the positional table should have shape (max_len, num_hiddens) = {shape}, got {found}",
                     shape="(10, 4)", found="(4, 10)")
    assert "实际为 (4, 10)" in shape.render(feedback.translations("zh", "ps1_learnable_pe").gettext)
    listed = checking._either(["forward takes the last n rows of the table", "the table is a plain tensor attribute, "
                               "not an nn.Parameter: the optimizer never sees it"]).render("zh")
    assert "；或者表是" in listed and not chinese_spacing(listed), listed

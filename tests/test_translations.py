"""The translated lectures (course/fr/, course/zh/, ...) have not drifted from the English ones.

A translation changes prose, comments and the text of string literals, nothing else. For every
notebook under a language folder of course/, compared with the English notebook of the same name:

* the same cells, of the same kinds, in the same order (matched by cell id, or by kind where the ids
  differ, so that an added, removed or moved cell is named);
* every code cell is the same program: the same Python AST once comments and string literals
  (docstrings and the text around f-string placeholders included) are set aside; f-string placeholders,
  in their order, with their format specs, and IPython magics (`%...`, `!...`) are program and must match;
* the same nbval markers (`# NBVAL_...` comments, `nbval-...` tags) on the same cells;
* the same outputs apart from translated text: the same execution counts, output types and MIME types
  per code cell (figures where the English has figures; images are not compared, their text is
  translated), the same sequence of numbers in every text output except in cells nbval ignores;
* markdown cells: the same formulas (`$...$`, `$$...$$`, whitespace aside, in any order, since word
  order differs between languages; a decimal comma written `22{,}6`, as French typesets it, equals the
  English `22.6`), the same heading levels and the same number of images; relative links of the
  translation resolve from its own folder;
* a translation sends its reader to its own language: every path it gives (relative links, and code
  spans naming the repository's folders, such as `release/ps1_learnable_pe`) leads to the edition in
  its language where one exists (`release/ps1_learnable_pe_fr`, `course/fr/...`), never to the English
  one or another language's.

When the English lecture changes, this test lists, per translated notebook, each cell that no longer
matches (0-based index, kind of difference, the English cell's first line): the translator redoes those
cells, re-executes the notebook and commits it. The tests at the bottom feed the checker modified copies
to show that it reports drift and that translated text alone passes.
"""

import ast
import copy
import difflib
import json
import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COURSE = ROOT / "course"
PLACEHOLDER = "…"
DECIMAL_COMMA = re.compile(r"(?<=\d)\{,\}(?=\d)")
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|(?<![^\W\d_])[-+]?(?:nan|inf)(?![^\W\d_])",
                    re.IGNORECASE)


def language_folders():
    return sorted(p for p in COURSE.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def translated_notebooks():
    return [p for folder in language_folders() for p in sorted(folder.glob("*.ipynb"))]


# ---------------------------------------------------------------------------------------- code cells

class _SetTextAside(ast.NodeTransformer):
    """Replace every string constant by a placeholder; keep f-string placeholders and format specs."""

    def visit_Constant(self, node):
        if isinstance(node.value, str):
            return ast.copy_location(ast.Constant(PLACEHOLDER), node)
        return node

    def visit_JoinedStr(self, node):
        # Only the placeholders are program; the text around them (before, between, after) is translated.
        values = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                value.value = self.visit(value.value)      # the expression: program
                values.append(value)                       # conversion and format_spec: program, kept as is
        node.values = values
        return node


def split_magics(source):
    """Return (Python source with IPython magic and shell lines blanked, the list of those lines)."""
    lines, magics = [], []
    for line in source.splitlines():
        stripped = line.lstrip()
        if stripped.startswith(("%", "!")):
            magics.append(stripped)
            lines.append(line[: len(line) - len(stripped)] + "pass")
        else:
            lines.append(line)
    return "\n".join(lines), magics


def program(source):
    """The code cell's program as text: magics, then the AST without comments and string text."""
    python, magics = split_magics(source)
    try:
        tree = _SetTextAside().visit(ast.parse(python))
    except SyntaxError as error:
        return magics + [f"<SyntaxError: {error.msg}, line {error.lineno}>"]
    return magics + ast.unparse(tree).splitlines()


def nbval_markers(cell):
    source = "".join(cell.get("source", ""))
    comments = {m for m in re.findall(r"#\s*(NBVAL_[A-Z_]+)", source)}
    tags = {t for t in cell.get("metadata", {}).get("tags", []) if t.lower().startswith("nbval")}
    return comments | tags


def nbval_ignores_output(cell):
    return any(m in {"NBVAL_IGNORE_OUTPUT", "NBVAL_SKIP", "nbval-ignore-output", "nbval-skip"}
               for m in nbval_markers(cell))


# ------------------------------------------------------------------------------------------- outputs

def output_text(output):
    if output["output_type"] == "stream":
        return "".join(output["text"])
    if output["output_type"] == "error":
        return output.get("ename", "")
    return "".join(output.get("data", {}).get("text/plain", ""))


def outputs(cell):
    """(kind, text) per output, consecutive pieces of one stream joined (the chunks depend on timing)."""
    merged = []
    for output in cell.get("outputs", []):
        kind = output["output_type"]
        if kind == "stream":
            kind = f"stream:{output['name']}"
        elif kind in ("display_data", "execute_result"):
            kind = f"{kind}[{', '.join(sorted(output.get('data', {})))}]"
        if kind.startswith("stream:") and merged and merged[-1][0] == kind:
            merged[-1] = (kind, merged[-1][1] + output_text(output))
        else:
            merged.append((kind, output_text(output)))
    return merged


def numbers(text):
    return [n.lower() for n in NUMBER.findall(text)]


# ------------------------------------------------------------------------------------------ markdown

def formulas(markdown):
    """The formulas, whitespace normalised and decimal commas (`22{,}6`, French typesetting) read as points."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.DOTALL)
    text = re.sub(r"`[^`\n]*`", "", text)                          # code spans may hold a literal $
    found = []
    for display, inline in re.findall(r"(?<!\\)\$\$(.+?)(?<!\\)\$\$|(?<!\\)\$(.+?)(?<!\\)\$", text, re.DOTALL):
        found.append(DECIMAL_COMMA.sub(".", " ".join((display or inline).split())))
    return found


def headings(markdown):
    text = re.sub(r"```.*?```", "", markdown, flags=re.DOTALL)
    return [len(m) for m in re.findall(r"^(#{1,6})\s", text, flags=re.MULTILINE)]


def images(markdown):
    return len(re.findall(r"!\[[^\]]*\]\(", markdown)) + len(re.findall(r"<img\b", markdown))


def relative_links(markdown):
    text = re.sub(r"```.*?```", "", markdown, flags=re.DOTALL)
    text = re.sub(r"`[^`\n]*`", "", text)
    targets = re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text)
    return [t.split("#")[0] for t in targets
            if not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.IGNORECASE) and not t.startswith("#")]


def repository_paths(markdown, folder):
    """(as written, path from the repository root) of every relative link and every code span naming a path
    under one of the repository's top-level folders (`release/ps1_learnable_pe`), for a notebook in ``folder``."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.DOTALL)
    found = [(target, (folder / target).resolve()) for target in relative_links(markdown) if target]
    for span in re.findall(r"`([^`\n]+)`", text):
        span = span.strip().rstrip("/")
        if re.fullmatch(r"[\w.-]+(?:/[\w.-]+)+", span) and (ROOT / span.split("/")[0]).is_dir():
            found.append((span, ROOT / span))
    return found


def foreign_path(path, language, languages):
    """Why ``path`` (absolute) is not in ``language``'s edition where one exists, or None.

    An edition in a language is a sibling with the language as suffix (`release/ps1_learnable_pe_fr`) or the
    same name in the language's folder (`course/fr/01_self_attention.ipynb`)."""
    try:
        parts = path.relative_to(ROOT).parts
    except ValueError:
        return None                                                   # outside the repository
    for depth, part in enumerate(parts):
        parent = ROOT.joinpath(*parts[:depth])
        stem, suffix = part[: len(part) - len(Path(part).suffix)], Path(part).suffix
        other = next((lang for lang in languages if stem.endswith(f"_{lang}")), None)
        if other is not None and other != language:
            return f"leads to the {other} edition {'/'.join(parts[:depth + 1])}"
        if other is None and (parent / f"{stem}_{language}{suffix}").exists():
            return (f"leads to the English {'/'.join(parts[:depth + 1])}, not "
                    f"{'/'.join(parts[:depth] + (f'{stem}_{language}{suffix}',))}")
        if depth == len(parts) - 1 and parent.name not in languages and (parent / language / part).exists():
            return (f"leads to the English {'/'.join(parts)}, not "
                    f"{'/'.join(parts[:depth] + (language, part))}")
    return None


# ------------------------------------------------------------------------------------------- checker

def first_line(cell):
    lines = "".join(cell.get("source", "")).strip().splitlines()
    return (lines[0][:70] if lines else "(empty)")


def first_difference(expected, actual):
    """The lines that differ, each labelled 'English:' or 'translation:'."""
    for line in difflib.unified_diff(expected, actual, "English", "translation", n=0, lineterm=""):
        if line.startswith(("-", "+")) and not line.startswith(("---", "+++")):
            yield ("English: " if line[0] == "-" else "translation: ") + line[1:]


def align(en_cells, tr_cells):
    """Pair English and translated cells; return (pairs of indices, sentences on cells without a partner).

    Cells are matched by their ids when the translation kept them (a translation made from a copy of the
    English notebook does), otherwise by their kinds, so an added, removed or moved cell is named.
    """
    en_ids, tr_ids = [c.get("id") for c in en_cells], [c.get("id") for c in tr_cells]
    by_id = None not in en_ids and len(set(en_ids) & set(tr_ids)) >= len(en_ids) / 2
    key = "id" if by_id else "cell_type"
    matcher = difflib.SequenceMatcher(None, [c.get(key) for c in en_cells], [c.get(key) for c in tr_cells],
                                      autojunk=False)
    pairs, problems = [], []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pairs += zip(range(i1, i2), range(j1, j2))
            continue
        for index in range(i1, i2):
            en = en_cells[index]
            problems.append(f"cell {index} ({en['cell_type']}, English starts {first_line(en)!r}): no translated "
                            f"cell{' with its id ' + repr(en.get('id')) if by_id else ''} at this place: "
                            f"translate it and insert it (the English cell is new or has moved)")
        for tr_index in range(j1, j2):
            tr = tr_cells[tr_index]
            problems.append(f"translated cell {tr_index} ({tr['cell_type']}, starts {first_line(tr)!r}): no English "
                            f"cell{' with its id' if by_id else ''} at this place: remove it (the English cell was "
                            f"removed or has moved)")
    if problems:
        problems.insert(0, f"cells: the English notebook has {len(en_cells)} cells, the translation {len(tr_cells)}; "
                           f"matched by {'cell id' if by_id else 'cell kind'}; once the cells match, re-execute "
                           f"the translation from a fresh kernel")
    return pairs, problems


def drift(english, translation, folder=None):
    """Every way ``translation`` (a notebook dict) has drifted from ``english``: a list of sentences."""
    problems = []
    en_meta, tr_meta = english.get("metadata", {}), translation.get("metadata", {})
    if en_meta.get("kernelspec") != tr_meta.get("kernelspec"):
        problems.append(f"notebook metadata: kernelspec {tr_meta.get('kernelspec')} instead of "
                        f"{en_meta.get('kernelspec')}")
    en_cells, tr_cells = english["cells"], translation["cells"]
    pairs, structure = align(en_cells, tr_cells)
    problems += structure

    for index, tr_index in pairs:
        en, tr = en_cells[index], tr_cells[tr_index]
        where = f"cell {index} ({en['cell_type']}, English starts {first_line(en)!r})"
        en_source, tr_source = "".join(en["source"]), "".join(tr["source"])
        if en["cell_type"] == "code":
            en_program, tr_program = program(en_source), program(tr_source)
            if en_program != tr_program:
                diff = list(first_difference(en_program, tr_program))
                problems.append(f"{where}: the code differs (not only comments or string text): "
                                + "; ".join(diff[:4]))
            if nbval_markers(en) != nbval_markers(tr):
                problems.append(f"{where}: nbval markers {sorted(nbval_markers(tr))} instead of "
                                f"{sorted(nbval_markers(en))}")
            if en.get("execution_count") != tr.get("execution_count") and not structure:
                problems.append(f"{where}: execution count {tr.get('execution_count')} instead of "
                                f"{en.get('execution_count')}: run the translation from a fresh kernel")
            en_out, tr_out = outputs(en), outputs(tr)
            if [k for k, _ in en_out] != [k for k, _ in tr_out]:
                problems.append(f"{where}: outputs {[k for k, _ in tr_out]} instead of {[k for k, _ in en_out]}")
            elif not nbval_ignores_output(en):
                for position, ((kind, en_text), (_, tr_text)) in enumerate(zip(en_out, tr_out)):
                    if numbers(en_text) != numbers(tr_text):
                        diff = list(first_difference(numbers(en_text), numbers(tr_text)))
                        problems.append(f"{where}: output {position} ({kind}) has other numbers: "
                                        + " ".join(diff[:6]))
        elif en["cell_type"] == "markdown":
            missing, extra = Counter(formulas(en_source)), Counter(formulas(tr_source))
            missing, extra = missing - extra, extra - missing      # word order may move formulas around
            if missing or extra:
                problems.append(f"{where}: formulas differ: English only {sorted(missing.elements())}, "
                                f"translation only {sorted(extra.elements())}")
            if headings(en_source) != headings(tr_source):
                problems.append(f"{where}: heading levels {headings(tr_source)} instead of {headings(en_source)}")
            if images(en_source) != images(tr_source):
                problems.append(f"{where}: {images(tr_source)} images instead of {images(en_source)}")
            if folder is not None:
                for target in relative_links(tr_source):
                    if target and not (folder / target).exists():
                        problems.append(f"{where}: link {target!r} leads nowhere from {folder.relative_to(ROOT)}/")
                languages = {p.name for p in language_folders()}
                for written, path in repository_paths(tr_source, folder):
                    why = foreign_path(path, folder.name, languages)
                    if why:
                        problems.append(f"{where}: {written!r} {why}: point the {folder.name} reader to the "
                                        f"{folder.name} edition")
        elif en_source != tr_source:
            problems.append(f"{where}: raw cell differs")
    return problems


def load(path):
    return json.loads(Path(path).read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------- the translations

def assert_no_drift(path, course=COURSE):
    """Fail with one line per drifted cell if the translation at ``path`` no longer matches its lecture."""
    english_path = course / path.name
    assert english_path.exists(), f"{path}: translates no English lecture, {english_path} does not exist"
    problems = drift(load(english_path), load(path), folder=path.parent)
    assert not problems, (f"{path.parent.name}/{path.name} has drifted from the English {path.name} "
                          f"(cells count from 0):\n  " + "\n  ".join(problems))


@pytest.mark.parametrize("path", translated_notebooks(), ids=lambda p: str(p.relative_to(COURSE)))
def test_translation_matches_english_lecture(path):
    assert_no_drift(path)


def test_every_language_folder_translates_only_lectures():
    for folder in language_folders():
        for path in folder.glob("*.ipynb"):
            assert (COURSE / path.name).exists(), f"{path.relative_to(ROOT)}: no English lecture of that name"


# ------------------------------------------------------------------------------ tests of the checker

LECTURE = COURSE / "01_self_attention.ipynb"


@pytest.fixture
def english():
    return load(LECTURE)


def index_of(notebook, kind, predicate=lambda source: True):
    return next(i for i, c in enumerate(notebook["cells"])
                if c["cell_type"] == kind and predicate("".join(c["source"])))


def edit(cell, old, new):
    source = "".join(cell["source"])
    assert old in source, f"the test expected {old!r} in the cell"
    cell["source"] = source.replace(old, new, 1)


def test_identical_copy_has_no_drift(english):
    assert drift(english, copy.deepcopy(english)) == []


def test_translated_comments_strings_and_prose_are_not_drift(english):
    translation = copy.deepcopy(english)
    for cell in translation["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code":
            # every comment and every string literal's text rewritten, as a translator would
            source = re.sub(r"#(?! NBVAL).*", "# commentaire traduit", source)
            source = re.sub(r'"(?![ "])([A-Za-z][^"{}\n]*)"', r'"texte traduit \1"', source)
        else:
            source = re.sub(r"\b(the|is|and|of)\b", "le", source)
        cell["source"] = source
        for output in cell.get("outputs", []):
            if output["output_type"] == "stream":
                output["text"] = re.sub(r"\b(the|weights|output)\b", "les poids", "".join(output["text"]))
    assert drift(english, translation) == []


def test_changed_code_in_one_language_is_reported_with_its_cell(english):
    translation = copy.deepcopy(english)
    index = index_of(translation, "code", lambda s: "d = 512" in s)
    edit(translation["cells"][index], "d = 512", "d = 256")
    problems = drift(english, translation)
    assert len(problems) == 1 and problems[0].startswith(f"cell {index} (code") and "code differs" in problems[0]
    assert "English: d = 512" in problems[0] and "translation: d = 256" in problems[0], problems


def test_changed_f_string_placeholder_or_format_is_drift(english):
    translation = copy.deepcopy(english)
    index = index_of(translation, "code", lambda s: "{length:2d}" in s)
    edit(translation["cells"][index], "{length:2d}", "{length:3d}")
    assert any(p.startswith(f"cell {index} (code") for p in drift(english, translation))


def test_added_or_removed_cell_is_drift(english):
    translation = copy.deepcopy(english)
    del translation["cells"][3]
    problems = drift(english, translation)
    assert problems[0].startswith("cells: the English notebook has 58 cells, the translation 57; matched by cell id")
    assert problems[1:] == [f"cell 3 (code, English starts {first_line(english['cells'][3])!r}): no translated "
                            f"cell with its id {english['cells'][3]['id']!r} at this place: translate it and "
                            "insert it (the English cell is new or has moved)"], problems


def test_added_english_cell_is_named_without_ids(english):
    """Without cell ids the cells are matched by kind: a new English markdown cell is still found."""
    for cell in english["cells"]:
        cell.pop("id", None)
    translation = copy.deepcopy(english)
    english["cells"].insert(5, {"cell_type": "markdown", "metadata": {}, "source": "A new paragraph."})
    problems = drift(english, translation)
    assert "matched by cell kind" in problems[0]
    assert any(p.startswith("cell 5 (markdown, English starts 'A new paragraph.')") for p in problems), problems
    assert not any("code differs" in p or "outputs" in p for p in problems), problems


def test_changed_formula_is_drift(english):
    translation = copy.deepcopy(english)
    index = index_of(translation, "markdown", lambda s: r"\sqrt d" in s)
    edit(translation["cells"][index], r"\sqrt d", r"\sqrt n")
    problems = drift(english, translation)
    assert len(problems) == 1 and problems[0].startswith(f"cell {index} (markdown") and "formulas" in problems[0]


def test_other_numbers_in_an_output_are_drift(english):
    translation = copy.deepcopy(english)
    index = index_of(translation, "code", lambda s: "for length in (1, 3, 10)" in s)
    output = translation["cells"][index]["outputs"][0]
    output["text"] = "".join(output["text"]).replace("0.", "1.", 1)
    problems = drift(english, translation)
    assert len(problems) == 1 and f"cell {index} (code" in problems[0] and "other numbers" in problems[0]


def test_missing_figure_and_lost_nbval_marker_are_drift():
    english = load(COURSE / "02_cnn_rnn_attention.ipynb")
    translation = copy.deepcopy(english)
    marked = index_of(translation, "code", lambda s: "NBVAL_IGNORE_OUTPUT" in s)
    edit(translation["cells"][marked], "# NBVAL_IGNORE_OUTPUT", "# à ignorer par nbval")
    figure = next(i for i, c in enumerate(translation["cells"]) if c["cell_type"] == "code"
                  and any("image/png" in o.get("data", {}) for o in c["outputs"]))
    translation["cells"][figure]["outputs"] = [o for o in translation["cells"][figure]["outputs"]
                                               if "image/png" not in o.get("data", {})]
    problems = drift(english, translation)
    assert any(p.startswith(f"cell {marked} ") and "nbval markers" in p for p in problems), problems
    assert any(p.startswith(f"cell {figure} ") and "outputs" in p for p in problems), problems


def test_magics_are_program(english):
    translation = copy.deepcopy(english)
    index = index_of(translation, "code", lambda s: "%matplotlib inline" in s)
    edit(translation["cells"][index], "%matplotlib inline", "%matplotlib notebook")
    assert any(p.startswith(f"cell {index} (code") for p in drift(english, translation))


def test_drifted_file_fails_the_parametrized_test(english, tmp_path):
    """The test's own assertion, on files laid out like course/ and course/xx/, names the drifted cell."""
    (tmp_path / "xx").mkdir()
    (tmp_path / LECTURE.name).write_text(json.dumps(english), encoding="utf-8")
    translation = copy.deepcopy(english)
    (tmp_path / "xx" / LECTURE.name).write_text(json.dumps(translation), encoding="utf-8")
    assert_no_drift(tmp_path / "xx" / LECTURE.name, course=tmp_path)      # an unchanged copy passes
    index = index_of(translation, "code", lambda s: "rng = np.random.default_rng(0)" in s)
    edit(translation["cells"][index], "default_rng(0)", "default_rng(1)")
    (tmp_path / "xx" / LECTURE.name).write_text(json.dumps(translation), encoding="utf-8")
    with pytest.raises(AssertionError, match=rf"(?s)drifted.*cell {index} \(code.*default_rng\(1\)"):
        assert_no_drift(tmp_path / "xx" / LECTURE.name, course=tmp_path)


def test_decimal_comma_in_a_formula_is_not_drift(english):
    """French typesets 22.6 as 22{,}6: the same formula; another number is still drift."""
    translation = copy.deepcopy(english)
    index = index_of(translation, "markdown", lambda s: r"\sqrt{512} \approx 22.6" in s)
    edit(translation["cells"][index], r"\approx 22.6", r"\approx 22{,}6")
    assert drift(english, translation) == []
    edit(translation["cells"][index], r"\approx 22{,}6", r"\approx 22{,}7")
    problems = drift(english, translation)
    assert len(problems) == 1 and "formulas differ" in problems[0] and "22.7" in problems[0], problems


def test_paths_into_another_language_are_drift(english):
    """A French lecture that sends its reader to the English (or Chinese) assignment or lecture is reported,
    in code spans as in links; its own edition's paths pass."""
    index = index_of(english, "markdown", lambda s: "`release/ps1_learnable_pe`" in s)
    french = COURSE / "fr"
    translation = copy.deepcopy(english)
    assert drift(english, translation) == []                       # without a folder: no language to hold to
    problems = drift(english, translation, folder=french)
    assert [p for p in problems if p.startswith(f"cell {index} ")] == problems and len(problems) == 2, problems
    assert ("'release/ps1_learnable_pe' leads to the English release/ps1_learnable_pe, not "
            "release/ps1_learnable_pe_fr") in problems[0], problems
    for name in ("ps1_learnable_pe", "ps2_relative_pe"):
        edit(translation["cells"][index], f"`release/{name}`", f"`release/{name}_fr`")
    assert drift(english, translation, folder=french) == []
    edit(translation["cells"][index], "`release/ps1_learnable_pe_fr`", "`release/ps1_learnable_pe_zh/`")
    edit(translation["cells"][index], "## Exercises", "## Exercises\n\n[next](../02_cnn_rnn_attention.ipynb), "
                                                      "[also next](02_cnn_rnn_attention.ipynb)")
    problems = drift(english, translation, folder=french)
    assert len(problems) == 2, problems
    assert any("'release/ps1_learnable_pe_zh' leads to the zh edition release/ps1_learnable_pe_zh" in p
               for p in problems), problems
    assert any("'../02_cnn_rnn_attention.ipynb' leads to the English course/02_cnn_rnn_attention.ipynb, not "
               "course/fr/02_cnn_rnn_attention.ipynb" in p for p in problems), problems

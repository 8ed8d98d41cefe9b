"""attnkit_grader.similarity: pairs of alike answers are flagged for a person, whatever the names or layout;
independent answers are not; the page escapes student code; nothing changes a score."""

import re
import shutil
from pathlib import Path

import nbformat

from attnkit_grader.course import Course
from attnkit_grader.release_cells import Release
from attnkit_grader.similarity import THRESHOLD, shingles, similar_pairs, tokens, write_report

ROOT = Path(__file__).resolve().parents[1]
CLASS = ROOT / "examples" / "example_class"
PS1 = "ps1_learnable_pe"


def disguised(path, out):
    """The notebook at ``path`` with its answer's names renamed, comments added and blank lines moved."""
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "pe_answer":
            source = cell.source
            for old, new in (("table", "tbl"), ("num_hiddens", "width"), ("max_len", "longest"), ("X", "inputs")):
                source = re.sub(rf"\b{old}\b", new, source)
            cell.source = "# my own work, honestly\n\n" + source.replace("\n", "  # ok\n", 3)
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, out)
    return out


def test_tokens_ignore_names_numbers_strings_comments_and_layout():
    assert tokens("y = f(x, 2)  # note\n") == tokens("out   =   g(value, 7)\n\n") == ["N", "=", "N", "(", "N", ",", "0", ")"]
    assert tokens("if a: return 'x'") != tokens("while a: return 'x'")
    assert tokens("def f(:\n") == ["def", "N", "(", ":"]                   # broken code: what tokenised before
    assert shingles("a = b") == set()                                        # shorter than a run


def test_a_disguised_copy_is_flagged_and_independent_or_blank_work_is_not(tmp_path):
    release = Release.read(Course(ROOT), PS1)
    notebooks = {
        "ada": CLASS / "ref_solution" / PS1 / f"{PS1}.ipynb",
        "copycat": disguised(CLASS / "ref_solution" / PS1 / f"{PS1}.ipynb", tmp_path / "copycat.ipynb"),
        "blank": CLASS / "blank" / PS1 / f"{PS1}.ipynb",
        "broken": CLASS / "broken_json" / PS1 / f"{PS1}.ipynb",
    }
    independent = tmp_path / "own.ipynb"
    notebook = nbformat.read(notebooks["ada"], as_version=4)
    for cell in notebook.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "pe_answer":
            cell.source = ("import torch\nfrom torch import nn\n\n\nclass LearnablePositionalEncoding(nn.Module):\n"
                           "    def __init__(self, num_hiddens, dropout, max_len=1000):\n"
                           "        super().__init__()\n        self.max_len = max_len\n"
                           "        self.P = nn.Parameter(torch.empty(max_len, num_hiddens).normal_(0, 0.02))\n"
                           "        self.drop = nn.Dropout(dropout)\n\n"
                           "    def forward(self, X):\n        n = X.shape[1]\n        if n > self.max_len:\n"
                           "            raise ValueError(f'X.shape[1]={n} > max_len={self.max_len}')\n"
                           "        return self.drop(X + self.P[None, :n])\n")
    nbformat.write(notebook, independent)
    notebooks["own"] = independent
    pairs = similar_pairs(release, notebooks)
    assert [(p.first, p.second) for p in pairs] == [("ada", "copycat")]
    assert pairs[0].similarity >= THRESHOLD
    assert all(p.similarity < THRESHOLD for p in similar_pairs(release, notebooks, threshold=0.0)
               if {p.first, p.second} != {"ada", "copycat"})


def test_the_page_shows_the_pairs_side_by_side_and_escapes_student_code(tmp_path):
    course = Course(ROOT)
    folders = {}
    for student in ("ann", "ben"):
        folder = tmp_path / student
        notebook = nbformat.read(CLASS / "ref_solution" / PS1 / f"{PS1}.ipynb", as_version=4)
        for cell in notebook.cells:
            if cell.metadata.get("nbgrader", {}).get("grade_id") == "pe_answer":
                cell.source += "\n\nNOTE = '<script>alert(1)</script>'\n"
        folder.mkdir()
        nbformat.write(notebook, folder / f"{PS1}.ipynb")
        folders[(student, PS1)] = folder
    found = write_report(course, [PS1], folders, tmp_path / "similarity.html")
    html = (tmp_path / "similarity.html").read_text()
    assert [(p.first, p.second) for p in found[PS1]] == [("ann", "ben")]
    assert "ann and ben: 100% alike" in html and 'class="shared"' in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "decides nothing and changes no score" in html
    shutil.rmtree(tmp_path / "ben")
    empty = write_report(course, [PS1], {("ann", PS1): tmp_path / "ann"}, tmp_path / "again.html")
    assert empty == {PS1: []} and "No pair reaches the threshold." in (tmp_path / "again.html").read_text()


INDEPENDENT_PE = '''class LearnablePositionalEncoding(nn.Module):
    def __init__(self, num_hiddens, dropout, max_len=1000):
        super().__init__()
        self.rows = nn.Parameter(torch.zeros(max_len, num_hiddens))
        self.p = dropout
        self.longest = max_len

    def forward(self, X):
        if X.shape[1] > self.longest:
            raise ValueError(f"X.shape[1]={X.shape[1]} > max_len={self.longest}")
        added = X + self.rows.narrow(0, 0, X.shape[1])
        return nn.functional.dropout(added, self.p, self.training)
'''


def test_a_copy_of_the_instructors_solution_is_flagged_for_review_never_an_independent_answer(tmp_path):
    """Point 7a of issue 13: the pre-check flags answers as alike to the solution as a pasted, renamed copy
    (a remark in the reports and on the feedback page; the score is left alone)."""
    from attnkit_grader.precheck import check_submission
    release, source = ROOT / "release" / PS1, ROOT / "source" / PS1
    copy = disguised(CLASS / "ref_solution" / PS1 / f"{PS1}.ipynb", tmp_path / "copy" / f"{PS1}.ipynb")
    remarks = [issue.reason for issue in check_submission(copy.parent, release, source)]
    flagged = [r for r in remarks if "answer cell 'pe_answer' is 100% alike to the notebook's solution" in r]
    assert flagged and "score is unchanged" in flagged[0] and not any(i.fatal for i in check_submission(
        copy.parent, release, source))
    own = nbformat.read(release / f"{PS1}.ipynb", as_version=4)
    for cell in own.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "pe_answer":
            cell.source = INDEPENDENT_PE
    (tmp_path / "own").mkdir()
    nbformat.write(own, tmp_path / "own" / f"{PS1}.ipynb")
    assert not [i for i in check_submission(tmp_path / "own", release, source) if "alike" in i.reason]
    assert not [i for i in check_submission(copy.parent, release) if "alike" in i.reason]   # no source: no claim


def test_the_pairs_worked_out_ahead_make_the_same_page_as_pairs_worked_out_at_the_end(tmp_path):
    """The grading run works the pairs out on a thread while the sandboxes run (similarity.Ahead), among every
    submission it grades; the report shows those graded in the end. Its page is the one write_report makes from
    the graded ones alone, and a folder it did not work out (another hand-in) is worked out again."""
    from attnkit_grader.similarity import Ahead

    course = Course(ROOT)
    students = ("ref_solution", "bug_no_clip", "blank", "partial", "bug_frozen_table")
    folders = {(student, PS1): CLASS / student / PS1 for student in students if (CLASS / student / PS1).is_dir()}
    folders[("copycat", PS1)] = disguised(CLASS / "ref_solution" / PS1 / f"{PS1}.ipynb",
                                          tmp_path / "copycat" / f"{PS1}.ipynb").parent
    ahead = Ahead(course, [PS1], folders)
    for shown in (folders, {key: folder for key, folder in folders.items() if key[0] != "bug_no_clip"}):
        expected = write_report(course, [PS1], shown, tmp_path / "expected.html")
        found = ahead.write_report(course, [PS1], shown, tmp_path / "found.html")
        assert [(p.first, p.second) for p in found[PS1]] == [(p.first, p.second) for p in expected[PS1]]
        assert (tmp_path / "found.html").read_text() == (tmp_path / "expected.html").read_text()
    assert found[PS1], "the example class's copies of the reference make pairs"
    other = {**folders, ("copycat", PS1): tmp_path / "elsewhere"}
    shutil.copytree(CLASS / "blank" / PS1, other[("copycat", PS1)])
    expected = write_report(course, [PS1], other, tmp_path / "expected.html")
    found = ahead.write_report(course, [PS1], other, tmp_path / "found.html")
    assert found == expected and ("blank", "copycat") in [(p.first, p.second) for p in found[PS1]]
    assert (tmp_path / "found.html").read_text() == (tmp_path / "expected.html").read_text()

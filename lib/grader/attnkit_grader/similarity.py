"""Class-wide similarity of the answers: pairs of submissions whose code is alike, side by side, for a person.

For each assignment, the code of every submission's answer cells (the cells nbgrader marks as solution
cells in the release) is reduced to its token stream with the names, numbers and strings replaced by
placeholders and comments dropped, so renaming variables or reformatting changes nothing. Two
submissions are compared by the overlap (Jaccard) of their runs of ``K`` consecutive tokens, leaving out
the runs of the released notebook itself (the given code everybody shares). Pairs at or above the
threshold are listed in ``similarity.html``, the two answers side by side, the lines they share marked.

The same measure against every solution the course holds (:func:`resemblance`, :mod:`.copies`) flags pasted
or lightly edited copies of them in the reports and on the student's feedback page (``precheck``).

The grading run works the pairs out on a thread while the sandboxes run (:class:`Ahead`): they depend on the
submitted files only, and cost seconds at a hundred hand-ins, which the grading process would otherwise spend alone
after the last sandbox.

This flags; it never changes a score. Resemblance has innocent causes (a short exercise has few good
answers, students who worked from the same lecture) and the kit's own example class is built from one
reference on purpose, so a person reads the pairs and decides.
"""

import functools
import io
import json
import keyword
import tokenize
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import jinja2

from .release_cells import Release, grade_id_of, source_of

K = 8                       # tokens per run
THRESHOLD = 0.8             # Jaccard overlap from which a pair is listed
SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
           tokenize.ENCODING, tokenize.ENDMARKER}


@dataclass
class Pair:
    """Two submissions of one assignment whose answers overlap by ``similarity`` (0 to 1)."""

    assignment: str
    first: str
    second: str
    similarity: float
    code: tuple               # (first's answer code, second's)

    @functools.cached_property
    def sides(self):
        """Each answer's [(line, shared with the other)], as the page shows them."""
        return [shared_lines(self.code[0], self.code[1]), shared_lines(self.code[1], self.code[0])]


def tokens(code):
    """The normalised token stream of ``code``: names, numbers and strings as placeholders, no comments
    or layout; keywords and operators as they are. Code that does not tokenise gives what came before."""
    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type in SKIPPED:
                continue
            if token.type == tokenize.NAME:
                found.append(token.string if keyword.iskeyword(token.string) else "N")
            elif token.type == tokenize.NUMBER:
                found.append("0")
            elif token.type == tokenize.STRING:
                found.append("S")
            else:
                found.append(token.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return found


@functools.lru_cache(maxsize=256)
def shingles(code):
    """The set (frozen) of runs of ``K`` consecutive normalised tokens of ``code``.

    Kept for the batch: every hand-in is compared with the same released cells and known solutions, whose
    tokenising took most of the pre-check's time (15 of 17 s at 102 hand-ins). 256 entries hold an assignment's
    released cells and known solutions many times over, and a few megabytes."""
    stream = tokens(code)
    return frozenset(tuple(stream[i:i + K]) for i in range(len(stream) - K + 1))


def answer_code(notebook_path, answer_ids):
    """The code of the answer cells (``answer_ids``) of a submitted notebook, "" if it cannot be read."""
    try:
        notebook = json.loads(Path(notebook_path).read_text(encoding="utf-8"))
        cells = notebook["cells"] if isinstance(notebook, dict) else []
    except (OSError, ValueError, KeyError):
        return ""
    parts = [source_of(cell) or "" for cell in cells if isinstance(cell, dict) and cell.get("cell_type") == "code"
             and grade_id_of(cell) in answer_ids]
    return "\n\n".join(parts)


def resemblance(code, reference, given=frozenset()):
    """Overlap (Jaccard, 0 to 1) of the runs of ``code`` and of ``reference`` once the runs in ``given``
    (the code the release hands out) are set aside; 0 when either has nothing of its own."""
    mine, theirs = shingles(code) - given, shingles(reference) - given
    if not mine or not theirs:
        return 0.0
    return len(mine & theirs) / len(mine | theirs)


def similar_pairs(release, notebooks, threshold=THRESHOLD):
    """[Pair] of ``notebooks`` ({student: path}) for the assignment of ``release``, most similar first."""
    answer_ids = {grade_id for grade_id, (cell_type, _) in release.solutions.items() if cell_type == "code"}
    given = set().union(*(shingles(source) for cell_type, source in release.solutions.values()
                          if cell_type == "code" and source))
    code = {student: answer_code(path, answer_ids) for student, path in sorted(notebooks.items())}
    runs = {student: shingles(text) - given for student, text in code.items()}
    students = sorted(s for s in runs if runs[s])
    pairs = []
    for i, first in enumerate(students):
        for second in students[i + 1:]:
            a, b = runs[first], runs[second]
            overlap = len(a & b) / len(a | b)
            if overlap >= threshold:
                pairs.append(Pair(release.assignment, first, second, overlap, (code[first], code[second])))
    return sorted(pairs, key=lambda pair: (-pair.similarity, pair.first, pair.second))


@functools.lru_cache(maxsize=65536)
def line_tokens(line):
    """The normalised tokens of one stripped line, as a tuple (cached: a class's answers repeat their lines
    across the many pairs they are shown in)."""
    return tuple(tokens(line))


def shared_lines(code, other):
    """[(line, shared)] of ``code``: shared when the other answer has a line with the same tokens."""
    theirs = {line_tokens(line.strip()) for line in other.splitlines() if line.strip()}
    shown = []
    for line in code.splitlines():
        mine = line_tokens(line.strip()) if line.strip() else ()
        shown.append((line, len(mine) > 2 and mine in theirs))
    return shown


PAGE = jinja2.Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True).from_string("""<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>Similar answers</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2rem; color: #222; }
table.code { border-collapse: collapse; width: 100%; table-layout: fixed; } td { vertical-align: top; width: 50%; }
pre { margin: 0; padding: .5rem; background: #f6f8fa; font-size: .8rem; white-space: pre-wrap; }
.shared { background: #fff3b0; } h3 { margin-top: 2rem; } .note { max-width: 60rem; }
</style></head>
<body>
<h1>Similar answers</h1>
<p class="note">Pairs of submissions whose answer cells overlap by {{ threshold_percent }}% or more, after
names, numbers, strings, comments and layout are set aside and the code given in the release is left out.
Lines the other answer also has are marked. This list flags, it decides nothing and changes no score:
short exercises have few good answers, and students may have worked from the same lecture. Read the pairs.</p>
{% for assignment, pairs in by_assignment.items() %}
<h2>{{ assignment }}: {{ pairs | length }} pair{{ "" if pairs | length == 1 else "s" }}</h2>
{% if not pairs %}<p>No pair reaches the threshold.</p>{% endif %}
{% for pair in pairs %}
<h3>{{ pair.first }} and {{ pair.second }}: {{ "%.0f" | format(100 * pair.similarity) }}% alike</h3>
<table class="code"><tr>
{% for side in pair.sides %}
<td><pre>{% for line, shared in side %}<span{% if shared %} class="shared"{% endif %}>{{ line }}</span>
{% endfor %}</pre></td>
{% endfor %}
</tr></table>
{% endfor %}
{% endfor %}
</body>
</html>
""")


def page(by_assignment, threshold=THRESHOLD):
    """The HTML text of the report: {assignment: [Pair]}."""
    shown = {assignment: [{"first": p.first, "second": p.second, "similarity": p.similarity, "sides": p.sides}
                          for p in pairs] for assignment, pairs in by_assignment.items()}
    return PAGE.render(by_assignment=shown, threshold_percent=round(100 * threshold))


def write_report(course, assignments, folders, path, threshold=THRESHOLD):
    """Write the report for the submissions in ``folders`` ({(student, assignment): folder holding the
    notebook}); return {assignment: [Pair]}. An assignment whose release cannot be read (several notebooks,
    none) is listed without pairs."""
    by_assignment = {assignment: pairs_of(course, assignment, folders, threshold) for assignment in assignments}
    Path(path).write_text(page(by_assignment, threshold), encoding="utf-8")
    return by_assignment


def pairs_of(course, assignment, folders, threshold=THRESHOLD):
    """[Pair] of ``assignment`` among the submissions in ``folders`` ({(student, assignment): folder}); none when
    its release cannot be read."""
    try:
        release = Release.read(course, assignment)
    except (OSError, ValueError):
        return []
    notebooks = {student: Path(folder) / f"{release.name}.ipynb"
                 for (student, a), folder in folders.items() if a == assignment}
    return similar_pairs(release, notebooks, threshold)


class Ahead:
    """The pairs of ``assignments`` among ``folders`` ({(student, assignment): folder}), worked out on a thread
    from now on, shown lines included; :meth:`write_report` then writes the report as :func:`write_report` would.

    A pair depends on its two submissions only, so the pairs among the submissions a report shows (those graded,
    found when the run ends) are the pairs worked out here between those submissions. A report that shows a
    submission not worked out here (another folder, another threshold) is worked out again, whole."""

    def __init__(self, course, assignments, folders, threshold=THRESHOLD):
        self.folders = dict(folders)
        self.threshold = threshold
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="similarity")
        self.pairs = {a: self.executor.submit(self.work_out, course, a) for a in assignments}
        self.page = self.executor.submit(self.whole_page)         # the page when every one of them is graded
        self.executor.shutdown(wait=False)

    def whole_page(self):
        return page({assignment: pairs.result() for assignment, pairs in self.pairs.items()}, self.threshold)

    def work_out(self, course, assignment):
        pairs = pairs_of(course, assignment, self.folders, self.threshold)
        for pair in pairs:
            pair.sides                                   # noqa: B018 - the page's costly part, done here too
        return pairs

    def write_report(self, course, assignments, folders, path, threshold=THRESHOLD):
        """:func:`write_report`, from the pairs worked out ahead where they cover ``folders``."""
        by_assignment = {}
        whole = list(assignments) == list(self.pairs)
        for assignment in assignments:
            mine = {key: folder for key, folder in folders.items() if key[1] == assignment}
            ahead = self.pairs.get(assignment)
            if ahead is None or threshold != self.threshold or any(
                    self.folders.get(key) != folder for key, folder in mine.items()):
                by_assignment[assignment] = pairs_of(course, assignment, mine, threshold)
                whole = False
                continue
            shown = {student for student, _ in mine}
            by_assignment[assignment] = [pair for pair in ahead.result()
                                         if pair.first in shown and pair.second in shown]
            whole = whole and by_assignment[assignment] == ahead.result()
        text = self.page.result() if whole else page(by_assignment, threshold)
        Path(path).write_text(text, encoding="utf-8")
        return by_assignment

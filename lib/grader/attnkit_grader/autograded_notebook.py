"""nbgrader's autograded/ copies, written by the sandboxed grader for the formgrader and generate_feedback.

nbgrader's formgrader shows ``autograded/STUDENT/ASSIGNMENT/NAME.ipynb`` for each submission the
gradebook holds (its SubmissionHandler renders that file with the 'formgrade' HTML template; the manual
scores and comments are read from and written to the gradebook by ``grade_id``), and ``nbgrader
generate_feedback`` turns the same file into feedback, with the scores it finds in the gradebook. So the
copy needs: the notebook's cells in order, the nbgrader metadata of every graded and read-only cell
(``grade_id``, ``grade``, ``solution``, ``locked``, ``points``, ...), one cell per ``grade_id``, and
valid nbformat 4. It needs neither checksums that match nor the hidden tests.

The copy is built in the grading parent, never in a sandbox, from:

- the submission as :meth:`~attnkit_grader.release_cells.Release.restored` gives it (read-only cells put
  back from the RELEASE, so no hidden test is ever in it), with the release's nbgrader metadata and cell
  type on the first cell of each release ``grade_id`` (as nbgrader's OverwriteCells and DeduplicateIds
  do; later copies and unknown ids lose their nbgrader metadata), the release's tags on those cells (its
  ``raises-exception``: Run All goes on past a failing check) and no other cell metadata;
- the text each code cell wrote in the sandbox (:func:`captured`, stored in the journal's record so a
  resumed submission gets the same copy), as ``stream`` outputs only: never HTML, images or other rich
  outputs, with escape sequences and control characters removed and the length capped, since the
  student wrote it and the instructor reads it in a browser;
- for each autograded test cell, the judge's verdict lines (passed or not, points, message) instead
  of what the visible test printed.

Student markdown is untrusted too: the formgrader renders markdown cells without sanitising their HTML,
in the Jupyter server's own origin, where a script could act as the instructor. Every markdown cell
that is not word for word a cell of the release is therefore made inert (:func:`inert_markdown`).
"""

import copy
import io
import json
import re
import tokenize
from pathlib import Path

import nbformat
from nbconvert.filters import strip_ansi

from attnkit.i18n import N_

from . import feedback, files
from .offline import LANGUAGE_KEY
from .editions import ENGLISH
from .release_cells import grade_id_of
from .results import Message

OUTPUT_CHARS = 10_000          # characters kept of one stream (stdout or stderr) of one cell
NOTEBOOK_CHARS = 200_000       # characters of captured output kept in one copy (the journal holds them)
ATTACHMENT_TYPES = ("image/png", "image/jpeg", "image/gif")
CELL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# nbconvert's strip_ansi removes the colour and cursor sequences (CSI). What it leaves: operating-system
# commands (OSC: ESC ] ... BEL or ESC \, e.g. a terminal hyperlink, whose payload would show as text) and
# two-character escapes (ESC M, ESC 7, ...).
OTHER_ESCAPES = re.compile(r"\x1b(\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
SCHEME = re.compile(r"(?i)(java|vb)(\s*)script(\s*):")


def text_of(value):
    """A string from untrusted JSON, with lone surrogates (which UTF-8 cannot hold) replaced."""
    if isinstance(value, list) and all(isinstance(part, str) for part in value):
        value = "".join(value)
    if not isinstance(value, str):
        return None
    return value.encode("utf-8", "replace").decode("utf-8")


def plain_text(value):
    """Untrusted output as plain text: no ANSI escape sequences, no control characters but tab and newline."""
    text = text_of(value) or ""
    text = OTHER_ESCAPES.sub("", strip_ansi(text.replace("\r\n", "\n")))
    return CONTROL.sub("", text)


# What the grader writes into a cell's outputs of the autograded copy, in the hand-in's language.
CUT_BYTES = N_("[output cut by the grader: {total} bytes in all, only the start is shown]")
CUT_CHARACTERS = N_("[output cut by the grader: {total} characters in all, only the start is shown]")
NOT_RUN = N_("[not run by the grader]")
NOT_RUN_BECAUSE = N_("[not run by the grader: {why}]")
AT_LINE = N_("{error} (line {line})")


def clipped(text, limit, total=None, gettext=str):
    """``text`` cut to ``limit`` characters, saying how much was left out (``total``: bytes written) with
    ``gettext`` (the hand-in's language)."""
    if len(text) <= limit and total is None:
        return text
    kept = text[:limit]
    if not kept.endswith("\n"):
        kept += "\n"
    note = gettext(CUT_BYTES).format(total=total) if total is not None else \
        gettext(CUT_CHARACTERS).format(total=len(text))
    return kept + note + "\n"


def captured(report, skipped=(), language=ENGLISH):
    """{cell number (str): [[stream name, text], ...]} from the runner's report, for the journal entry.

    ``report`` is untrusted (it comes from the sandbox). A cell's stdout, then its last expression's
    value (as 'result': :func:`notebook` drops it when the cell ends with ``;``, as Jupyter does), then
    its stderr, error or timeout; cells the grader skipped (``skipped``: [(number, why)]) say so. Each
    stream is cut to OUTPUT_CHARS and all of them together to NOTEBOOK_CHARS. What the grader adds (a cut, a
    skipped cell, a timeout, the error's line) is worded in ``language``, the hand-in's.
    """
    gettext = feedback.translations(language).gettext
    translate = None if language == ENGLISH else gettext
    found, room = {}, NOTEBOOK_CHARS
    cells = report.get("cells") if isinstance(report, dict) else None
    why_skipped = {number: why for number, why in skipped}
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict):
            continue
        index = cell.get("index")
        if not isinstance(index, int) or isinstance(index, bool) or str(index) in found:
            continue
        streams = []
        for name in ("stdout", "result", "stderr"):
            text = plain_text(cell.get(name))
            total = cell.get(f"{name}_bytes")
            total = total if isinstance(total, int) and not isinstance(total, bool) else None
            if name == "result" and text:
                text += "\n"
            if text:
                streams.append([name, clipped(text, OUTPUT_CHARS, total, gettext)])
        status, error = cell.get("status"), plain_text(cell.get("error"))[:OUTPUT_CHARS]
        if status == "timeout":                   # the sandbox's words are not shown: the grader says it
            error = Message.make("ran over its time limit").render(translate)
        if status in ("error", "timeout") and error:
            line = cell.get("line")
            if isinstance(line, int) and not isinstance(line, bool):
                error = gettext(AT_LINE).format(error=error, line=line)
            streams.append(["stderr", f"{error}\n"])
        elif status == "skipped":
            why = why_skipped.get(index)
            why = plain_text(why.render(translate) if isinstance(why, Message) else why or "")[:500]
            streams.append(["stderr", (gettext(NOT_RUN_BECAUSE).format(why=why) if why else gettext(NOT_RUN)) + "\n"])
        kept = []
        for name, text in streams:
            if room <= 0:
                break
            if len(text) > room:
                text = clipped(text, room, gettext=gettext)
            room -= len(text)
            kept.append([name, text])
        if kept:
            found[str(index)] = kept
    return found


# The frame of the verdict lines, in the student's language (the grader's catalog); a check's name and message are
# rendered like the feedback page's (the assignment's own catalog: see feedback.translations).
CHECKED = N_("Checked by the grader outside the notebook: {earned} / {points} points")
NO_CHECK = N_("no automatic check ran for this cell")
PASSED, FAILED = N_("passed"), N_("FAILED")
# A check's name and its message, joined as each language writes a colon (fr: a no-break space before it; zh: "：").
SAYS = N_("{check}: {message}")
KIND_NAMES = {"values": N_("values"), "structure": N_("structure"), "property": N_("property")}


def verdict_lines(checks, max_points, language=ENGLISH, assignment=None):
    """What the formgrader and nbgrader's feedback page show under a test cell: the judge's checks (CheckResults)
    of ``assignment``, never test code, in ``language`` (the hand-in's edition:
    :func:`~attnkit_grader.feedback.language`)."""
    gettext = feedback.translations(language, assignment).gettext
    translate = None if language == ENGLISH else gettext
    earned = sum(check.points for check in checks)
    lines = [gettext(CHECKED).format(earned=f"{earned:g}", points=f"{max_points:g}")]
    if not checks:
        lines.append(gettext(NO_CHECK))
    for check in checks:
        text = f"{gettext(PASSED if check.passed else FAILED)} {check.points:g}/{check.max_points:g} " \
               f"[{gettext(KIND_NAMES[check.kind])}] {plain_text(gettext(check.name) if check.name else '')}"
        if check.message:
            text = gettext(SAYS).format(check=text, message=plain_text(check.text(translate)))
        lines.append(text)
    return clipped("\n".join(lines) + "\n", OUTPUT_CHARS, gettext=gettext)


def inert_markdown(source):
    """Markdown that renders as the student typed it, but with no HTML, entity or script link in it.

    ``&`` and ``<`` become entities (so raw HTML and character references show as text) and a
    ``javascript:``/``vbscript:`` scheme gets a zero-width space before its colon. Inside backticks
    the entities show as typed (``&lt;``): the price of not trusting a guess at where code starts.
    """
    text = source.replace("&", "&amp;").replace("<", "&lt;")
    return SCHEME.sub(lambda m: m.group(0)[:-1] + "\u200b:", text)


def safe_attachments(cell):
    """A markdown cell's attachments reduced to base64 PNG, JPEG and GIF images (None when none are left)."""
    attachments = cell.get("attachments")
    if not isinstance(attachments, dict):
        return None
    kept = {}
    for name, bundle in attachments.items():
        if isinstance(name, str) and CELL_ID.fullmatch(name.replace(".", "_")) and isinstance(bundle, dict):
            images = {mime: data for mime, data in bundle.items() if mime in ATTACHMENT_TYPES and isinstance(data, str)}
            if images:
                kept[name] = images
    return kept or None


def notebook(release, data, result, language=ENGLISH):
    """The autograded copy (an nbformat NotebookNode) of the submission ``data`` (bytes as handed in).

    ``release``: the assignment's :class:`~attnkit_grader.release_cells.Release`; ``result``: the
    submission's :class:`~attnkit_grader.results.SubmissionResult` (its checks, and in ``run`` the runner's
    cells and their captured ``outputs``); ``language``: the hand-in's, which the verdict lines are in.
    ValueError when the submission has no list of cells (such a submission is never graded).
    """

    try:
        restored = json.loads(release.restored(data).decode("utf-8"))
        cells = restored["cells"]
    except (UnicodeDecodeError, ValueError, RecursionError, KeyError, TypeError) as error:
        raise ValueError(f"the submission has no cells to copy ({type(error).__name__})") from None
    if not isinstance(cells, list):
        raise ValueError("the submission has no list of cells to copy")
    released = {}
    for cell in release.notebook["cells"]:
        grade_id = grade_id_of(cell)
        if grade_id:
            released.setdefault(grade_id, cell)
    release_markdown = {text_of(c.get("source")) for c in release.notebook["cells"] if c.get("cell_type") == "markdown"}
    tests = {grade_id: result.cells.get(grade_id, blank) for grade_id, blank in release.graded.items()
             if blank.kind == "test"}
    outputs = result.run.get("outputs") if isinstance(result.run.get("outputs"), dict) else {}
    ran = {c.get("index") for c in result.run.get("cells", []) if isinstance(c, dict)
           and c.get("status") in ("ok", "error", "timeout")}

    copied, graded_ids, cell_ids, count = [], set(), set(), 0
    for index, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            continue                                      # the runner skipped it too
        source = text_of(cell.get("source", "")) or ""
        grade_id = grade_id_of(cell)
        cell_type, metadata = cell["cell_type"], {}
        if grade_id in released and grade_id not in graded_ids:
            graded_ids.add(grade_id)
            model = released[grade_id]
            cell_type = model["cell_type"]
            metadata = {key: copy.deepcopy(model["metadata"][key])
                        for key in ("deletable", "editable", "nbgrader", "tags") if key in model.get("metadata", {})}
        else:
            grade_id = None
        if cell_type == "code":
            new = nbformat.v4.new_code_cell(source, metadata=metadata)
            if grade_id in tests:
                new.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                                      text=verdict_lines(tests[grade_id].checks,
                                                                         tests[grade_id].max_points, language,
                                                                         result.assignment))]
            elif cell["cell_type"] == "code":
                quiet = ends_quietly(source)                  # a value is shown as text, never rich
                new.outputs = [nbformat.v4.new_output("stream", name="stderr" if name == "stderr" else "stdout",
                                                      text=text)
                               for name, text in stream_list(outputs.get(str(index)))
                               if not (quiet and name == "result")]
            if cell["cell_type"] == "code" and index in ran:
                count += 1
                new.execution_count = count
        elif cell_type == "markdown":
            if source not in release_markdown:
                source = inert_markdown(source)
            new = nbformat.v4.new_markdown_cell(source, metadata=metadata)
            attachments = safe_attachments(cell) if cell["cell_type"] == "markdown" else None
            if attachments:
                new.attachments = attachments
        else:
            new = nbformat.v4.new_raw_cell(source, metadata=metadata)
        new.id = unique_id(text_of(cell.get("id")), index, cell_ids)
        copied.append(new)
    metadata = copy.deepcopy(release.notebook.get("metadata", {}))
    metadata[LANGUAGE_KEY] = {"language": language}        # nbgrader's feedback page is written in it (offline)
    result = nbformat.v4.new_notebook(cells=copied, metadata=metadata)
    nbformat.validate(result)
    return result


def ends_quietly(source):
    """True when the cell's last statement ends with ';' (Jupyter then shows no value)."""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
                  if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                                    tokenize.DEDENT, tokenize.ENDMARKER)]
    except (tokenize.TokenError, SyntaxError, ValueError):
        return source.rstrip().endswith(";")
    return bool(tokens) and tokens[-1].string == ";"


def stream_list(value):
    """[(name, text)] of a journal entry's outputs of one cell, re-checked (the journal is a file)."""
    streams = []
    for item in value if isinstance(value, list) else []:
        if (isinstance(item, list) and len(item) == 2 and item[0] in ("stdout", "result", "stderr")
                and isinstance(item[1], str)):
            streams.append((item[0], clipped(plain_text(item[1]), OUTPUT_CHARS + 200)))
    return streams


def unique_id(wanted, index, taken):
    """The cell's own id when it is valid and unused, else 'cell-N' (N: its number), made unique."""
    candidate = wanted if wanted and CELL_ID.fullmatch(wanted) and wanted not in taken else f"cell-{index}"
    suffix = 0
    while candidate in taken:
        suffix += 1
        candidate = f"cell-{index}-{suffix}"
    taken.add(candidate)
    return candidate


def path_of(course, assignment, student, name):
    """Where nbgrader's formgrader looks for the copy: autograded/STUDENT/ASSIGNMENT/NAME.ipynb."""
    return course.assignment_dir("autograded", assignment, student) / f"{name}.ipynb"


def write(path, node):
    """Write the copy atomically; False (and nothing written) when the file already holds exactly it."""
    path = Path(path)
    data = (nbformat.writes(node) + "\n").encode("utf-8")
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    files.write(path, data)
    return True


__all__ = ["captured", "inert_markdown", "notebook", "path_of", "verdict_lines", "write"]

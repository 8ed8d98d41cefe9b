"""What the runner says about a run, as data: a sentence's English template and its values, never a sentence.

The runner (:mod:`.runner`) runs inside the sandbox and writes no finished text a student reads: it reports
the worst thing that happened in a run as ``{"template": T, "args": {...}}`` with ``T`` one of
:data:`TEMPLATES`. The trusted grader reads that report as hostile (:func:`accept`: a known template, exactly
its arguments, plain clipped values) and renders it in the hand-in's language through its own catalog, where
these templates are message ids. A cell is named by its ``index`` and ``grade_id``; the grader words the label.
"""

import math
import string

__all__ = ["CELL_TYPES", "CUT", "DUPLICATED", "EMPTY", "KILLED", "MEMORY", "MEMORY_LIMIT", "MISSING", "NOT_A_CELL",
           "NOT_A_NOTEBOOK", "NOT_JSON", "NOT_UTF8", "NO_NOTEBOOK", "PROCESSES", "RETYPED", "SOURCE_NOT_TEXT",
           "STILL_RUNNING", "TEMPLATES", "TEST_RETYPED", "TIMEOUT", "TOO_DEEP", "TOO_LARGE", "UNREADABLE", "accept",
           "remark"]

TIMEOUT = "{cell} ran over the {seconds:g} s limit and was interrupted"
MEMORY = "{cell} ran out of memory: {error}"
MEMORY_LIMIT = "{cell} ran out of memory (limit {gib:.3g} GiB): {error}"
PROCESSES = "{cell} hit the limit of {count} processes and threads: {error}"
STILL_RUNNING = ("{cell} left {count} processes the grader could not stop; later cells and probes shared the "
                 "sandbox with them")
KILLED = "{cell} left {count} processes running; the grader killed them"
CUT = "{cell} wrote {total} bytes to {stream}; only the first {kept} were kept"
# What the runner finds odd in the notebook's cells (cells.read_cells, cells.structure_remarks).
NOT_A_CELL = "{cell} is not a notebook cell (no cell_type); ignored"
SOURCE_NOT_TEXT = "{cell} has a source that is not text; ignored"
DUPLICATED = "{cell} appears {count} times (cells {where}): duplicated?"
RETYPED = "{cell} has cell type {kind}; the release has {wanted}: retyped?"
TEST_RETYPED = "{cell}, a test cell, has cell type {kind}, not code: retyped?"
MISSING = "{cell} of the release is missing: deleted?"
# Why the notebook could not be used at all (cells.read_cells): it names no cell.
NO_NOTEBOOK = "{name} is missing"
UNREADABLE = "{name} cannot be read ({error})"
TOO_LARGE = "{name} is larger than {size} MiB"
NOT_UTF8 = "{name} is not UTF-8 text (byte {byte})"
EMPTY = "{name} is empty"
NOT_JSON = "{name} is not valid JSON (line {line}, column {column}: {error})"
TOO_DEEP = "{name} is JSON nested too deeply to read"
NOT_A_NOTEBOOK = "{name} is JSON but not a notebook (no list of cells)"
TEMPLATES = (TIMEOUT, MEMORY, MEMORY_LIMIT, PROCESSES, STILL_RUNNING, KILLED, CUT, NOT_A_CELL, SOURCE_NOT_TEXT,
             DUPLICATED, RETYPED, TEST_RETYPED, MISSING, NO_NOTEBOOK, UNREADABLE, TOO_LARGE, NOT_UTF8, EMPTY,
             NOT_JSON, TOO_DEEP, NOT_A_NOTEBOOK)
STREAMS = ("stdout", "stderr")
CELL_TYPES = ("code", "markdown", "raw", "other")    # a cell type the runner names ("other": any other it found)
MAX_TEXT = 300                      # characters of a text value (the student's error line) kept
MAX_GRADE_ID = 64


def _names(template):
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


def remark(template, index=None, grade_id=None, **args):
    """The runner's report of ``template`` about cell ``index`` (its ``grade_id`` or None; a cell of the release
    that is missing has only its ``grade_id``); a template without ``{cell}`` names no cell."""
    if template not in TEMPLATES:
        raise ValueError(f"template: not one of the runner's remarks: {template!r}")
    if "cell" not in _names(template):
        return {"template": template, "args": args}
    return {"template": template, "args": {"index": index, "grade_id": grade_id, **args}}


def accept(data):
    """(template, {name: value}) of a remark read from the sandbox, or None when it is not one the runner makes:
    a known template, exactly its arguments (``cell`` given as ``index`` and ``grade_id``, at least one of them),
    each a finite number or a text clipped to one printable line; ``stream`` is stdout or stderr, ``kind`` and
    ``wanted`` a cell type of :data:`CELL_TYPES`."""
    if not isinstance(data, dict) or set(data) != {"template", "args"} or data["template"] not in TEMPLATES:
        return None
    template, args = data["template"], data["args"]
    names = _names(template)
    wanted = names - {"cell"} | ({"index", "grade_id"} if "cell" in names else set())
    if not isinstance(args, dict) or set(args) != wanted:
        return None
    index, grade_id = args.get("index"), args.get("grade_id")
    if index is not None and (type(index) is not int or not 0 < index < 10**7):
        return None
    if grade_id is not None and not (isinstance(grade_id, str) and 0 < len(grade_id) <= MAX_GRADE_ID
                                     and grade_id.isprintable() and "'" not in grade_id):
        return None
    if "cell" in names and index is None and grade_id is None:
        return None
    values = {}
    for name in wanted - {"index", "grade_id"}:
        value = args[name]
        if name == "stream":
            if value not in STREAMS:
                return None
        elif name in ("kind", "wanted"):
            if value not in CELL_TYPES:
                return None
        elif isinstance(value, bool) or not isinstance(value, (int, float, str)):
            return None
        elif isinstance(value, float) and not math.isfinite(value):
            return None
        elif isinstance(value, int) and not -10**15 < value < 10**15:
            return None
        elif isinstance(value, str):
            lines = [line.strip() for line in value.splitlines() if line.strip()]
            value = "".join(c if c.isprintable() else " " for c in (lines[0] if lines else ""))[:MAX_TEXT]
        values[name] = value
    return template, ({"index": index, "grade_id": grade_id, **values} if "cell" in names else values)

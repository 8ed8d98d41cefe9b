"""What the runner says about a run, as data: a sentence's English template and its values, never a sentence.

The runner (:mod:`.runner`) runs inside the sandbox and writes no finished text a student reads: it reports
the worst thing that happened in a run as ``{"template": T, "args": {...}}`` with ``T`` one of
:data:`TEMPLATES`. The trusted grader reads that report as hostile (:func:`accept`: a known template, exactly
its arguments, plain clipped values) and renders it in the hand-in's language through its own catalog, where
these templates are message ids. A cell is named by its ``index`` and ``grade_id``; the grader words the label.
"""

import math
import string

__all__ = ["CUT", "KILLED", "MEMORY", "MEMORY_LIMIT", "PROCESSES", "STILL_RUNNING", "TEMPLATES", "TIMEOUT",
           "accept", "remark"]

TIMEOUT = "{cell} ran over the {seconds:g} s limit and was interrupted"
MEMORY = "{cell} ran out of memory: {error}"
MEMORY_LIMIT = "{cell} ran out of memory (limit {gib:.3g} GiB): {error}"
PROCESSES = "{cell} hit the limit of {count} processes and threads: {error}"
STILL_RUNNING = ("{cell} left {count} processes the grader could not stop; later cells and probes shared the "
                 "sandbox with them")
KILLED = "{cell} left {count} processes running; the grader killed them"
CUT = "{cell} wrote {total} bytes to {stream}; only the first {kept} were kept"
TEMPLATES = (TIMEOUT, MEMORY, MEMORY_LIMIT, PROCESSES, STILL_RUNNING, KILLED, CUT)
STREAMS = ("stdout", "stderr")
MAX_TEXT = 300                      # characters of a text value (the student's error line) kept
MAX_GRADE_ID = 64


def _names(template):
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


def remark(template, index, grade_id, **args):
    """The runner's report of ``template`` about cell ``index`` (its ``grade_id`` or None)."""
    if template not in TEMPLATES:
        raise ValueError(f"template: not one of the runner's remarks: {template!r}")
    return {"template": template, "args": {"index": index, "grade_id": grade_id, **args}}


def accept(data):
    """(template, {name: value}) of a remark read from the sandbox, or None when it is not one the runner makes:
    a known template, exactly its arguments (``cell`` given as ``index`` and ``grade_id``), each a finite number
    or a text clipped to one printable line; ``stream`` is stdout or stderr."""
    if not isinstance(data, dict) or set(data) != {"template", "args"} or data["template"] not in TEMPLATES:
        return None
    template, args = data["template"], data["args"]
    wanted = _names(template) - {"cell"} | {"index", "grade_id"}
    if not isinstance(args, dict) or set(args) != wanted:
        return None
    index, grade_id = args["index"], args["grade_id"]
    if type(index) is not int or not 0 < index < 10**7:
        return None
    if grade_id is not None and not (isinstance(grade_id, str) and 0 < len(grade_id) <= MAX_GRADE_ID
                                     and grade_id.isprintable() and "'" not in grade_id):
        return None
    values = {}
    for name in wanted - {"index", "grade_id"}:
        value = args[name]
        if name == "stream":
            if value not in STREAMS:
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
    return template, {"index": index, "grade_id": grade_id, **values}

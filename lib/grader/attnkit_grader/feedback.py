"""Feedback pages of the sandboxed grader: each hidden check's verdict and message, never its code.

A page shows, per graded cell, the points, and for autograded cells every check the trusted judge
decided (passed or not, its points, the message saying what to fix). The source of the hidden tests
is never shown, and the grader never reads it; the release's visible test cells can be shown on
request (``show_tests``), as students already have them. Everything that came from the student's
run (error messages, reasons) is escaped: it is untrusted text.
"""

import html
import os
from pathlib import Path

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.15rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; width: 100%; } td, th { padding: .3rem .5rem; vertical-align: top;
  border-bottom: 1px solid #eee; text-align: left; }
td.mark { width: 1.5rem; font-weight: bold; } .pass { color: #18794e; } .fail { color: #b42318; }
td.points { white-space: nowrap; text-align: right; } .message { color: #555; font-size: .92rem; }
pre { background: #f6f8fa; padding: .6rem; overflow-x: auto; font-size: .85rem; }
.note { background: #fff8e1; padding: .5rem .8rem; border-left: 4px solid #f0b400; }
"""


def number(value):
    return "pending" if value is None else f"{value:g}"


def page(entry, cells, show_tests=False):
    """The HTML text of one submission's feedback.

    ``entry``: the grader's record (see :mod:`attnkit_grader.autograders.sandboxed`); ``cells``: the release's
    graded cells [(grade_id, kind, max points, visible source)] in notebook order.
    """
    e = html.escape
    scores, checks = entry["scores"], entry["checks"]
    auto = [(g, m) for g, kind, m, _ in cells if kind == "test"]
    earned = sum(scores.get(g) or 0.0 for g, _ in auto)
    top = sum(m for _, m in auto)
    manual = [g for g, kind, _, _ in cells if kind == "written"]
    parts = [f"<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\">"
             f"<title>{e(entry['assignment'])} – feedback for {e(entry['student'])}</title>"
             f"<style>{STYLE}</style></head>\n<body>",
             f"<h1>{e(entry['assignment'])}: feedback for {e(entry['student'])}</h1>",
             f"<p><strong>Autograded: {earned:g} / {top:g} points.</strong>"
             + (f" Written answers ({', '.join(e(g) for g in manual)}) are graded by hand." if manual else "")
             + "</p>",
             "<p>Your functions were called on fresh inputs chosen by the grader, and their results compared "
             "with the reference solution outside your notebook. Each check below says what it tested and, "
             "when it failed, what was wrong.</p>"]
    if entry.get("issues"):
        items = "".join(f"<li>{e(issue)}</li>" for issue in entry["issues"])
        parts.append(f"<div class=\"note\"><p>While grading your notebook:</p><ul>{items}</ul></div>")
    for grade_id, kind, max_points, source in cells:
        score = scores.get(grade_id)
        parts.append(f"<h2>{e(grade_id)} <small>({number(score)} / {max_points:g} points)</small></h2>")
        if kind == "written":
            parts.append("<p>A written answer: graded by hand"
                         + (" (no answer was given)." if score == 0 else ".") + "</p>")
            continue
        rows = []
        for check in checks.get(grade_id, []):
            name, points, top_points, passed, message = check[:5]
            mark = "<td class=\"mark pass\">&#10003;</td>" if passed else "<td class=\"mark fail\">&#10007;</td>"
            detail = f"<div class=\"message\">{e(message)}</div>" if message else ""
            rows.append(f"<tr>{mark}<td>{e(name)}{detail}</td>"
                        f"<td class=\"points\">{points:g} / {top_points:g}</td></tr>")
        if rows:
            parts.append("<table>" + "".join(rows) + "</table>")
        else:
            parts.append("<p>No automatic check exists for this cell: it is graded by hand.</p>")
        if show_tests and source:
            parts.append("<details><summary>The visible test cell, as released</summary>"
                         f"<pre>{e(source)}</pre></details>")
    parts.append("</body>\n</html>\n")
    return "\n".join(parts)


def write(path, content):
    """Write ``content`` (text, as UTF-8, or bytes) to ``path`` atomically: a killed grader never leaves half
    a file. Used for the feedback pages and the autograded copies."""
    path = Path(path)
    data = content.encode("utf-8") if isinstance(content, str) else content
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return path

"""A new assignment in one command: ``attnkit new-assignment NAME [--title TITLE]``.

It copies the template folder ``scaffold_template/`` beside this module, putting the name and the title in
place of ``{{name}}`` and ``{{title}}`` (which the templates write only inside strings and comments, so each
template stays a file that Python, Jupyter and the linters read):

- ``assignment/`` to ``lib/grader/attnkit_assignments/NAME/``: the manifest (``assignment.py``), the reference
  solution, the checks (one visible, one hidden) with inputs that cannot hide the scale, the probes
  (``probes/``, the part staged into a sandbox), a bug catalogue of one mistake (forgetting ``/ sqrt(d)``)
  with two correct answers in other styles, and the behaviour mutation testing compares;
- ``notebook.ipynb`` to ``source/NAME/NAME.ipynb``: one exercise (``scaled_scores``) with its worked case, its
  test cell (the visible check compares with the worked case through ``expect_worked``; the hidden part is
  :func:`attnkit_grader.hidden.run`, driven by the manifest), and a written answer graded by hand;
- the same notebook to ``translations/NAME_fr/`` and ``NAME_zh/``, marked untranslated in its metadata
  (``{"attnkit": {"untranslated": true}}``), which the drift test and the site accept until a translator
  replaces it.

What the kit's tools then generate from it, and in what order, is in the guide for authors
(site/pages/en/guide/authors.md, "Adding an assignment"): the release, the worked case's numbers, the example
class. Replace the exercise with yours, keeping the shapes of the files.
"""

import json
from pathlib import Path

from . import editions, run_all
from .authoring import NAME

TEMPLATE = Path(__file__).with_name("scaffold_template")
UNTRANSLATED = {"attnkit": {"untranslated": True}}       # notebook metadata of a copy awaiting its translator
UNSAFE_IN_TITLE = ('"', "\\", "\n", "\r", "{{", "}}")     # the title goes into Python strings and notebook JSON


def new_assignment(root, name, title=None):
    """Write the new assignment ``name`` into the kit's repository at ``root``; return the paths written."""
    root = Path(root)
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ValueError(f"name: expected lower-case letters, digits and '_' (a folder and module name), got {name!r}")
    if name.rpartition("_")[2] in editions.LANGUAGES:
        raise ValueError(f"name: {name!r} ends like a language edition (_{name.rpartition('_')[2]}); choose another")
    title = title or name.replace("_", " ").capitalize()
    if not isinstance(title, str) or any(mark in title for mark in UNSAFE_IN_TITLE):
        raise ValueError(f"title: expected one line without {' '.join(map(repr, UNSAFE_IN_TITLE))}, got {title!r}")
    folder = root / "lib" / "grader" / "attnkit_assignments" / name
    targets = [folder, root / "source" / name] + [root / editions.TRANSLATIONS / editions.edition_name(name, language)
                                                  for language in editions.LANGUAGES]
    if not (root / "lib" / "grader" / "attnkit_assignments").is_dir() or not (root / "source").is_dir():
        raise FileNotFoundError(f"root: {root} is not the kit's repository (no lib/grader/attnkit_assignments, source/)")
    taken = [str(t.relative_to(root)) for t in targets if t.exists()]
    if taken:
        raise FileExistsError(f"name: {name} exists already ({', '.join(taken)})")
    grader = TEMPLATE / "assignment"
    files = {folder / path.relative_to(grader): rendered(path, name, title) for path in sorted(grader.rglob("*.py"))}
    english = notebook(name, title)
    files[root / "source" / name / f"{name}.ipynb"] = english
    for language in editions.LANGUAGES:
        copy = json.loads(english)
        copy["metadata"].update(UNTRANSLATED)
        files[root / editions.TRANSLATIONS / editions.edition_name(name, language) / f"{name}.ipynb"] = \
            json.dumps(copy, indent=1, ensure_ascii=False) + "\n"
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return sorted(files)


def rendered(path, name, title):
    """The template file ``path`` with the assignment's name and title in place of its placeholders."""
    return path.read_text(encoding="utf-8").replace("{{name}}", name).replace("{{title}}", title)


def untranslated(notebook):
    """True for an edition that is still the scaffold's copy of the English notebook (see UNTRANSLATED)."""
    return bool(notebook.get("metadata", {}).get("attnkit", {}).get("untranslated"))


def notebook(name, title):
    """The source notebook (nbformat 4.5 JSON text): the template's cells, with ids of the assignment's own."""
    content = json.loads(rendered(TEMPLATE / "notebook.ipynb", name, title))
    for number, cell in enumerate(content["cells"]):
        cell["id"] = f"{name[:40]}-{number}"
    run_all.tag(content)                  # the answer and test cells: Run All goes past their errors
    return json.dumps(content, indent=1, ensure_ascii=False) + "\n"

"""The student edition: the tree students receive, built from the kit's repository by one command.

    attnkit publish OUT [--force]

It holds what a student needs and nothing an instructor keeps:
- ``course/``: the executed lectures; ``release/``: the assignments as nbgrader released them;
- ``lib/attnkit`` with ``pyproject.toml`` and ``constraints.txt`` (the student pins: the versions the kit's
  lock tests, without hashes or local labels): the student package, installable as
  ``pip install -c constraints.txt ".[notebooks]"`` (its wheel holds no grader, no solution, no script);
- ``environment.yml``: the same for conda, and what Binder reads;
- ``postBuild``: Binder runs it after building the environment; students run it once after installing.
  It switches off, through nbgrader's documented switches, the instructor's extensions (Formgrader,
  Create Assignment, Course List), leaving Assignment List and Validate;
- ``README.md``: how to install, open the lectures, work on and validate an assignment.
Never: ``source/`` and ``translations/`` (solutions, hidden tests), ``lib/grader`` (the grader, the
reference solutions), ``tests/`` (fixtures built from the solutions), the gradebook, submissions or reports.
"""

import shutil
from pathlib import Path

from .editions import graded_assignments

STUDENT_FILES = ("pyproject.toml", "constraints.txt", "environment.yml")
INSTRUCTOR_EXTENSIONS = {                          # nbgrader's extensions a student must not see
    "server": ("nbgrader.server_extensions.formgrader", "nbgrader.server_extensions.course_list"),
    "lab": ("@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment", "@jupyter/nbgrader:course-list"),
}
STUDENT_EXTENSIONS = {
    "server": ("nbgrader.server_extensions.assignment_list", "nbgrader.server_extensions.validate_assignment"),
    "lab": ("@jupyter/nbgrader:assignment-list", "@jupyter/nbgrader:validate-assignment"),
}


def student_edition(kit_root, out, force=False):
    """Build the student edition of the kit at ``kit_root`` in ``out`` (see the module's docstring); return
    ``out``. ``force``: replace an existing ``out``; otherwise an existing, non-empty ``out`` is an error."""
    kit_root, out = Path(kit_root).resolve(), Path(out).resolve()
    for needed in ("course", "release", "lib/attnkit", *STUDENT_FILES):
        if not (kit_root / needed).exists():
            raise FileNotFoundError(f"kit_root: {kit_root} has no {needed}; is it the kit's repository?")
    if (out == kit_root or kit_root in out.parents) and (kit_root / "build") not in out.parents:
        raise ValueError(f"out: {out} lies inside the kit's repository; publish outside it, or under build/")
    if out.exists() and any(out.iterdir()):
        if not force:
            raise FileExistsError(f"out: {out} exists and is not empty; pass --force to replace it")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", "*.egg-info")
    shutil.copytree(kit_root / "course", out / "course", ignore=skip)
    shutil.copytree(kit_root / "release", out / "release", ignore=skip)
    shutil.copytree(kit_root / "lib" / "attnkit", out / "lib" / "attnkit", ignore=skip)
    for name in STUDENT_FILES:
        shutil.copy2(kit_root / name, out / name)
    (out / "README.md").write_text(readme(kit_root / "release"), encoding="utf-8")
    (out / "postBuild").write_text(post_build(), encoding="utf-8")
    (out / "postBuild").chmod(0o755)
    return out


def readme(release):
    """The student edition's README, naming the assignments release/ holds (its graded ones, not the editions)."""
    graded = graded_assignments(p.name for p in Path(release).iterdir() if p.is_dir())
    return README.format(assignments=", ".join(f"`{name}`" for name in graded), first=graded[0])


def post_build():
    """The shell script that leaves a student's JupyterLab with the student's nbgrader extensions only."""
    lines = ["#!/bin/sh",
             "# Students' JupyterLab: nbgrader's Assignment List and Validate stay; the instructor's Formgrader,",
             "# Create Assignment and Course List are switched off (nbgrader's documented switches).",
             "set -e"]
    lines += [f"jupyter server extension disable --sys-prefix {name}" for name in INSTRUCTOR_EXTENSIONS["server"]]
    lines += [f"jupyter labextension disable --level=sys_prefix {name}" for name in INSTRUCTOR_EXTENSIONS["lab"]]
    lines += [f"jupyter server extension enable --sys-prefix {name}" for name in STUDENT_EXTENSIONS["server"]]
    return "\n".join(lines) + "\n"


README = """# Attention course: the student edition

Lectures and graded assignments on self-attention, positional encoding and multi-head attention in
PyTorch. Everything runs on a laptop CPU in seconds.

| folder | what |
| --- | --- |
| `course/` | the four lectures, executed, in English; `course/fr/` in French, `course/zh/` in Chinese |
| `release/` | the graded assignments ({assignments}), and each in French (`_fr`) and Chinese (`_zh`) |
| `lib/attnkit/` | `attnkit`, the small library the lectures and assignments import |

## Install once

With conda (also what Binder uses):

    conda env create -f environment.yml
    conda activate attention-kit
    sh postBuild

or with pip, in a virtual environment (Python 3.11: the course is tested with it on Linux; `constraints.txt`
pins the versions it is tested with, and other systems and Pythons may work but are untested):

    python -m venv .venv
    .venv/bin/pip install -c constraints.txt ".[notebooks]"
    PATH=".venv/bin:$PATH" sh postBuild

(JupyterLab's French and Chinese language packs come with it; see "Languages" below). The Chinese
lectures label their figures in Chinese: conda installs a font for them (`font-ttf-noto-cjk`); with pip, on
Debian or Ubuntu, `sudo apt-get install fonts-noto-cjk`.

`postBuild` leaves JupyterLab's *Nbgrader* menu with what a student uses: *Assignment List* (fetch and
submit, when your course runs a JupyterHub) and the *Validate* button.

## Work

    jupyter lab

Open a lecture in `course/` and run it top to bottom (*Run → Run All Cells*). For an assignment, open
`release/ASSIGNMENT/ASSIGNMENT.ipynb` (`release/ASSIGNMENT_fr/...` in French, `_zh` in Chinese; or fetch it
from *Assignment List* if your course hands it out there), write your code where it says `YOUR CODE HERE`
(`VOTRE CODE ICI`, `请在此处编写代码`), and run the test cells: each check prints `ok` or `FAIL` with what
to fix. *Validate* runs the whole notebook as the grader will. Hidden checks run only at
grading, on inputs you never see; the visible ones are there to tell you early what is wrong.

## Languages

The lectures exist in English (`course/`), French (`course/fr/`) and Chinese (`course/zh/`), under the same
file names: the code is the same program in every language; the text, the comments and the figures' labels
are translated. Each assignment comes in the three languages too: `release/{first}/` (English),
`release/{first}_fr/` (French), `release/{first}_zh/` (Chinese), and likewise for
every other assignment; on a course's JupyterHub, *Assignment List* offers the three. Work in one of them and
hand in that one: they are the same assignment, graded by the same checks for the same points, whichever
language you choose. The checks print their messages in the language of the folder you work in (French in
`_fr`, Chinese in `_zh`; `import attnkit; attnkit.set_language("en")` in a cell of your own switches), and the
grader's feedback comes back in the language of the edition you handed in. If you hand in twice, in two
languages, the later hand-in counts.

JupyterLab itself speaks French and Chinese too (its language packs are installed above): in the menu bar,
*Settings → Language*, then *French (France) - Français (France)* or *Chinese (Simplified, China) - 中文 (简体,
中国)*; confirm, and JupyterLab reloads in that language. The same menu takes you back: *Paramètres → Langue
→ Anglais - English*, or *设置 → 语言 → 英语 - English*.
"""

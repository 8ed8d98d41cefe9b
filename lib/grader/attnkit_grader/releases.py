"""The release step: student versions of the assignments, generated from source/ by nbgrader.

:func:`release` is ``nbgrader generate_assignment --force`` for each assignment (it also records the
assignment, its notebooks and its grade cells in the gradebook) and for each of its language editions
(outside the gradebook). :func:`drift` regenerates in a temporary copy of the course and lists how the
committed release/ differs from what source/ and translations/ give today.
"""

import shutil
import tempfile
from pathlib import Path

from . import editions
from .course import CONFIG_NAME, Course, create_gradebook
from .files import content
from .precheck import relative_files


class NbgraderError(RuntimeError):
    """An nbgrader step failed for a reason that is not one student's submission."""


def release(course, assignments=(), release_dir=None, database=True, english_only=False):
    """Run generate_assignment (forced) for ``assignments`` (default: all in source/) and their language
    editions.

    The English notebook goes into the gradebook; each edition (translations/ASSIGNMENT_LANG/) is generated
    without it, with nbgrader's answer stubs in its language (see :mod:`.editions`).
    ``release_dir`` redirects the output (e.g. a temporary folder) instead of the course's release/;
    ``database=False`` leaves the gradebook alone; ``english_only`` generates no edition. Returns the list of folders
    generated.
    """
    assignments = course.check_assignments(assignments)
    base = {} if database else {"GenerateAssignment.no_database": True, "SaveCells.enabled": False}
    if database:
        create_gradebook(course.db_url)          # in this process: nbgrader would run `alembic heads` to stamp it
    if release_dir is not None:
        base["CourseDirectory.release_directory"] = str(Path(release_dir).resolve())
    generated = []
    for assignment in assignments:
        for language, name in course.editions(assignment).items():
            if english_only and language != editions.ENGLISH:
                continue
            overrides = dict(base)
            if language != editions.ENGLISH:
                overrides.update({"GenerateAssignment.no_database": True, "SaveCells.enabled": False,
                                  "CourseDirectory.source_directory": editions.TRANSLATIONS,
                                  **editions.LANGUAGES[language].release_config()})
            result = course.api(**overrides).generate_assignment(name, force=True, create=True)
            if not result["success"]:
                log = result.get("log", "") + result.get("error", "")
                raise NbgraderError(f"nbgrader generate_assignment {name} failed:\n{log}")
            generated.append(name)
    return generated


def drift(course, assignments=()):
    """{folder: [differences]} between the committed release/ and a fresh generation from source/, for
    ``assignments`` and their language editions.

    Works on a temporary copy (config, source/ and translations/ only), so neither release/ nor the gradebook
    changes. A folder without differences maps to an empty list.
    """
    assignments = course.check_assignments(assignments)
    with tempfile.TemporaryDirectory(prefix="attnkit-release-") as scratch:
        copy = Path(scratch)
        shutil.copy2(course.root / CONFIG_NAME, copy / CONFIG_NAME)
        shutil.copytree(course.step_dir("source"), copy / course.step_dir("source").name)
        if course.translations_dir().is_dir():
            shutil.copytree(course.translations_dir(), copy / editions.TRANSLATIONS)
        fresh = Course(copy)
        names = release(fresh, assignments, database=False)
        return {a: compare_trees(course.assignment_dir("release", a), fresh.assignment_dir("release", a))
                for a in names}


def compare_trees(committed, fresh):
    """Differences between two release folders, as readable lines (empty when they say the same: see
    :func:`.files.content`)."""
    if not committed.is_dir():
        return [f"{committed} does not exist: run the release step and commit it"]
    old, new = relative_files(committed), relative_files(fresh)
    lines = [f"missing from {committed.name}/: {name}" for name in sorted(new - old)]
    lines += [f"not generated from source any more: {name}" for name in sorted(old - new)]
    for name in sorted(old & new):
        before, after = (committed / name).read_bytes(), (fresh / name).read_bytes()
        if content(before, name) != content(after, name):
            lines.append(f"differs: {name}{changed_cells(before, after)}")
    return lines


def changed_cells(before, after):
    """' (cells 3, 7)' naming the notebook cells that differ, or '' when that cannot be told."""
    old, new = content(before, "notebook.ipynb"), content(after, "notebook.ipynb")
    if not isinstance(old, dict) or not isinstance(new, dict):
        return ""
    old, new = old["cells"], new["cells"]
    if len(old) != len(new):
        return f" ({len(old)} cells committed, {len(new)} generated)"
    numbers = [str(i) for i, (a, b) in enumerate(zip(old, new), start=1) if a != b]
    return f" (cells {', '.join(numbers)})" if numbers else " (notebook metadata)"

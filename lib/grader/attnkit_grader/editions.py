"""Language editions of an assignment: one graded assignment, handed out in several languages.

The English notebook in ``source/ASSIGNMENT/`` is the graded assignment. A language edition is the same
notebook translated, in ``translations/ASSIGNMENT_LANG/`` under the same file name (LANG: a key of
:data:`LANGUAGES`): beside nbgrader's source/, not in it, because the formgrader lists every folder of
source/ as an assignment to generate. Its prose, the comments of its answer cells and its written
questions are translated; every cell the grader relies on (the read-only setup cells and the test cells,
hidden tests included) is byte for byte the English cell, so nbgrader's checksums match
(``tests/test_assignment_editions.py``).

How the editions map onto nbgrader:

- **release**: ``attnkit release`` generates the English notebook into the gradebook and ``release/ASSIGNMENT/``,
  and each edition into ``release/ASSIGNMENT_LANG/`` *without* touching the gradebook, with nbgrader's
  "your code here" stubs in that language. Each is released to the exchange under its own name, so a
  student fetches the edition in their language and works in it alone.
- **collect**: ``attnkit collect ASSIGNMENT`` takes the hand-ins of every edition into
  ``submitted/STUDENT/ASSIGNMENT/`` (a student's latest hand-in, whatever its language). The notebook has the
  same name in every edition, so nbgrader grades it as the English assignment: the same test cells, put back
  from the gradebook, the same hidden tests, the same points.
- **grades**: the gradebook holds one assignment, so the formgrader, ``nbgrader export`` and the grader's
  reports give one grade table per assignment across languages; written answers are graded by hand in the
  student's language.
- **feedback**: nbgrader names a released feedback page after the hand-in's secret and the notebook's name,
  both the same whatever the edition, so ``fetch_feedback`` finds it under the edition's name.
"""

from dataclasses import dataclass

CODE_STUB_TAIL = "\nraise NotImplementedError()"


@dataclass(frozen=True)
class Language:
    """A language the assignments are handed out in, and nbgrader's release stubs in it."""

    name: str           # in the language itself
    code_stub: str      # what an answer code cell holds when released (nbgrader's ClearSolutions.code_stub)
    text_stub: str      # what a written answer holds when released (ClearSolutions.text_stub)

    def release_config(self):
        """nbgrader config entries ('Class.trait' -> value) generating an edition in this language."""
        return {"ClearSolutions.code_stub": {"python": self.code_stub},
                "ClearSolutions.text_stub": self.text_stub}


ENGLISH = "en"
TRANSLATIONS = "translations"       # the editions' instructor notebooks, beside nbgrader's source/
LANGUAGES = {
    "fr": Language("Français", "# VOTRE CODE ICI" + CODE_STUB_TAIL, "VOTRE RÉPONSE ICI"),
    "zh": Language("中文", "# 请在此处编写代码" + CODE_STUB_TAIL, "请在此处作答"),
}


def edition_name(assignment, language):
    """The folder (and exchange) name of ``assignment``'s edition in ``language``."""
    if language == ENGLISH:
        return assignment
    if language not in LANGUAGES:
        raise ValueError(f"language: {language!r} is not one of {ENGLISH}, {', '.join(LANGUAGES)}")
    return f"{assignment}_{language}"


def split(name, graded):
    """(assignment, language) of a folder or exchange ``name``, given the ``graded`` assignments' names;
    None when ``name`` is neither a graded assignment nor one of its editions."""
    if name in graded:
        return name, ENGLISH
    base, _, language = name.rpartition("_")
    if language in LANGUAGES and base in graded:
        return base, language
    return None


def graded_assignments(folders):
    """The graded assignments among folder names (e.g. release/'s): every folder that is not an edition of
    another folder there."""
    folders = set(folders)
    return sorted(name for name in folders
                  if not (name.rpartition("_")[2] in LANGUAGES and name.rpartition("_")[0] in folders))

"""The translation catalogs of what the kit says to students (gettext, with Babel): extract, update, compile, count.

The catalogs (gettext domains), French and Chinese each:

- ``attnkit`` (``lib/attnkit/locale``, in the student wheel): every ``Text("...")``/``N_("...")`` of the student
  package (the checks' messages, the known-mistake frames, CellScoredZero) and the catalogue's explanations of
  known mistakes (each assignment's ``bugs.BUGS``, whose ``says`` the worked cases ship to the notebook);
- ``attnkit_grader`` (``attnkit_grader/locale``): the feedback page's sentences (:mod:`.feedback`), the insight
  report's (:mod:`.insight`: the instructor's, in ``ATTNKIT_REPORT_LANG``), the verdict lines
  of the autograded copy (:mod:`.autograded_notebook`: the formgrader's and nbgrader's feedback page), the judge's
  frames of a diagnosis (:mod:`.judging.engine`, :mod:`.judging.variants`), and the judge's generic comparisons
  (:mod:`.judging.compare`);
- one per assignment (``attnkit_assignments/NAME/locale``, domain ``NAME``): its title (the insight report's),
  its alternative solutions' descriptions (a flagged copy's), its checks' names and hints and the sentences its
  check code fails with (:data:`CHECK_KEYWORDS`), so a new assignment brings its own translations
  in its folder.

The feedback page looks a message up in the grader's catalog, then the assignment's, then the student package's.

``python -m attnkit_grader.catalogs extract``  each .pot from the code, and each .po updated with the new messages
                                               (untranslated: the catalog test fails until a translator fills them)
``python -m attnkit_grader.catalogs compile``  each .po into its .mo (byte-stable), committed beside it
``python -m attnkit_grader.catalogs counts``   the messages and the translated ones, per catalog and language
``python -m attnkit_grader.catalogs check``    what is wrong with the catalogs (exit status 1 if anything)

``tests/test_catalogs.py`` fails when a .mo does not hold what its .po compiles to (the messages, the plural rule and
the charset, compared as gettext reads them: never the bytes, which carry the compiler's name), when a .pot lags the code, and on
any untranslated, fuzzy or unchanged-from-English entry outside :data:`SAME_AS_ENGLISH`.
"""

import functools
import io
import re
import string
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import attnkit
from attnkit import i18n
from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_file
from babel.messages.mofile import read_mo, write_mo
from babel.messages.pofile import read_po, write_po
import jinja2.ext

PACKAGE = Path(attnkit.__file__).parent
GRADER = Path(__file__).parent
TRANSLATED = [code for code in i18n.LANGUAGES if code != i18n.ENGLISH]
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Domain:
    """One catalog: its name (gettext's domain), its folder, and where its messages are found."""

    name: str
    locale: Path
    root: Path                       # locations are written relative to it
    assignment: bool = False         # an assignment's own catalog (its folder's locale/, named after it)
    cells: str = ""                  # the test cells' words of this assignment (attnkit_NAME, in the student wheel)

    @property
    def template(self):
        return self.locale / f"{self.name}.pot"

    def po(self, code):
        return self.locale / code / "LC_MESSAGES" / f"{self.name}.po"

    def mo(self, code):
        return self.po(code).with_suffix(".mo")


# What a student reads in the notebook: attnkit's messages, and the catalogue's explanations of known mistakes,
# which the worked cases ship to the notebook (each assignment's bugs.BUGS, their ``says``). The grader's feedback page has its
# own sentences, and its judge's frames of a diagnosis, in the grader's catalog.
STUDENT = Domain(i18n.DOMAIN, PACKAGE / "locale", PACKAGE.parent.parent)
FEEDBACK = Domain("attnkit_grader", GRADER / "locale", PACKAGE.parent.parent)


def _assignment_domains():
    from . import registry
    return tuple(Domain(name, registry.package_dir() / name / "locale", PACKAGE.parent.parent, assignment=True)
                 for name in registry.assignments())


# Each assignment's own sentences, in its folder (an assignment stays one folder): its checks' names and hints, and
# the sentences its checks fail with (see _found).
ASSIGNMENT_DOMAINS = _assignment_domains()
SOURCE = PACKAGE.parent.parent / "source"


def _cell_domains():
    """attnkit_NAME for each assignment whose source notebook is in source/: its test cells' own words."""
    from . import registry
    return tuple(Domain(i18n.CELLS_PREFIX + name, PACKAGE / "locale", PACKAGE.parent.parent, cells=name)
                 for name in registry.assignments() if (SOURCE / name / f"{name}.ipynb").exists())


# The test cells' own words (check names, subjects, messages), in the student wheel: attnkit.i18n looks them up.
CELL_DOMAINS = _cell_domains()
DOMAINS = (STUDENT, FEEDBACK) + ASSIGNMENT_DOMAINS + CELL_DOMAINS
# Where a test cell hands attnkit its own words: the call's name, the position (0-based) and keyword of the words.
CELL_WORDS = {"checks": (0, "what"), "Text": (0, "template"), "expect": (1, "message"), "expect_shape": (2, "what"),
              "expect_equal": (2, "what"), "expect_close": (2, "what"), "expect_worked": (2, "what"),
              "expect_raises": (2, "what"), "expect_dropout": (3, "what"), "CheckFailed": (0, "message")}
# How an assignment's check code hands the judge a sentence (authoring's API): the argument that is one.
# (Outputs.integer is left out: make_inputs' own integer(low, high) would be read as one; give its ``what`` as a
# sentence(...).)
CHECK_KEYWORDS = {"N_": None, "sentence": (1,), "Fail": (1,), "expect": (2,), "close": (4,), "equal": (3,),
                  "floats": (3,), "native": (3,)}
# Modules of an assignment folder that hold no sentence a student reads: the reference solution, the catalogue
# (its explanations are the student catalog's), and what only instructors and tests run.
NOT_STUDENT_TEXT = {"reference.py", "bugs.py", "mutation.py", "copies.py", "examples.py", "__init__.py"}

# Messages whose translation may be the English text itself: placeholders and punctuation only, and the names
# of code. Anything else left as English is a translation not done.
SAME_AS_ENGLISH = {
    "{message}. {diagnosis}",
    "{earlier}; or {later}",
    "{message} {hint}",
    "{where} {what}",
    "{diagnosis} ({message})",
    "%(score)s / %(points)s points",
    # names of code an assignment's checks hand in as their "what"
    "pe(X)", "attention_weights", "relative_position_index({q}, {n}, {k})", "max_distance = 0",
    # names of code a test cell hands in as a subject (the attnkit_NAME catalogs)
    "relative_position_index(3, 5, 1)", "relative_position_index(4, 6, 2)",
}
# Words spelt the same in a language as in English, checked by the translator: {(language, msgid)}.
SAME_WORD = {("fr", "structure"), ("fr", "points"), ("fr", "Points"), ("fr", "%(points)s points"), ("fr", "total")}


def _python(path, keywords):
    for line, message, _, _ in extract_from_file("python", str(path), keywords=keywords, comment_tags=(),
                                                 options={"encoding": "utf-8"}):
        yield message


def test_cells(notebook):
    """The sources of ``notebook``'s test cells (nbgrader grade cells that are no solution), without their hidden
    tests (which never reach a student)."""
    import json
    cells = json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]
    found = []
    for cell in cells:
        grading = cell.get("metadata", {}).get("nbgrader", {})
        if cell["cell_type"] == "code" and grading.get("grade") and not grading.get("solution"):
            source = "".join(cell["source"])
            found.append(re.sub(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", "", source, flags=re.S))
    return found


def cell_words(source):
    """([words], [problems]) of one test cell's ``source``: each English literal it hands attnkit as a check's
    name, a subject or a message (:data:`CELL_WORDS`), and each such argument that is no literal a catalog can
    hold (an f-string, a concatenation, a str.format: the values must go apart, in a Text)."""
    import ast
    words, problems = [], []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", getattr(node.func, "attr", None))
        if name not in CELL_WORDS:
            continue
        position, keyword = CELL_WORDS[name]
        argument = node.args[position] if len(node.args) > position else \
            next((k.value for k in node.keywords if k.arg == keyword), None)
        if argument is None:
            continue
        if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
            words.append(argument.value)
        elif isinstance(argument, ast.Call) and getattr(argument.func, "id", None) == "Text":
            continue                          # its template is found as a call of its own
        elif isinstance(argument, ast.Name) or name == "expect" and not isinstance(argument, (ast.JoinedStr, ast.BinOp)) and not (
                isinstance(argument, ast.Call) and getattr(argument.func, "attr", None) == "format"):
            continue                          # a value built elsewhere (a variable): no words written here
        else:
            problems.append(f"line {argument.lineno}: {name}(...)'s {keyword} is {ast.unparse(argument)}: write it "
                            f"as Text(\"English with {{placeholders}}\", name=value)")
    return words, problems


def _found(domain):
    """[(message, file)] of ``domain``, in a stable order."""
    if domain.cells:
        notebook = SOURCE / domain.cells / f"{domain.cells}.ipynb"
        for source in test_cells(notebook):
            yield from ((words, notebook) for words in cell_words(source)[0])
        return
    if domain.assignment:
        from . import registry
        manifest = registry.get(domain.name)
        for path in sorted(manifest.folder.glob("*.py")):
            if path.name not in NOT_STUDENT_TEXT:
                yield from ((m, path) for m in _python(path, CHECK_KEYWORDS))
        manifest_file = manifest.folder / "assignment.py"
        if manifest.title:                          # the instructor's reports name the assignment by its title
            yield manifest.title, manifest_file
        for alternative in manifest.alternatives:   # what a flagged copy is alike to (the feedback, the insight)
            yield alternative.says, manifest_file
        for spec in manifest.checks:                # names, hints and the cases' "what", wherever they are written
            texts = [spec.name, spec.hint] + [value for key, value in spec.extra if key == "what"]
            yield from ((text, manifest_file) for text in texts if isinstance(text, str) and text)
        return
    if domain is STUDENT:
        for path in sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts):
            yield from ((m, path) for m in _python(path, {"Text": None, "N_": None}))
        from . import registry
        for name in registry.assignments():                      # the catalogue, as the manifest names it
            shipped = PACKAGE / "worked" / f"{name}.json"        # where the student's copy comes from:
            yield from ((bug.says, shipped) for bug in registry.get(name).bugs)   # no grader path in the edition
        return
    from . import autograded_notebook, copies, feedback, insight, intake, offline, precheck
    from .autograders import base, runs, sandboxed
    from .insight import render
    from .isolation import reasons
    from .judging import compare, engine, variants
    # The page's own sentences (the kit's and nbgrader's frame, written by the exporter), then the problems a run or
    # a hand-in is noted with (Record.issues: the student's feedback page lists them), written by the graders, the
    # sandbox's exit reasons, the intake and the pre-check.
    for module in (engine, variants, feedback, compare, autograded_notebook, render, insight, offline,
                   base, runs, sandboxed, reasons, intake, precheck, copies):
        yield from ((m, Path(module.__file__)) for m in _python(module.__file__, {"N_": None, "make": None,
                                                                                  "Fail": None, "sentence": None,
                                                                                  "_": None}))
    for source, where in ((feedback.SOURCE, feedback.__file__), (render.BODY_SOURCE, render.__file__),
                          (render.PAGE_SOURCE, render.__file__),
                          (offline.template_source(), offline.TEMPLATES / offline.TEMPLATE / "index.html.j2")):
        template = io.BytesIO(source.encode("utf-8"))
        for _, _, message, _ in jinja2.ext.babel_extract(template, ("_", "gettext"), (), {}):
            yield (message[0] if isinstance(message, tuple) else message), Path(where)
    # The runner's remarks, which it sends as templates and values from the sandbox, and how the grader names a cell
    from attnkit_sandbox import remarks
    from .isolation import notebook_run
    yield from ((template, Path(remarks.__file__)) for template in remarks.TEMPLATES)
    yield from ((template, Path(notebook_run.__file__)) for template in notebook_run.TEMPLATES)


# A value shown as it is, never translated: a student's exception, a lower layer's text (Message.text).
AS_IT_IS = {"{text}"}
AS_IT_IS_ARGS = {"error"}                 # "your code raised {error}": the student's exception, as raised
_WORDS = re.compile(r"[A-Za-z]{2,}[ ,]+[A-Za-z]{2,}")


def untranslated(message, known=None):
    """What of ``message`` (a results.Message, its nested ones included) no catalog can translate: a template
    that is not a message of any catalog, or plain English handed as a value (words that should have been a
    :func:`~attnkit_grader.judging.compare.sentence`). [] when all of it reaches the reader's language."""
    if known is None:
        known = known_messages()
    found = []
    if message.template not in known and message.template not in AS_IT_IS:
        found.append(f"not in a catalog: {message.template!r}")
    for name, value in message.args:
        if hasattr(value, "template"):
            found += untranslated(value, known)
        elif (isinstance(value, str) and message.template not in AS_IT_IS and name not in AS_IT_IS_ARGS
              and _WORDS.search(value)):
            found.append(f"English handed as the value of {{{name}}} in {message.template!r}: {value!r}")
    return found


@functools.lru_cache(maxsize=1)
def known_messages():
    """Every message of every catalog, as the code hands them to gettext."""
    return frozenset(m for domain in DOMAINS for m in extracted(domain))


def extracted(domain=STUDENT):
    """{msgid: [(file, line), ...]} of every message of ``domain``."""
    found = {}
    for message, path in _found(domain):
        if isinstance(message, str) and message and message != "{text}":
            found.setdefault(message, []).append((path.relative_to(domain.root).as_posix(), None))
    return found


def template_catalog(domain=STUDENT):
    catalog = Catalog(project="attention-kit", version=attnkit.__version__, domain=domain.name,
                      charset="utf-8", fuzzy=False)
    for message, locations in extracted(domain).items():
        catalog.add(message, locations=sorted(set(locations)), flags=("python-brace-format",) if "{" in message else ())
    return catalog


def _po_bytes(catalog, **options):
    buffer = io.BytesIO()
    write_po(buffer, catalog, width=116, omit_header=False, sort_output=False, include_lineno=False, **options)
    return buffer.getvalue()


def _stable(data):
    """A .pot/.po without the lines that change on every run (creation and revision dates)."""
    return b"".join(line for line in data.splitlines(keepends=True)
                    if not line.startswith((b'"POT-Creation-Date:', b'"PO-Revision-Date:')))


def read(code, domain=STUDENT):
    with open(domain.po(code), "rb") as file:
        return read_po(file, locale=code, domain=domain.name)


def extract(domain=STUDENT):
    """Write the .pot; add new messages to each .po (untranslated) and drop vanished ones."""
    template = template_catalog(domain)
    domain.template.parent.mkdir(parents=True, exist_ok=True)
    domain.template.write_bytes(_stable(_po_bytes(template)))
    for code in TRANSLATED:
        path = domain.po(code)
        path.parent.mkdir(parents=True, exist_ok=True)
        catalog = read(code, domain) if path.exists() else _new_catalog(code, domain)
        catalog.update(template, no_fuzzy_matching=True, update_header_comment=False)
        catalog.obsolete.clear()
        path.write_bytes(_stable(_po_bytes(catalog, ignore_obsolete=True)))


TEAMS = {"fr": ("French", "Français"), "zh": ("Chinese", "中文")}


def _new_catalog(code, domain):
    """An empty .po of ``domain`` in language ``code``, with the kit's header."""
    english, own = TEAMS[code]
    what = f"assignment {domain.name}'s checks (their names and sentences)" if domain.assignment else domain.name
    catalog = Catalog(locale=code, domain=domain.name, charset="utf-8", project="attention-kit",
                   version=attnkit.__version__, last_translator="the attention course kit's translators",
                   language_team=own, fuzzy=False,
                   header_comment=f"# {english} translation of {what}.\n# Terms: the course glossary. Written and "
                                  + ("compiled with the instructor's catalogs command (authors' guide)."  # no grader
                                     if domain.locale == STUDENT.locale            # name in the student package
                                     else "compiled with python -m attnkit_grader.catalogs."))
    catalog.msgid_bugs_address = ""
    return catalog


def compiled(code, domain=STUDENT):
    """The .mo bytes of language ``code``'s .po: the same bytes on every run (its header's dates are the epoch,
    not now; the .po keeps none either, see _stable)."""
    catalog = read(code, domain)
    catalog.creation_date = catalog.revision_date = EPOCH
    buffer = io.BytesIO()
    write_mo(buffer, catalog, use_fuzzy=False)
    return buffer.getvalue()


def mo_content(data):
    """What gettext reads in a .mo's bytes: each message (context, id, translation), the plural rule and the
    charset; not the header's stamps (the tool that compiled it, its version, the dates), so a new Babel that
    writes another Generated-By line compiles the same catalog."""
    catalog = read_mo(io.BytesIO(data))
    messages = {(m.context, m.id if isinstance(m.id, str) else tuple(m.id)):
                m.string if isinstance(m.string, str) else tuple(m.string) for m in catalog if m.id}
    return messages, catalog.plural_forms, catalog.charset


def compile_all():
    for domain in DOMAINS:
        for code in TRANSLATED:
            domain.mo(code).write_bytes(compiled(code, domain))


def _placeholders(text):
    """The named placeholders of a message: {name} (the checks', the judge's) or %(name)s (the feedback page's)."""
    if "%(" in text:
        return sorted(re.findall(r"%\((\w+)\)s", text))
    return sorted(name for _, name, _, _ in string.Formatter().parse(text) if name is not None)


def problems(domains=DOMAINS):
    """What is wrong with the catalogs, one line each (none: every message of the code is in the .pot and
    translated in every language, with the same placeholders, and each .mo is its .po compiled)."""
    return [problem for domain in domains for problem in _problems(domain)]


def _problems(domain):
    found = []
    code_ids = set(extracted(domain))
    with open(domain.template, "rb") as file:
        template_ids = {message.id for message in read_po(file) if message.id}
    found += [f"{domain.template.name}: not extracted yet: {m!r}" for m in sorted(code_ids - template_ids)]
    found += [f"{domain.template.name}: no longer in the code: {m!r}" for m in sorted(template_ids - code_ids)]
    for code in TRANSLATED:
        catalog = read(code, domain)
        ids = {message.id for message in catalog if message.id}
        found += [f"{code}: missing {m!r}" for m in sorted(code_ids - ids)]
        found += [f"{code}: no longer in the code: {m!r}" for m in sorted(ids - code_ids)]
        for message in catalog:
            if not message.id:
                continue
            if not message.string:
                found.append(f"{code}: untranslated {message.id!r}")
            elif message.fuzzy:
                found.append(f"{code}: fuzzy {message.id!r}")
            elif message.string == message.id and message.id not in SAME_AS_ENGLISH and (code, message.id) not in SAME_WORD:
                found.append(f"{code}: the English text unchanged {message.id!r}")
            elif _placeholders(message.string) != _placeholders(message.id):
                found.append(f"{code}: placeholders {_placeholders(message.string)} instead of "
                             f"{_placeholders(message.id)} in {message.id!r}")
        if not domain.mo(code).exists() or mo_content(domain.mo(code).read_bytes()) != mo_content(compiled(code, domain)):
            found.append(f"{code}: {domain.mo(code).name} is not its .po compiled (python -m attnkit_grader.catalogs compile)")
    return found


def counts(domain=STUDENT):
    """{language: (messages, translated)}: English counts every message as its own."""
    total = len(extracted(domain))
    result = {i18n.ENGLISH: (total, total)}
    for code in TRANSLATED:
        catalog = read(code, domain)
        done = sum(1 for message in catalog if message.id and message.string and not message.fuzzy)
        result[code] = (total, done)
    return result


def main(argv=None):
    command = (argv if argv is not None else sys.argv[1:] or ["counts"])[0]
    if command == "extract":
        for domain in DOMAINS:
            extract(domain)
    elif command == "compile":
        compile_all()
    elif command == "check":
        for problem in problems():
            print(problem)
        return 1 if problems() else 0
    elif command == "counts":
        for domain in DOMAINS:
            for code, (total, done) in counts(domain).items():
                print(f"{domain.name} {code}: {done} of {total} messages translated")
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

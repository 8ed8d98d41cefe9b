"""The translation catalogs of what the kit says to students (gettext, with Babel): extract, update, compile, count.

``python -m attnkit_grader.catalogs extract``  the English messages of the student package (every ``Text("...")``
                                               and ``N_("...")`` of ``attnkit``) into ``attnkit/locale/attnkit.pot``,
                                               and each language's ``.po`` updated with the new ones (untranslated:
                                               the catalog test fails until a translator fills them)
``python -m attnkit_grader.catalogs compile``  each ``.po`` into its ``.mo``, which ships in the wheel beside it
``python -m attnkit_grader.catalogs counts``   the messages and the translated ones, per language
``python -m attnkit_grader.catalogs check``    what is wrong with the catalogs (exit status 1 if anything)

The ``.mo`` files are committed (an editable install reads them where they are); ``tests/test_catalogs.py``
fails when one is not the compilation of its ``.po``, when the ``.pot`` lags the code, and on any untranslated,
fuzzy or unchanged-from-English entry outside :data:`SAME_AS_ENGLISH`.
"""

import io
import string
import sys
from datetime import datetime, timezone
from pathlib import Path

import attnkit
from attnkit import i18n
from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_file
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

PACKAGE = Path(attnkit.__file__).parent
LOCALE = PACKAGE / "locale"
TEMPLATE = LOCALE / f"{i18n.DOMAIN}.pot"
KEYWORDS = {"Text": None, "N_": None}          # the first argument of each is a message
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
TRANSLATED = [code for code in i18n.LANGUAGES if code != i18n.ENGLISH]

# Messages whose translation may be the English text itself: placeholders and punctuation only, and the names
# of code. Anything else left as English is a translation not done.
SAME_AS_ENGLISH = {
    "{message}. {diagnosis}",
    "{earlier}; or {later}",
}


def po_path(code):
    return LOCALE / code / "LC_MESSAGES" / f"{i18n.DOMAIN}.po"


def mo_path(code):
    return po_path(code).with_suffix(".mo")


def sources():
    """The student package's Python files, in a stable order."""
    return sorted(path for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts)


def extracted():
    """{msgid: [(file, line), ...]} of every message in the student package's code."""
    found = {}
    for path in sources():
        for line, message, _, _ in extract_from_file("python", str(path), keywords=KEYWORDS,
                                                     comment_tags=(), options={"encoding": "utf-8"}):
            if isinstance(message, str) and message:
                found.setdefault(message, []).append((path.relative_to(PACKAGE.parent).as_posix(), line))
    return found


def template_catalog():
    catalog = Catalog(project="attention-kit", version=attnkit.__version__, domain=i18n.DOMAIN,
                      charset="utf-8", fuzzy=False)
    for message, locations in extracted().items():
        catalog.add(message, locations=locations, flags=("python-brace-format",) if "{" in message else ())
    return catalog


def _po_bytes(catalog, **options):
    buffer = io.BytesIO()
    write_po(buffer, catalog, width=116, omit_header=False, sort_output=False, include_lineno=False, **options)
    return buffer.getvalue()


def _stable(data):
    """A .pot/.po without the lines that change on every run (creation and revision dates)."""
    return b"".join(line for line in data.splitlines(keepends=True)
                    if not line.startswith((b'"POT-Creation-Date:', b'"PO-Revision-Date:')))


def read(code):
    with open(po_path(code), "rb") as file:
        return read_po(file, locale=code, domain=i18n.DOMAIN)


def extract():
    """Write the .pot; add new messages to each .po (untranslated) and mark vanished ones obsolete."""
    template = template_catalog()
    TEMPLATE.parent.mkdir(parents=True, exist_ok=True)
    TEMPLATE.write_bytes(_stable(_po_bytes(template)))
    for code in TRANSLATED:
        path = po_path(code)
        path.parent.mkdir(parents=True, exist_ok=True)
        catalog = read(code) if path.exists() else Catalog(locale=code, domain=i18n.DOMAIN, charset="utf-8")
        catalog.update(template, no_fuzzy_matching=True, update_header_comment=False)
        catalog.obsolete.clear()
        path.write_bytes(_stable(_po_bytes(catalog, ignore_obsolete=True)))


def compiled(code):
    """The .mo bytes of language ``code``'s .po: the same bytes on every run (its header's dates are the epoch,
    not now; the .po keeps none either, see _stable)."""
    catalog = read(code)
    catalog.creation_date = catalog.revision_date = EPOCH
    buffer = io.BytesIO()
    write_mo(buffer, catalog, use_fuzzy=False)
    return buffer.getvalue()


def compile_all():
    for code in TRANSLATED:
        mo_path(code).write_bytes(compiled(code))


def _placeholders(text):
    return sorted(name for _, name, _, _ in string.Formatter().parse(text) if name is not None)


def problems():
    """What is wrong with the catalogs, one line each (none: every message of the code is in the .pot and
    translated in every language, with the same placeholders, and each .mo is its .po compiled)."""
    found = []
    code_ids = set(extracted())
    with open(TEMPLATE, "rb") as file:
        template_ids = {message.id for message in read_po(file) if message.id}
    found += [f"{TEMPLATE.name}: not extracted yet: {m!r}" for m in sorted(code_ids - template_ids)]
    found += [f"{TEMPLATE.name}: no longer in the code: {m!r}" for m in sorted(template_ids - code_ids)]
    for code in TRANSLATED:
        catalog = read(code)
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
            elif message.string == message.id and message.id not in SAME_AS_ENGLISH:
                found.append(f"{code}: the English text unchanged {message.id!r}")
            elif _placeholders(message.string) != _placeholders(message.id):
                found.append(f"{code}: placeholders {_placeholders(message.string)} instead of "
                             f"{_placeholders(message.id)} in {message.id!r}")
        if not mo_path(code).exists() or mo_path(code).read_bytes() != compiled(code):
            found.append(f"{code}: {mo_path(code).name} is not its .po compiled (python -m attnkit_grader.catalogs compile)")
    return found


def counts():
    """{language: (messages, translated)}: English counts every message as its own."""
    total = len(template_catalog())
    result = {i18n.ENGLISH: (total, total)}
    for code in TRANSLATED:
        catalog = read(code)
        done = sum(1 for message in catalog if message.id and message.string and not message.fuzzy)
        result[code] = (total, done)
    return result


def main(argv=None):
    command = (argv if argv is not None else sys.argv[1:] or ["counts"])[0]
    if command == "extract":
        extract()
    elif command == "compile":
        compile_all()
    elif command == "check":
        for problem in problems():
            print(problem)
        return 1 if problems() else 0
    elif command == "counts":
        for code, (total, done) in counts().items():
            print(f"{code}: {done} of {total} messages translated")
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

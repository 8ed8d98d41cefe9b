"""The translation catalogs of what attnkit says to students (attnkit.i18n, attnkit_grader.catalogs)."""

import gettext

import pytest

from attnkit import i18n
from attnkit_grader import catalogs


def test_every_message_is_extracted_translated_and_compiled():
    """No message of the code missing from the .pot or a .po; none untranslated, fuzzy, left in English (outside
    the allowlist) or with other placeholders than the English; each .mo is its .po compiled."""
    assert catalogs.problems() == []


def test_a_new_english_message_without_a_catalog_entry_fails(monkeypatch):
    new = "a sentence added to the code and never extracted"
    extracted = catalogs.extracted
    monkeypatch.setattr(catalogs, "extracted", lambda domain: {**extracted(domain), new: [("attnkit/checking.py", 1)]})
    assert any(new in problem and "not extracted yet" in problem for problem in catalogs.problems())
    assert any(new in problem and problem.startswith("fr: missing") for problem in catalogs.problems())


@pytest.mark.parametrize("code", catalogs.TRANSLATED)
@pytest.mark.parametrize("domain", catalogs.DOMAINS, ids=lambda domain: domain.name)
def test_an_untranslated_fuzzy_english_or_misplaced_entry_fails(code, domain, monkeypatch):
    """The checks of test_every_message... can fail: each kind of bad entry, put in a copy of the catalog."""
    read = catalogs.read
    catalog = read(code, domain)
    ids = sorted((message.id for message in catalog if message.id and message.id not in catalogs.SAME_AS_ENGLISH),
                 key=lambda id: "{" not in id and "%(" not in id)[:4]      # with placeholders first (a test cell's
    # catalog may have fewer than four: then the fourth gets one its English lacks)
    catalog[ids[0]].string = ""
    catalog[ids[1]].flags.add("fuzzy")
    catalog[ids[2]].string = ids[2]
    catalog[ids[3]].string = catalog[ids[3]].string.replace("{", "{x").replace("%(", "%(x") \
        if "{" in ids[3] or "%(" in ids[3] else catalog[ids[3]].string + " {x}"
    monkeypatch.setattr(catalogs, "read", lambda c, d=catalogs.STUDENT: catalog if (c, d) == (code, domain) else read(c, d))
    problems = "\n".join(catalogs.problems())
    for expected, id in zip(("untranslated", "fuzzy", "the English text unchanged", "placeholders"), ids):
        assert f"{code}: {expected}" in problems and repr(id) in problems, (expected, problems)


def test_a_catalog_compiled_by_another_babel_passes_and_a_changed_translation_fails(monkeypatch):
    """The .mo test compares what gettext reads, not bytes: another compiler's stamp in the header (a new Babel
    writes its own version there) is the same catalog; one translation changed is not."""
    import babel

    domain = catalogs.STUDENT
    compiled = catalogs.compiled("fr", domain)
    version = babel.__version__.encode()
    assert b"Generated-By: Babel " + version in compiled
    stamped = compiled.replace(version, b"9" * len(version))            # the same length: offsets stay valid
    assert stamped != compiled and catalogs.mo_content(stamped) == catalogs.mo_content(compiled)
    read = catalogs.read

    def changed(code, d=catalogs.STUDENT):
        catalog = read(code, d)
        if (code, d) == ("fr", domain):
            message = next(m for m in catalog if m.id and m.string)
            message.string += " (modifié)"
        return catalog
    monkeypatch.setattr(catalogs, "read", changed)
    assert catalogs.mo_content(catalogs.compiled("fr", domain)) != catalogs.mo_content(compiled)
    assert any("is not its .po compiled" in p for p in catalogs.problems([domain]))


@pytest.mark.parametrize("domain", catalogs.DOMAINS, ids=lambda domain: domain.name)
def test_the_compiled_catalogs_are_what_gettext_reads(domain):
    for code in catalogs.TRANSLATED:
        translation = gettext.translation(domain.name, domain.locale, languages=[code])
        for message in catalogs.read(code, domain):
            if message.id:
                assert translation.gettext(message.id) == message.string


@pytest.mark.parametrize("domain", catalogs.DOMAINS, ids=lambda domain: domain.name)
def test_french_puts_a_no_break_space_before_double_punctuation(domain):
    """« : » « ; » « ? » « ! » never start a line in French: a no-break space before each, never a plain one. The
    header (msgid "") is metadata, not French: Babel 2.19 writes CLDR's plural rule there, "... ? 0 : ..." in C."""
    for message in catalogs.read("fr", domain):
        for mark in ":;?!" if message.id else "":
            assert f" {mark}" not in message.string, message.string

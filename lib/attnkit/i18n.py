"""The language of what attnkit says to a student: English, French or Chinese, through gettext catalogs.

The language, first found of:

1. ``attnkit.set_language("fr")`` called in the notebook (any folder; ``set_language(None)`` undoes it);
2. the environment variable ``ATTNKIT_LANG`` (``fr``, ``zh``, ``en``; ``fr_FR.UTF-8`` reads as ``fr``);
3. the edition the notebook was opened from: a working directory named ``NAME_fr`` or ``NAME_zh`` (the folder
   a hub fetch, the student edition and ``release/`` give each edition; a kernel starts in its notebook's
   folder);
4. English.

A message is a :class:`Text`: an English template with named placeholders (gettext's msgid, extracted into
``attnkit/locale/attnkit.pot``) and its values, rendered in the language of the moment it is shown. Its English
text (``str(text)``) never changes with the language: the grader compares failures by it, so grades cannot
depend on the language. The catalogs are written and compiled with the instructor's tools (the authors' guide, "Translations").
"""

import functools
import gettext
import os
import string
import textwrap

from .text import display_width

DOMAIN = "attnkit"
LOCALE = os.path.join(os.path.dirname(__file__), "locale")
ENGLISH = "en"
LANGUAGES = ("en", "fr", "zh")
ENVIRONMENT = "ATTNKIT_LANG"

_chosen = None      # set_language's choice: the one piece of module state, a setting the student makes once


def language_code(value):
    """'fr' from 'fr', 'fr_FR.UTF-8', 'zh-Hans', 'ZH'; None for anything else (the grader's report setting reads
    its variable the same way)."""
    code = str(value).strip().lower().replace("-", "_").split("_")[0].split(".")[0]
    return code if code in LANGUAGES else None


def set_language(language):
    """Show attnkit's messages in ``language`` ("en", "fr" or "zh") from now on in this kernel; None goes back
    to the default (``ATTNKIT_LANG``, else the edition's folder, else English)."""
    global _chosen
    if language is None:
        _chosen = None
        return
    code = language_code(language)
    if code is None:
        raise ValueError(f"language: expected one of {', '.join(LANGUAGES)}, got {language!r}")
    _chosen = code


def edition_language(folder):
    """The language of the edition whose folder is ``folder`` ('NAME_fr' -> 'fr'), English for any other."""
    suffix = os.path.basename(os.path.normpath(str(folder))).rpartition("_")[2]
    return suffix if suffix in LANGUAGES and suffix != ENGLISH else ENGLISH


def language():
    """The language messages are shown in now (see the module's docstring for the order)."""
    if _chosen is not None:
        return _chosen
    from_environment = language_code(os.environ.get(ENVIRONMENT, ""))
    if from_environment is not None:
        return from_environment
    try:
        return edition_language(os.getcwd())
    except OSError:                         # the working directory was removed
        return ENGLISH


CELLS_PREFIX = DOMAIN + "_"    # the test cells' own words: a domain per assignment, attnkit_NAME (the authors' guide)


def cell_domains(code):
    """The test cells' domains shipped in language ``code``: attnkit_NAME for each assignment whose test cells
    have words of their own (written from the source notebooks' test cells by the instructor's catalog tool, see
    the authors' guide, "The test cells' words", into this package's locale/: a laptop, the hub and the sandbox
    all find them)."""
    folder = os.path.join(LOCALE, code, "LC_MESSAGES")
    names = os.listdir(folder) if os.path.isdir(folder) else ()
    return sorted(name[:-len(".mo")] for name in names if name.startswith(CELLS_PREFIX) and name.endswith(".mo"))


@functools.lru_cache(maxsize=None)
def catalog(code):
    """The gettext translations of ``code`` (English: none, the msgids are the English text): attnkit's own
    messages, then the test cells' words (each assignment's domain, see :func:`cell_domains`)."""
    if code == ENGLISH:
        return gettext.NullTranslations()
    found = gettext.translation(DOMAIN, LOCALE, languages=[code], fallback=False)
    for name in cell_domains(code):
        found.add_fallback(gettext.translation(name, LOCALE, languages=[code], fallback=False))
    return found


def translate(template, code=None):
    """``template`` in language ``code`` (default: the current language)."""
    return catalog(code or language()).gettext(template)


def N_(template):
    """Marks ``template`` as a message for extraction; returns it unchanged (it is translated when shown)."""
    return template


_FORMATTER = string.Formatter()


def _chinese(character):
    """A character of Chinese text: a wide (CJK) character that is not an opening or closing mark."""
    return _wide(character) and character not in CLOSING and character not in OPENING


def fill(template, values):
    """``template.format(**values)``, without the space between Chinese text and a placeholder that is filled
    with Chinese: "实际为 {got}" gives "实际为 (3, 2)" but "实际为其他形状" (Chinese sets a space between its
    characters and Latin text or numbers, never between two of its own). Other languages are not changed."""
    if not isinstance(template, str):
        raise TypeError(f"template: expected a str, got {type(template).__name__}")
    parts = []
    for literal, name, spec, conversion in _FORMATTER.parse(template):
        if parts and parts[-1][1] and literal[:1] == " " and len(literal) > 1 and _chinese(literal[1]) \
                and _chinese(parts[-1][0][-1]):
            literal = literal[1:]                   # "{later} 的" filled with Chinese: no space after it either
        if name is None:
            parts.append((literal, False))
            continue
        value = _FORMATTER.convert_field(_FORMATTER.get_field(name, (), values)[0], conversion)
        text = _FORMATTER.format_field(value, _FORMATTER.vformat(spec, (), values) if spec else "")
        if text and _chinese(text[0]) and literal.endswith(" ") and len(literal) > 1 and _chinese(literal[-2]):
            literal = literal[:-1]
        elif text and _chinese(text[0]) and literal == " " and parts and _chinese(parts[-1][0][-1:] or "a"):
            literal = ""
        parts += [(literal, False), (text, bool(text))]
    return "".join(text for text, _ in parts)


class Text:
    """A sentence as data: an English ``template`` with named ``{placeholders}`` and their values (a value
    may itself be a Text, rendered in the same language). ``str()`` is the English text."""

    __slots__ = ("template", "args")

    def __init__(self, template, **args):
        if not isinstance(template, str):
            raise TypeError(f"template: expected an English str (the message id), got {type(template).__name__}")
        self.template, self.args = template, args

    def render(self, code=None):
        code = code or language()
        template = translate(self.template, code)
        if not self.args:
            return template
        return fill(template, {name: value.render(code) if isinstance(value, Text) else value
                               for name, value in self.args.items()})

    def __str__(self):
        return self.render(ENGLISH)

    def __repr__(self):
        return f"Text({self.template!r}, **{self.args!r})"


def said(words):
    """``words`` as a Text: a test cell's check name or subject (an English str, looked up in the catalogs when
    shown) or a Text already (a subject with values: ``Text("f({n})", n=3)``)."""
    return words if isinstance(words, Text) else Text(str(words))


# Closing punctuation never starts a line, opening punctuation never ends one (the rules of Chinese line breaking,
# 避头尾; the ASCII ones too, since Latin text sits inside Chinese sentences).
CLOSING = frozenset("，。、；：！？）」』》】〕〉〗”’…%,.;:!?)]}")
OPENING = frozenset("（「『《【〔〈〖“‘([{")


def _wide(character):
    return display_width(character) == 2


def _pieces(text):
    """``text`` cut where a line may break: [(space before, piece)], a piece being one wide (CJK) character or a
    run of other characters without a space (a Latin word, an identifier, a number: never cut), with closing
    punctuation joined to the piece before it and opening punctuation to the piece after it."""
    pieces, space, index = [], False, 0
    while index < len(text):
        if text[index].isspace():
            space, index = True, index + 1
            continue
        end = index + 1
        if not _wide(text[index]):
            while end < len(text) and not text[end].isspace() and not _wide(text[end]):
                end += 1
        piece = text[index:end]
        if pieces and not space and (piece[0] in CLOSING or pieces[-1][1][-1] in OPENING):
            pieces[-1][1] += piece
        else:
            pieces.append([space, piece])
        space, index = False, end
    return pieces


def wrap(text, width=80, subsequent_indent=""):
    """``text`` in lines of at most ``width`` columns, a Chinese character taking two. Chinese, which has no
    spaces, breaks between two of its characters, but never inside a Latin word, an identifier or a number
    written in it, and no line starts with closing punctuation (，。；：）...) or ends with opening punctuation;
    only a word longer than a whole line is cut. Text without wide characters wraps as ``textwrap.wrap``."""
    if not isinstance(width, int) or isinstance(width, bool) or width <= display_width(subsequent_indent):
        raise ValueError(f"width: expected an int wider than subsequent_indent, got {width!r}")
    if display_width(text) == len(text):
        return textwrap.wrap(text, width, subsequent_indent=subsequent_indent)
    lines, line, used = [], "", 0
    for space, piece in _pieces(text):
        gap = 1 if space and line.strip() else 0
        size = display_width(piece)
        if line.strip() and used + gap + size > width:
            lines.append(line)
            line, used, gap = subsequent_indent, display_width(subsequent_indent), 0
        while used + gap + size > width and size > 1:          # a word longer than a line: cut, as textwrap does
            room, cut = width - used - gap, 0
            while cut < len(piece) and display_width(piece[:cut + 1]) <= room:
                cut += 1
            while 1 < cut < len(piece) and piece[cut] in CLOSING:    # the next line must not start with it
                cut -= 1
            cut = max(cut, 1)
            lines.append(line + " " * gap + piece[:cut])
            piece, size = piece[cut:], display_width(piece[cut:])
            line, used, gap = subsequent_indent, display_width(subsequent_indent), 0
        line, used = line + " " * gap + piece, used + gap + size
    return [*lines, line] if line.strip() else lines

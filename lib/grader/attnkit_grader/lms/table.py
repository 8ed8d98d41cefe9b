"""An LMS's CSV file as the LMS wrote it: header, rows and dialect, read strictly and written back alike.

The kit fills the LMS's own file, so the copy it writes must read like the original: the same delimiter, the
same line ends, and the UTF-8 byte-order mark when the original had one (Canvas adds it on request; Excel needs
it to read UTF-8). Whatever would make the LMS misread the file is refused with an error naming the argument:
a file that is not UTF-8 (Excel's "Unicode Text" is UTF-16), a delimiter the LMS does not read, a row with
more or fewer fields than the header.
"""

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from .. import files

UTF8_BOM = "\ufeff"
# Longest first: UTF-32 LE begins with the UTF-16 LE mark.
OTHER_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"),
              (b"\xfe\xff", "UTF-16"))
NAMES = {",": "comma", ";": "semicolon", "\t": "tab", ":": "colon"}


@dataclass
class Table:
    """A CSV file's header and rows (every row as long as the header) and the dialect to write it back in.

    ``lines[i]`` is the line of the file where ``rows[i]`` starts (the header is line 1).
    """

    path: Path
    header: list
    rows: list
    lines: list
    delimiter: str = ","
    bom: bool = False
    newline: str = "\r\n"

    def column(self, name):
        """Index of the column headed ``name`` (surrounding spaces ignored), or None."""
        for index, title in enumerate(self.header):
            if title.strip() == name:
                return index
        return None

    def insert_column(self, index, title):
        """A new empty column ``title`` before column ``index``."""
        self.header.insert(index, title)
        for row in self.rows:
            row.insert(index, "")

    def text(self):
        """The file's content, in its own dialect."""
        buffer = io.StringIO()
        writer = csv.writer(buffer, delimiter=self.delimiter, lineterminator=self.newline)
        writer.writerow(self.header)
        writer.writerows(self.rows)
        return (UTF8_BOM if self.bom else "") + buffer.getvalue()


def read(path, argument, delimiters, what):
    """The Table of ``path``, whose delimiter is the one of ``delimiters`` that splits the header the most.

    ``argument`` names the argument in errors; ``what`` names the file ("Canvas's gradebook export").
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{argument}: {path} does not exist (expected {what})")
    data = path.read_bytes()
    for mark, encoding in OTHER_BOMS:
        if data.startswith(mark):
            raise ValueError(f"{argument}: {path} is {encoding} (its first bytes are the {encoding} byte-order mark); "
                             f"save it as 'CSV UTF-8' instead (Excel's 'Unicode Text' is UTF-16)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{argument}: {path} is not UTF-8 (byte {error.start} cannot be decoded); "
                         f"export it from the LMS again, or save it as 'CSV UTF-8'") from None
    bom = text.startswith(UTF8_BOM)
    text = text[len(UTF8_BOM):] if bom else text
    first = text.splitlines()[0] if text.strip() else ""
    if not first.strip():
        raise ValueError(f"{argument}: {path} is empty or starts with a blank line (expected {what})")
    delimiter = max(delimiters, key=lambda d: len(next(csv.reader([first], delimiter=d))))
    header = next(csv.reader([first], delimiter=delimiter))
    if len(header) < 2:
        found = sorted({NAMES.get(c, repr(c)) for c in first if not c.isalnum() and c not in " _-()@.'\""})
        readable = ", ".join(NAMES[d] for d in delimiters)
        raise ValueError(f"{argument}: {path} has a single column with any delimiter its LMS reads ({readable}); "
                         f"its first line holds {found or 'no delimiter'}. Export it again (expected {what})")
    newline = "\r\n" if "\r\n" in text[:len(first) + 2] else "\n"
    rows, lines = [], []
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        next(reader)
        start = reader.line_num + 1
        for row in reader:
            if row and len(row) != len(header):
                raise ValueError(f"{argument}: {path} line {start} has {len(row)} fields, its header {len(header)} "
                                 f"({NAMES[delimiter]}-separated): a delimiter inside an unquoted cell?")
            if row:
                rows.append(row)
                lines.append(start)
            start = reader.line_num + 1
    except csv.Error as error:
        raise ValueError(f"{argument}: {path} is not a valid CSV file near line {reader.line_num}: {error}") from None
    return Table(path, header, rows, lines, delimiter, bom, newline)


def write(table, path):
    """Write ``table`` to ``path`` atomically (a killed export never leaves half a file)."""
    return files.write(path, table.text())


def same_file(path, other):
    """True when ``path`` and ``other`` name one file (through links too)."""
    path, other = Path(path), Path(other)
    if path.exists() and other.exists():
        return path.samefile(other)
    return path.resolve() == other.resolve()

"""What an LMS export decided, as one record: :class:`Export`, its :class:`Finding` list, and the text a person reads.

Each finding is stored as a kind and its arguments; :data:`KINDS` says how serious each kind is and how it reads.
Mismatches (a student on one side only, a duplicate identity, another name, other points) and grades still
awaiting the formgrader stop the export unless the instructor allows them; notes never do.
"""

from dataclasses import dataclass, field

MISMATCH, UNGRADED, NOTE = "mismatch", "ungraded", "note"

KINDS = {
    "no_identity": (MISMATCH, "{student} ({name}): the roster has no {field} to find them by"),
    "duplicate_roster": (MISMATCH, "{field} {value!r} is shared by {students}: none of them filled"),
    "duplicate_lms": (MISMATCH, "{column} {value!r} is on lines {lines} ({names}): none of them filled"),
    "not_in_lms": (MISMATCH, "{student} ({name}): no row with {column} {value!r}: their grades are not in the file"),
    "not_in_roster": (MISMATCH, "line {line}, {name} ({column} {value!r}): not on the roster: left as it was"),
    "name_mismatch": (MISMATCH, "{student}: the roster says {roster!r}, line {line} says {lms!r} "
                                "({column} {value!r})"),
    "points_possible": (MISMATCH, "{assignment}: column {header!r} is worth {lms!r} points in the LMS file, "
                                  "{kit} in the gradebook"),
    "pending": (UNGRADED, "{student} / {assignment}: {count} cell(s) await a manual grade in the formgrader "
                          "({points} points so far)"),
    "new_column": (NOTE, "{assignment}: no column titled after it: added one, worth {points} points; {how}"),
    "missing": (NOTE, "{student} / {assignment}: no submission in the gradebook (--missing {policy}): {cell!r}"),
    "kept": (NOTE, "{student} / {assignment}: no submission in the gradebook: kept the LMS file's {value!r}"),
    "changed": (NOTE, "{student} / {assignment}: the LMS file's {old!r} replaced by {new}"),
    "late": (NOTE, "{student} / {assignment}: {score} points minus a late penalty of {penalty} = {points}"),
    "skipped_row": (NOTE, "line {line}, {name}: {why}: left as it was"),
}
TITLES = {MISMATCH: "Mismatches", UNGRADED: "Awaiting a manual grade", NOTE: "Notes"}
ALLOW = {MISMATCH: "--allow-mismatches", UNGRADED: "--allow-ungraded"}


@dataclass
class Finding:
    """One thing the export found: its kind (a key of KINDS) and the arguments its message takes."""

    kind: str
    details: dict = field(default_factory=dict)

    @property
    def severity(self):
        return KINDS[self.kind][0]

    def text(self):
        return KINDS[self.kind][1].format(**self.details)


@dataclass
class Column:
    """Where one assignment went: the LMS column, the gradebook's maximum, how many cells got a total."""

    assignment: str
    header: str
    max_points: float
    new: bool = False
    graded: int = 0
    missing: int = 0


@dataclass
class Export:
    """One export: the LMS file read, how students were matched, the columns filled and every finding.

    ``out`` is where the filled copy was written (None when it was not); ``blocked`` lists the severities that
    stopped it.
    """

    lms: str
    source: str
    identity: str                  # the LMS column students were matched on
    match: str                     # the roster field matched against it
    roster: int = 0                # students on the roster
    rows: int = 0                  # student rows in the LMS file
    matched: int = 0
    named: int = 0                 # matched pairs whose names were compared
    columns: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    out: str = None
    blocked: list = field(default_factory=list)

    def add(self, kind, **details):
        self.findings.append(Finding(kind, details))

    def of(self, severity):
        return [finding for finding in self.findings if finding.severity == severity]

    def severities(self, allow_mismatches=False, allow_ungraded=False):
        """The severities that stop this export, given what the instructor allows."""
        allowed = {MISMATCH: allow_mismatches, UNGRADED: allow_ungraded}
        return [severity for severity in (MISMATCH, UNGRADED) if self.of(severity) and not allowed[severity]]

    def text(self):
        """The summary, then every finding by severity, as the CLI prints them."""
        lines = [f"{self.lms} file {self.source} -> {self.out or 'not written'}"]
        width = max((len(column.assignment) for column in self.columns), default=0)
        for column in self.columns:
            new = ", new" if column.new else ""
            lines.append(f"  {column.assignment.ljust(width)} -> column {column.header!r} ({column.max_points:g} "
                         f"points{new}): {column.graded} graded, {column.missing} without a submission")
        lines.append(f"  {self.matched} of {self.roster} roster students matched with the file's {self.rows} student "
                     f"rows (roster {self.match} = {self.identity!r}); {self.named} names compared")
        for severity in (MISMATCH, UNGRADED, NOTE):
            found = self.of(severity)
            if found:
                how = ""
                if severity in self.blocked:
                    how = f" (the file was not written; {ALLOW[severity]} writes it anyway)"
                elif severity in ALLOW:
                    how = f" (allowed by {ALLOW[severity]})"
                lines.append(f"\n{TITLES[severity]}{how}:")
                lines += [f"  {finding.text()}" for finding in found]
        return "\n".join(lines)

"""nbgrader export plugins filling an LMS's own gradebook file: :class:`CanvasExportPlugin`, ``MoodleExportPlugin``.

nbgrader takes exports as ``ExportPlugin`` subclasses, so each LMS is one, usable as

    nbgrader export --exporter=attnkit_grader.lms.plugins.CanvasExportPlugin \\
        --CanvasExportPlugin.lms_csv=canvas_export.csv --to canvas_import.csv

and ``attnkit export canvas|moodle`` (:mod:`attnkit_grader.cli`) runs the same plugin and prints its report.
The LMS's file is only read; the filled copy goes to ``to`` (``--out``), and only when nothing stops it: a
mismatch between the roster and the LMS file, or grades still awaiting the formgrader, unless allowed.
"""

from pathlib import Path

from nbgrader.plugins import ExportPlugin
from traitlets import Bool, Dict, Enum, Unicode

from . import canvas, moodle
from .fill import MISSING, fill
from .roster import FIELDS, students
from .table import read, same_file, write
from .totals import assignments, read_totals

LAYOUTS = {"canvas": canvas, "moodle": moodle}


class LmsExportPlugin(ExportPlugin):
    """Fill the LMS's own gradebook file ``lms_csv`` with the gradebook's totals and write it to ``to``."""

    layout = None          # the module describing the LMS's file: canvas or moodle

    lms_csv = Unicode("", help="the gradebook file exported from the LMS (only read)").tag(config=True)
    identifier = Unicode("", help="the LMS column students are found by (default: the LMS's default)").tag(config=True)
    identity_column = Unicode("", help="its header, where the LMS's export names it differently").tag(config=True)
    match = Enum(("",) + FIELDS, default_value="",
                 help="the roster field matched against it (default: the identifier's)").tag(config=True)
    students_csv = Unicode("", help="a class list completing the gradebook's students (optional)").tag(config=True)
    columns = Dict(value_trait=Unicode(), help="{assignment: LMS column header} for columns not titled after "
                                               "their assignment").tag(config=True)
    missing = Enum(MISSING, default_value="zero", help="what a student with no submission gets: 'zero' or "
                                                       "'blank' (no grade)").tag(config=True)
    allow_mismatches = Bool(False, help="write the file despite roster/LMS mismatches").tag(config=True)
    allow_ungraded = Bool(False, help="write the file while cells await a manual grade").tag(config=True)

    def run(self, gradebook):
        """Read the LMS file, fill it, write it to ``to`` unless something stops it; return the Export."""
        if self.student:
            raise ValueError(f"student: an LMS file is filled for the whole class; leave out {self.student}")
        if not self.lms_csv:
            raise ValueError("lms_csv: no LMS file given (the gradebook file exported from the LMS)")
        destination(self.to, self.lms_csv)
        layout = self.layout
        table = read(self.lms_csv, "lms_csv", layout.DELIMITERS, layout.WHAT)
        maxima = assignments(gradebook, [str(name) for name in self.assignment])
        roster = students(gradebook, self.students_csv or None)
        totals = read_totals(gradebook, maxima, [student.id for student in roster])
        report = fill(layout, table, roster, totals, maxima, identifier=self.identifier or None,
                      identity_column=self.identity_column or None, match=self.match or None,
                      columns=dict(self.columns), missing=self.missing)
        report.blocked = report.severities(self.allow_mismatches, self.allow_ungraded)
        if not report.blocked:
            report.out = str(write(table, self.to))
        return report

    def export(self, gradebook):
        """nbgrader's hook: run, log the report, and fail (nothing written) when something stopped it."""
        report = self.run(gradebook)
        if report.blocked:
            self.log.error("%s", report.text())
            raise ValueError(f"{report.lms} export stopped by {' and '.join(report.blocked)} findings (listed "
                             f"above): nothing written to {self.to}")
        self.log.info("%s", report.text())


class CanvasExportPlugin(LmsExportPlugin):
    """Fill Canvas's gradebook export (Grades > Export) for Grades > Import: see :mod:`.canvas`."""

    layout = canvas


class MoodleExportPlugin(LmsExportPlugin):
    """Fill Moodle's grade export (Plain text file) for its CSV grade import: see :mod:`.moodle`."""

    layout = moodle


PLUGINS = {"canvas": CanvasExportPlugin, "moodle": MoodleExportPlugin}


def destination(path, lms_csv):
    """Refuse a missing destination and the LMS file itself: the LMS's file is only ever read."""
    if not path:
        raise ValueError("out: no file to write the filled copy to (attnkit export --out FILE, or nbgrader "
                         "export --to FILE)")
    if same_file(path, lms_csv):
        raise ValueError(f"out: {path} is the LMS file itself ({lms_csv}), which is only read; write the filled "
                         f"copy to another file")
    if Path(path).is_dir():
        raise ValueError(f"out: {path} is a folder; give a file name")

"""Grades into an LMS through the LMS's own gradebook file: ``attnkit export canvas|moodle``.

The instructor exports the gradebook from the LMS; the kit fills that file with each student's total from the
nbgrader gradebook and writes a copy the LMS imports. Matching on the LMS's own identity columns (instead of
a new file the LMS would have to match) keeps every student in the row the LMS knows them by, and every
student the two sides do not agree on is reported by name.

- :mod:`.table`: the CSV file as the LMS wrote it, read strictly, written back in its own dialect;
- :mod:`.canvas`, :mod:`.moodle`: each LMS's layout (identity columns, assignment columns, extra rows);
- :mod:`.roster`, :mod:`.totals`: the kit's students and their totals, from the gradebook;
- :mod:`.fill`: matching students and filling cells; :mod:`.report`: the findings and the text;
- :mod:`.plugins`: the nbgrader ``ExportPlugin`` subclasses, also behind ``attnkit export``.

Instructors' guide: docs-drafts/lms-export.md.
"""

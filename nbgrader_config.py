"""nbgrader configuration of the attention course kit: portable, no absolute paths.

The course root is the folder holding this file, so a copy of the course (CI, a temporary
directory, another machine) works without edits. Run nbgrader from this folder.
"""

import os

c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = "attention-kit"

# nbgrader's default folder names, spelled out because the repository layout, make demo and the
# tests rely on them.
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "release"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.autograded_directory = "autograded"
c.CourseDirectory.feedback_directory = "feedback"

# Per-cell time limit when validating and autograding. The slowest legitimate cell, the training
# experiment of problem set 1, takes about 3 s on one busy CPU core, and the slowest test cell under
# 2 s; 30 s leaves a tenfold margin on a loaded grading machine while an endless loop in a
# submission costs at most 30 s before nbgrader interrupts the kernel and moves on.
c.ExecutePreprocessor.timeout = 30

# A test cell a student deleted is put back from the gradebook and run, so deleting a test neither
# avoids it nor (for a correct answer deleted by accident) costs its points. nbgrader's default,
# False, leaves it out and scores it 0.
c.OverwriteCells.add_missing_cells = True

# Feedback pages complete offline (formulas typeset, no script, no request), made by the kit's exporter
# (attnkit_grader.offline): `nbgrader generate_feedback` and the Formgrader's Generate Feedback button write
# the page `attnkit release-feedback` releases. It needs the instructor's grader (attention-kit-grader).
c.GenerateFeedback.exporter_class = "attnkit_grader.offline.FeedbackExporter"

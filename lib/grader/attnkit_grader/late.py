"""The course's late-submission penalty, stored on each notebook of a submission as ``nbgrader autograde`` does.

nbgrader's ``LateSubmissionPlugin``, configured by the course (``c.LateSubmissionPlugin.penalty_method``:
'none', nbgrader's default, or 'zero'), decides the penalty from the notebook's score at grading time and how
late the hand-in was (its timestamp.txt against the assignment's due date).
"""

import logging

from nbgrader.plugins import LateSubmissionPlugin

from .course import NBGRADER_LOGGER


def apply_late_penalty(config, gradebook, submission, student):
    """Set ``late_submission_penalty`` of each notebook of ``submission`` (None when on time), clipped to
    [0, the notebook's score], and commit."""
    late = submission.total_seconds_late
    plugin = LateSubmissionPlugin(config=config, log=logging.getLogger(NBGRADER_LOGGER))
    for notebook in submission.notebooks:
        notebook.late_submission_penalty = None
        if late > 0:
            penalty = plugin.late_submission_penalty(student, notebook.score, late)
            if penalty is not None:
                notebook.late_submission_penalty = min(max(float(penalty), 0.0), notebook.score)
    gradebook.db.commit()

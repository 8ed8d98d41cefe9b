"""nbgrader plugins of the course's hub, installed by ``hub/course.py setup`` into the course's environment.

The hub's nbgrader configuration (PREFIX/venv/etc/jupyter/nbgrader_config.py, root's, read by every user)
names them, so every way in goes through them, the buttons of JupyterLab's nbgrader pages as well as the
commands typed in a terminal:

- :class:`PrivateSubmit` (``ExchangeFactory.submit``, students' *Submit*): nbgrader makes a hand-in folder
  0777 and its files world-readable; this one leaves it readable by its author and the instructors' group
  only, and changeable by its author alone.
- :class:`CheckedCollect` (``ExchangeFactory.collect``, ``nbgrader collect``; the Formgrader's *Collect*
  button runs ``attnkit collect`` itself, through :mod:`attnkit_formgrader`):
  the checks of ``attnkit collect`` (a hand-in in another student's name, backdated or changed later, or
  holding links, is refused and never replaces anything; every language edition is gathered), with each
  refusal named in the log the Formgrader's dialog shows.
- :class:`SandboxedGradingOnly` (``Autograde.exporter_class``, ``nbgrader autograde``; the Formgrader's
  *Autograde* button runs ``attnkit grade --student`` through :mod:`attnkit_formgrader`): refuses, naming
  ``attnkit grade``, before nbgrader touches a file. nbgrader's autograde runs
  student code unsandboxed, as the instructor, where a notebook could rewrite the gradebook or read source/.

This module runs in students' servers too (it is imported wherever the configuration is read): it holds
nothing secret and imports the grader only inside :class:`CheckedCollect`, which only instructors run.
"""

import os
import stat

from nbgrader.converters.base import NbGraderException
from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.exchange.default.submit import ExchangeSubmit
from nbconvert.exporters import NotebookExporter

HANDIN_DIR_MODE = 0o750         # the author: everything; the instructors' group: read; others: nothing
HANDIN_FILE_MODE = 0o640
REFUSAL = ("On this course's hub, submissions are graded only in the grading sandbox: in a terminal, in the "
           "course folder, run `attnkit grade {assignment}` (after collecting them with the Formgrader's "
           "Collect button or `attnkit collect {assignment}`). nbgrader's own autograde would run the students' "
           "code unsandboxed, with your permissions.")


class PrivateSubmit(ExchangeSubmit):
    """nbgrader's submit, then the hand-in made private (see the module's docstring).

    The hub's inbound folder belongs to the instructors' group and carries the setgid bit, so everything
    created in it gets that group; the modes below then leave the group read access. Where the inbound is
    not set up that way (the group would be the student's own), the hand-in keeps nbgrader's modes, or the
    instructor could not read it; a warning says so.
    """

    def do_copy(self, src, dest, log=None):
        """nbgrader's copy, but a hand-in's own folder is made here and never given the source's mode: a
        student outside the instructors' group who changes the mode of a folder clears its setgid bit, and
        nbgrader writes timestamp.txt and submission_secret.txt into it after copying, which would then
        belong to the student's own group. The copy goes into a folder inside, whose entries move up."""
        if os.path.dirname(os.path.abspath(dest)) != os.path.abspath(self.inbound_path):
            return super().do_copy(src, dest, log)          # the student's own cache
        os.mkdir(dest, 0o700)
        staged = os.path.join(dest, ".copying")
        super().do_copy(src, staged, log)
        for name in os.listdir(staged):
            os.rename(os.path.join(staged, name), os.path.join(dest, name))
        os.rmdir(staged)

    def copy_files(self):
        super().copy_files()
        handin = os.path.join(self.inbound_path, self.assignment_filename)
        inbound = os.stat(self.inbound_path)
        if not (inbound.st_mode & stat.S_ISGID and os.stat(handin).st_gid == inbound.st_gid):
            self.log.warning("The exchange's inbound folder is not set up for private hand-ins (setgid, the "
                             "instructors' group): this hand-in keeps nbgrader's permissions.")
            return
        folders = []
        for folder, _, files in os.walk(handin):
            folders.append(folder)
            for name in files:
                os.chmod(os.path.join(folder, name), HANDIN_FILE_MODE)
        for folder in reversed(folders):            # the hand-in's own folder last
            os.chmod(folder, HANDIN_DIR_MODE)


class CheckedCollect(ExchangeCollect):
    """nbgrader's collect replaced by ``attnkit collect`` (:func:`attnkit_grader.exchange.collect`)."""

    def init_src(self):
        if not self.coursedir.course_id:
            self.fail("No course id specified. Re-run with --course flag.")

    def init_dest(self):
        pass

    def copy_files(self):
        from attnkit_grader.course import Course          # the instructor's grader: instructors only
        from attnkit_grader.exchange import collect

        course = Course(self.coursedir.root)
        if course.course_id != self.coursedir.course_id:
            self.fail(f"The course folder {course.root} is course {course.course_id!r}, not {self.coursedir.course_id!r}")
        student = self.coursedir.student_id
        try:
            result = collect(course, self.coursedir.assignment_id, self.root,
                             students=None if student in ("", "*") else {student},
                             update=self.update, before_duedate=self.before_duedate)
        except (ValueError, FileNotFoundError) as error:
            self.fail(str(error))
        summary, *lines = result.text().splitlines()
        self.log.info(summary)
        for line in lines:
            if line.lstrip().startswith("collected"):
                self.log.info(line.strip())
        for handin in result.refused:                     # one line per reason: the dialog does not wrap
            self.log.warning("refused %s, left in the exchange:", handin.path.name)
            for problem in handin.problems:
                self.log.warning("    %s", problem)
        if result.kept and not self.update:
            self.log.info("Submissions already collected are kept; collect with --update to take newer hand-ins.")


class SandboxedGradingOnly(NotebookExporter):
    """Stands where nbgrader's Autograde creates its exporter, before it removes or writes anything: refuses."""

    def __init__(self, *args, **kwargs):
        parent = kwargs.get("parent")
        coursedir = getattr(parent, "coursedir", None)
        message = REFUSAL.format(assignment=getattr(coursedir, "assignment_id", "") or "ASSIGNMENT")
        if parent is not None:
            parent.log.error(message)
        raise NbGraderException(message)

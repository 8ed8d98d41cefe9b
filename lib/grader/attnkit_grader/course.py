"""An nbgrader course folder: its configuration, where each step's files live, and an nbgrader API bound to it.

Everything nbgrader does in this package goes through :meth:`Course.api`, which runs nbgrader in this process
with the course's own ``nbgrader_config.py`` (never the caller's working directory or ~/.jupyter), so the
pipeline works from any directory and on temporary copies of the course.
"""

import copy
import logging
import os
import sys
from pathlib import Path

import nbgrader
from nbgrader.api import Base, Gradebook, MissingEntry
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
from sqlalchemy import create_engine, inspect, text
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from . import editions as _editions
from . import offline
from .files import remove

CONFIG_NAME = "nbgrader_config.py"
# nbgrader's own log lines go to this logger; it does not propagate, so they only reach the per-job
# capture that nbgrader.utils.capture_log attaches (and from there the log files the pipeline writes).
NBGRADER_LOGGER = "attnkit_grader.nbgrader"
# The kernel nbgrader starts warns on stderr that it talks over local TCP; keep the console readable.
QUIET_KERNEL = "--IPKernelApp.log_level=ERROR"


class NothingToDo(Exception):
    """An instructor's command found nothing to work on (nothing handed in, nothing graded): its message is one
    sentence saying so and what comes first; the command line prints it and exits 0."""


class Course:
    """The course rooted at ``root`` (the folder holding nbgrader_config.py, source/, release/, ...)."""

    def __init__(self, root):
        root = Path(root).resolve()
        if not (root / CONFIG_NAME).is_file():
            raise FileNotFoundError(f"root: {root} has no {CONFIG_NAME}; is it an nbgrader course folder?")
        self.root = root
        self.config = load_config(root)
        self._dirs = CourseDirectory(config=self.config)

    def __repr__(self):
        return f"Course({str(self.root)!r})"

    @property
    def course_id(self):
        return self._dirs.course_id

    @property
    def db_url(self):
        return self._dirs.db_url

    def gradebook(self):
        """nbgrader's Gradebook of this course (a context manager), the database made first where there is none
        (:func:`create_gradebook`)."""
        create_gradebook(self.db_url)
        return Gradebook(self.db_url, self.course_id)

    def forget(self, submissions):
        """Drop the scores, autograded copies and nbgrader feedback of ``submissions`` [(assignment, student)], so
        nothing stale survives (one gradebook session for all: a batch may hold many a submission not handed in)."""
        for assignment, student in submissions:
            for step in ("autograded", "feedback"):
                remove(self.assignment_dir(step, assignment, student))
        if submissions:
            with self.gradebook() as gradebook:
                for assignment, student in submissions:
                    try:
                        gradebook.remove_submission(assignment, student)
                    except MissingEntry:
                        pass

    @property
    def timeout(self):
        """Seconds nbgrader lets one cell run before interrupting it (nbgrader's default: 30)."""
        for section in ("Execute", "ExecutePreprocessor", "NotebookClient"):
            if "timeout" in self.config.get(section, {}):
                return self.config[section]["timeout"]
        return 30

    def step_dir(self, step):
        """Folder of one nbgrader step: 'source', 'release', 'submitted', 'autograded' or 'feedback'."""
        name = getattr(self._dirs, f"{step}_directory", None)
        if name is None:
            raise ValueError(f"step: unknown nbgrader step {step!r}")
        return self.root / name

    def assignment_dir(self, step, assignment, student="."):
        """Where nbgrader keeps ``assignment`` (of ``student``, for per-student steps) at ``step``."""
        return Path(self._dirs.format_path(str(self.step_dir(step)), student, assignment))

    def assignments(self):
        """Names of the assignments in source/, sorted."""
        source = self.step_dir("source")
        if not source.is_dir():
            return []
        return sorted(p.name for p in source.iterdir() if p.is_dir() and not p.name.startswith("."))

    def translations_dir(self):
        """Where the assignments' language editions live (instructor versions): translations/ASSIGNMENT_LANG/."""
        return self.root / _editions.TRANSLATIONS

    def editions(self, assignment):
        """{language: folder name} of ``assignment``: 'en' (the graded notebook in source/) first, then each
        translation in translations/ (see :mod:`.editions`)."""
        found = {_editions.ENGLISH: assignment}
        for language in _editions.LANGUAGES:
            name = _editions.edition_name(assignment, language)
            if (self.translations_dir() / name).is_dir():
                found[language] = name
        return found

    def graded_name(self, name):
        """(graded assignment, language) of a source, release or exchange name, or None if it is neither."""
        return _editions.split(name, set(self.assignments()))

    def check_assignments(self, assignments):
        """Return ``assignments`` (all of source/ when empty) after checking each exists in source/."""
        known = self.assignments()
        if not assignments:
            if not known:
                raise FileNotFoundError(f"assignments: {self.step_dir('source')} holds no assignment folder")
            return known
        editions = {a: self.graded_name(a) for a in assignments if a not in known and self.graded_name(a)}
        if editions:
            raise ValueError("assignments: " + "; ".join(
                f"{a} is the {language} edition of {graded}, graded, released and collected as {graded}"
                for a, (graded, language) in editions.items()))
        unknown = [a for a in assignments if a not in known]
        if unknown:
            raise ValueError(f"assignments: {unknown} not in {self.step_dir('source')} (known: {known})")
        return list(assignments)

    def notebook_names(self, assignment, step="release"):
        """Stems of the notebooks of ``assignment`` at ``step`` (the names students must hand in)."""
        folder = self.assignment_dir(step, assignment)
        return sorted(p.stem for p in folder.glob("*.ipynb"))

    def api(self, **overrides):
        """An NbGraderAPI on this course; ``overrides`` are 'Class.trait' -> value config entries."""
        use_venv_tools()
        config = copy.deepcopy(self.config)
        config.merge(quiet_kernel_config(self.config))
        config.GenerateFeedback.exporter_class = offline.EXPORTER     # feedback pages complete offline
        for key, value in overrides.items():
            section, trait = key.split(".")
            config[section][trait] = value
        return NbGraderAPI(config=config, log=nbgrader_logger())


def nbgrader_logger():
    """The logger nbgrader writes to: silent except through the handler capture_log adds for each step.

    (The NullHandler also keeps Python's last-resort handler from printing nbgrader's complaint that the
    exchange folder, which this pipeline never uses, does not exist.)
    """
    log = logging.getLogger(NBGRADER_LOGGER)
    log.propagate = False
    if not log.handlers:
        log.addHandler(logging.NullHandler())
    return log


def load_config(root):
    """The course's nbgrader_config.py as a traitlets Config, with the course root fixed to ``root``."""
    config = PyFileConfigLoader(CONFIG_NAME, path=str(root)).load_config()
    config.CourseDirectory.root = str(root)
    return config


def quiet_kernel_config(config):
    """Config adding QUIET_KERNEL to the kernel arguments the course already sets (if any)."""
    arguments = list(config.Execute.get("extra_arguments", []))
    quiet = Config()
    quiet.Execute.extra_arguments = arguments if QUIET_KERNEL in arguments else arguments + [QUIET_KERNEL]
    return quiet


def create_gradebook(db_url):
    """Make the gradebook at ``db_url`` as nbgrader makes a missing one, unless it has tables already.

    nbgrader creates the tables, then stamps the database with its newest migration, which it learns by running
    ``alembic heads`` as a command: a fresh interpreter importing alembic and SQLAlchemy, about 3 s on a 2-core
    machine, before a new course's first grading run can start. Here the same revision is read in this
    process from nbgrader's own migration scripts; nbgrader then finds the database made and stamped.
    """
    from alembic.config import Config as AlembicConfig        # imported for a course's first run only
    from alembic.script import ScriptDirectory

    engine = create_engine(db_url, future=True)
    try:
        if inspect(engine).get_table_names():
            return
        config = AlembicConfig()
        config.set_main_option("script_location", str(Path(nbgrader.__file__).parent / "alembic"))
        head = ScriptDirectory.from_config(config).get_current_head()
        Base.metadata.create_all(bind=engine)
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"))
            connection.execute(text("INSERT INTO alembic_version (version_num) VALUES (:head)"), {"head": head})
    finally:
        engine.dispose()


def use_venv_tools():
    """Put this interpreter's bin/ first on PATH: nbgrader runs the ``alembic`` script to create gradebooks.

    Without it, ``python -m ...`` from an environment that is not activated fails on the first gradebook
    with "No such file or directory: 'alembic'".
    """
    bin_dir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if path.split(os.pathsep)[0] != bin_dir:
        os.environ["PATH"] = bin_dir + os.pathsep + path

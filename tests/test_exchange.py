"""attnkit collect: hand-ins made by nbgrader's own submit are collected; forged owners and times are refused.

The hand-ins are made in a temporary exchange by nbgrader's ExchangeSubmit, in this process, as the user
running the tests (whose name is then the student's). The checks from real students' accounts, on the
course's hub, are in tests_browser/test_exchange_accounts.py (make test-browser, as root).
"""

import datetime
import grp
import json
import logging
import os
import pwd
import shutil
import stat
import sys

import pytest
from nbgrader.api import Gradebook
from nbgrader.apps import NbGraderAPI
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory
from nbgrader.exchange.default.fetch_feedback import ExchangeFetchFeedback
from nbgrader.exchange.default.release_feedback import ExchangeReleaseFeedback
from nbgrader.exchange.default.submit import ExchangeSubmit
from traitlets.config import Config

from attnkit_grader import cli
from attnkit_grader.course import Course, use_venv_tools
from attnkit_grader.exchange import RECORD, TIMESTAMP, collect, read_time, stamp

from conftest import ROOT, copy_course

PS1 = "ps1_learnable_pe"
ME = pwd.getpwuid(os.getuid()).pw_name


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A course copy with ME and someone_else enrolled (made once: a new gradebook costs seconds)."""
    root = copy_course(tmp_path_factory.mktemp("template") / "course")
    use_venv_tools()
    course = Course(root)
    with Gradebook(course.db_url, course.course_id) as gradebook:
        gradebook.add_student(ME)
        gradebook.add_student("someone_else")
    return root


@pytest.fixture
def course(template, tmp_path):
    """The template course, PS1 released to a temporary exchange, and ME's fetched copy of it."""
    course = Course(shutil.copytree(template, tmp_path / "course"))
    exchange = tmp_path / "exchange"
    outbound = exchange / course.course_id / "outbound" / PS1
    shutil.copytree(course.root / "release" / PS1, outbound)
    (exchange / course.course_id / "inbound").mkdir()
    shutil.copytree(course.root / "release" / PS1, tmp_path / "home" / PS1)
    return course, exchange, tmp_path


def submit(tmp_path, exchange, course, student=None, assignment=PS1, factory=ExchangeSubmit):
    """nbgrader submit (``factory``: its submit class) of the fetched ``assignment`` in tmp_path/home; returns
    the hand-in's folder in inbound."""
    config = Config()
    config.Exchange.root = str(exchange)
    config.Exchange.cache = str(tmp_path / "cache")
    config.CourseDirectory.course_id = course.course_id
    config.CourseDirectory.assignment_id = assignment
    if student:
        config.CourseDirectory.student_id = student
    inbound = exchange / course.course_id / "inbound"
    before = set(inbound.iterdir())
    app = factory(coursedir=CourseDirectory(config=config), authenticator=Authenticator(config=config),
                  config=config)
    app.assignment_dir = str(tmp_path / "home")
    app.start()
    (handin,) = set(inbound.iterdir()) - before
    return handin


def rename_time(handin, moment):
    """The hand-in renamed and its timestamp.txt rewritten to ``moment``, as a student can do by hand."""
    student, assignment, _, random = handin.name.split("+")
    text = stamp(moment)
    (handin / TIMESTAMP).write_text(text)
    renamed = handin.with_name(f"{student}+{assignment}+{text}+{random}")
    handin.rename(renamed)
    return renamed


def test_an_honest_handin_is_collected_with_the_file_systems_time(course):
    course, exchange, tmp_path = course
    handin = submit(tmp_path, exchange, course)
    result = collect(course, PS1, exchange)
    assert [h.student for h in result.collected] == [ME] and not result.refused
    target = course.assignment_dir("submitted", PS1, ME)
    assert (target / f"{PS1}.ipynb").read_bytes() == (handin / f"{PS1}.ipynb").read_bytes()
    assert (target / "submission_secret.txt").read_text() == (handin / "submission_secret.txt").read_text()
    written, claimed = read_time(target / TIMESTAMP), read_time(handin / TIMESTAMP)
    assert abs((written - claimed).total_seconds()) < 5
    again = collect(course, PS1, exchange)
    assert not again.collected and [h.student for h in again.kept] == [ME]


def test_submitting_as_another_student_is_refused(course):
    course, exchange, tmp_path = course
    submit(tmp_path, exchange, course, student="someone_else")
    result = collect(course, PS1, exchange)
    assert not result.collected and len(result.refused) == 1
    assert f"owned by {ME}, not by someone_else" in result.refused[0].problems[0]
    assert not course.assignment_dir("submitted", PS1, "someone_else").exists()


@pytest.mark.parametrize("shift", [-3600, 3600], ids=["backdated", "postdated"])
def test_a_handin_whose_time_was_changed_is_refused(course, shift):
    course, exchange, tmp_path = course
    handin = submit(tmp_path, exchange, course)
    moved = rename_time(handin, read_time(handin / TIMESTAMP) + datetime.timedelta(seconds=shift))
    result = collect(course, PS1, exchange)
    assert not result.collected and [h.path for h in result.refused] == [moved]
    assert "backdated, postdated or changed later" in " ".join(result.refused[0].problems)


def test_a_timestamp_file_that_disagrees_with_the_name_is_refused(course):
    course, exchange, tmp_path = course
    handin = submit(tmp_path, exchange, course)
    (handin / TIMESTAMP).write_text("2001-01-01 00:00:00.000000 UTC")
    result = collect(course, PS1, exchange)
    assert not result.collected
    assert any("timestamp.txt says 2001-01-01" in p for p in result.refused[0].problems)


def test_a_handin_changed_after_it_was_made_is_refused(course):
    course, exchange, tmp_path = course
    handin = submit(tmp_path, exchange, course)
    made = read_time(handin / TIMESTAMP)
    notebook = handin / f"{PS1}.ipynb"
    data = notebook.read_bytes()
    # a later write moves the ctime past the stated time; the tolerance is made 0 to see it at once
    os.utime(notebook, (0, 0))
    notebook.write_bytes(data)
    result = collect(course, PS1, exchange, tolerance=0)
    assert not result.collected and result.refused[0].recorded > made


@pytest.mark.parametrize("kind", ["symlink", "hardlink"])
def test_links_inside_a_handin_are_refused(course, kind):
    course, exchange, tmp_path = course
    handin = submit(tmp_path, exchange, course)
    secret = course.root / "source" / PS1 / f"{PS1}.ipynb"
    if kind == "symlink":
        (handin / "solution.ipynb").symlink_to(secret)
    else:
        os.link(tmp_path / "home" / PS1 / f"{PS1}.ipynb", handin / "copy.ipynb")
    result = collect(course, PS1, exchange, tolerance=3600)
    assert not result.collected and "link" in " ".join(result.refused[0].problems)


def test_of_two_handins_the_latest_is_collected_and_replaces_an_older_one(course):
    course, exchange, tmp_path = course
    first = submit(tmp_path, exchange, course)
    assert collect(course, PS1, exchange).collected[0].path == first
    notebook = tmp_path / "home" / PS1 / f"{PS1}.ipynb"
    notebook.write_text(notebook.read_text().replace("YOUR CODE HERE", "second attempt"))
    second = submit(tmp_path, exchange, course)
    result = collect(course, PS1, exchange)
    assert [h.path for h in result.collected] == [second] and not result.refused
    submitted = course.assignment_dir("submitted", PS1, ME) / f"{PS1}.ipynb"
    assert "second attempt" in submitted.read_text()


def test_a_student_not_enrolled_is_refused(course):
    course, exchange, tmp_path = course
    submit(tmp_path, exchange, course)
    result = collect(course, PS1, exchange, owner_name=lambda uid: "stranger" if uid == os.getuid() else "?")
    assert not result.collected
    assert any("owned by stranger" in p for p in result.refused[0].problems)
    with Gradebook(course.db_url, course.course_id) as gradebook:
        gradebook.remove_student(ME)
    result = collect(course, PS1, exchange)
    assert result.refused[0].problems == [f"{ME} is not enrolled in the gradebook"]


@pytest.fixture
def quiet_logger():
    """cli.main gives the grader's logger a handler on this test's captured stderr: take it away after."""
    logger = logging.getLogger("attnkit_grader")
    saved = logger.handlers[:]
    yield
    logger.handlers[:] = saved


def test_the_command_exits_1_when_something_was_refused_and_names_bad_arguments(course, capsys, quiet_logger):
    course, exchange, tmp_path = course
    submit(tmp_path, exchange, course)
    submit(tmp_path, exchange, course, student="someone_else")
    root = ["--root", str(course.root)]
    assert cli.main(root + ["collect", PS1, "--exchange", str(exchange)]) == 1
    out = capsys.readouterr().out
    assert "1 collected" in out and "1 refused" in out and "not by someone_else" in out
    assert cli.main(root + ["collect", PS1]) == 2
    assert "exchange: not given" in capsys.readouterr().err
    assert cli.main(root + ["collect", "ps9", "--exchange", str(exchange)]) == 2
    assert "assignments: ['ps9'] not in" in capsys.readouterr().err
    assert cli.main(root + ["collect", f"{PS1}_zh", "--exchange", str(exchange)]) == 2
    assert f"{PS1}_zh is the zh edition of {PS1}, graded, released and collected as {PS1}" in capsys.readouterr().err
    assert cli.main(root + ["collect", PS1, "--exchange", str(tmp_path / "nowhere")]) == 2
    assert "exchange: no inbound folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(root + ["collect", PS1, "--tolerance", "-1"])
    assert "--tolerance: expected seconds >= 0" in capsys.readouterr().err


def test_junk_in_the_inbound_is_refused_by_name_and_never_stops_the_collection(course):
    course, exchange, tmp_path = course
    handin = submit(tmp_path, exchange, course)
    inbound = handin.parent
    (inbound / f"{ME}+{PS1}").mkdir()                               # no time
    (inbound / f"{ME}+{PS1}+yesterday+x").mkdir()                    # not a time
    (inbound / f"{ME}+{PS1}+{handin.name.split('+')[2]}+file").write_text("a file, not a folder")
    (inbound / f"{ME}+ps2_relative_pe+2026-01-01 00:00:00 UTC+x").mkdir()   # another assignment: not looked at
    result = collect(course, PS1, exchange)
    assert [h.path for h in result.collected] == [handin]
    reasons = {h.path.name[len(ME) + 1:]: " ".join(h.problems) for h in result.refused}
    assert reasons[PS1].startswith("not an nbgrader hand-in name")
    assert "is not a time" in reasons[f"{PS1}+yesterday+x"]
    assert any("not a folder" in reason for reason in reasons.values())
    assert len(result.refused) == 3


def exchange_config(tmp_path, exchange, course, assignment):
    config = Config()
    config.Exchange.root = str(exchange)
    config.Exchange.cache = str(tmp_path / "cache")
    config.CourseDirectory.root = str(course.root)
    config.CourseDirectory.course_id = course.course_id
    config.CourseDirectory.assignment_id = assignment
    return config


def test_a_handin_of_a_language_edition_is_collected_as_the_assignment_and_gets_its_feedback(course):
    """A student of the French edition (ps1_learnable_pe_fr in the exchange) hands in; collect puts it where
    the English one goes (one assignment, one grade table); a later English hand-in replaces it; the feedback
    released for the assignment reaches the French hand-in through nbgrader's own fetch_feedback."""
    course, exchange, tmp_path = course
    french = f"{PS1}_fr"
    shutil.copytree(course.root / "release" / french, exchange / course.course_id / "outbound" / french)
    shutil.copytree(course.root / "release" / french, tmp_path / "home" / french)
    handin = submit(tmp_path, exchange, course, assignment=french)
    result = collect(course, PS1, exchange)
    assert [h.path for h in result.collected] == [handin] and not result.refused
    assert f"collected {ME} (" in result.text() and ", fr edition) from" in result.text()
    submitted = course.assignment_dir("submitted", PS1, ME)
    assert (submitted / f"{PS1}.ipynb").read_bytes() == (handin / f"{PS1}.ipynb").read_bytes()
    assert not course.assignment_dir("submitted", french, ME).exists()

    # the instructor's feedback page for the assignment, released as nbgrader does, fetched for the edition
    feedback = course.step_dir("feedback") / ME / PS1
    feedback.mkdir(parents=True)
    (feedback / f"{PS1}.html").write_text("<p>Votre retour</p>")
    for name in (TIMESTAMP, "submission_secret.txt"):
        shutil.copyfile(submitted / name, feedback / name)
    config = exchange_config(tmp_path, exchange, course, PS1)
    ExchangeReleaseFeedback(coursedir=CourseDirectory(config=config), authenticator=Authenticator(config=config),
                            config=config).start()
    config = exchange_config(tmp_path, exchange, course, french)
    fetch = ExchangeFetchFeedback(coursedir=CourseDirectory(config=config),
                                  authenticator=Authenticator(config=config), config=config)
    fetch.assignment_dir = str(tmp_path / "home")
    fetch.start()
    (page,) = (tmp_path / "home" / french / "feedback").glob(f"*/{PS1}.html")
    assert page.read_text() == "<p>Votre retour</p>"

    english = submit(tmp_path, exchange, course)                          # a later hand-in, in English
    result = collect(course, PS1, exchange)
    assert [h.path for h in result.collected] == [english]
    assert (submitted / f"{PS1}.ipynb").read_bytes() == (english / f"{PS1}.ipynb").read_bytes()


def test_collect_records_the_edition_and_honours_nbgraders_collect_options(course):
    """collect.json says where each collected submission came from; --student, --update (off: what is
    already collected stays) and --before-duedate (the latest hand-in made by the due date) as in nbgrader."""
    course, exchange, tmp_path = course
    first = submit(tmp_path, exchange, course)
    assert not collect(course, PS1, exchange, students={"someone_else"}).collected       # only that student
    (collected,) = collect(course, PS1, exchange).collected
    submitted = course.assignment_dir("submitted", PS1, ME)
    record = json.loads((submitted / RECORD).read_text())
    assert record == {"student": ME, "assignment": PS1, "edition": PS1, "language": "en", "handin": first.name,
                      "time": (submitted / TIMESTAMP).read_text()}
    second = submit(tmp_path, exchange, course)
    kept = collect(course, PS1, exchange, update=False)
    assert not kept.collected and [h.path for h in kept.kept] == [second]
    assert json.loads((submitted / RECORD).read_text())["handin"] == first.name
    with Gradebook(course.db_url, course.course_id) as gradebook:      # due when the first was made
        gradebook.update_or_create_assignment(PS1, duedate=collected.recorded)
    assert collect(course, PS1, exchange).collected[0].path == second
    assert collect(course, PS1, exchange, before_duedate=True).collected[0].path == first     # the one in time
    assert json.loads((submitted / RECORD).read_text())["handin"] == first.name


def nbgrader_api(course, exchange, tmp_path, **classes):
    """nbgrader's API as the Formgrader builds it, with the hub's plugins configured by class name."""
    sys.path.insert(0, str(ROOT / "hub"))
    config = exchange_config(tmp_path, exchange, course, "")
    config.CourseDirectory.assignment_id = ""
    for key, name in classes.items():
        section, trait = key.split(".")
        config[section][trait] = name
    return NbGraderAPI(config=config)


def test_the_formgraders_collect_goes_through_the_checks_and_names_each_refusal(course):
    """The hub's CheckedCollect, called as the Formgrader's Collect button calls it: a hand-in made in
    another's name is refused by name in the dialog's log and never reaches submitted/."""
    course, exchange, tmp_path = course
    honest = submit(tmp_path, exchange, course)
    forged = submit(tmp_path, exchange, course, student="someone_else")
    api = nbgrader_api(course, exchange, tmp_path, **{"ExchangeFactory.collect": "attnkit_hub.CheckedCollect"})
    result = api.collect(PS1)
    assert result["success"], result
    assert "1 collected, 0 already collected, 1 refused" in result["log"]
    assert f"[WARNING] refused {forged.name}, left in the exchange:" in result["log"]
    assert f"[WARNING]     owned by {ME}, not by someone_else (the folder, " in result["log"]
    assert json.loads((course.assignment_dir("submitted", PS1, ME) / RECORD).read_text())["handin"] == honest.name
    assert not course.assignment_dir("submitted", PS1, "someone_else").exists()
    wrong = api.collect(f"{PS1}_fr")
    assert not wrong["success"] and f"collected as {PS1}" in wrong["log"]


def test_the_formgraders_autograde_is_refused_before_nbgrader_touches_a_file(course):
    """The hub's SandboxedGradingOnly stands where nbgrader's Autograde makes its exporter: the Autograde
    button (and nbgrader autograde) fail with a message naming attnkit grade, and the autograded copy the
    sandboxed grader wrote is still there."""
    course, exchange, tmp_path = course
    submit(tmp_path, exchange, course)
    collect(course, PS1, exchange)
    copy = course.assignment_dir("autograded", PS1, ME) / f"{PS1}.ipynb"
    copy.parent.mkdir(parents=True)
    copy.write_text("the sandboxed grader's copy")
    api = nbgrader_api(course, exchange, tmp_path, **{"Autograde.exporter_class": "attnkit_hub.SandboxedGradingOnly"})
    result = api.autograde(PS1, ME)
    assert not result["success"]
    assert f"attnkit grade {PS1}" in result["log"] and "unsandboxed" in result["log"], result["log"]
    assert copy.read_text() == "the sandboxed grader's copy"


@pytest.mark.parametrize("setgid", [True, False], ids=["private", "plain-exchange"])
def test_the_hubs_submit_makes_a_handin_readable_by_its_author_and_the_inbounds_group_only(course, setgid):
    """PrivateSubmit: in an inbound of the instructors' group with the setgid bit, every file of a hand-in is
    0640 and every folder 0750, all of that group; elsewhere nbgrader's modes stay (with a warning), so the
    instructor can still read the hand-in. (The students' own accounts: tests_browser.)"""
    sys.path.insert(0, str(ROOT / "hub"))
    import attnkit_hub
    course, exchange, tmp_path = course
    inbound = exchange / course.course_id / "inbound"
    group = grp.getgrnam("nogroup" if "nogroup" in {g.gr_name for g in grp.getgrall()} else "users").gr_gid
    if setgid:
        os.chown(inbound, -1, group)
        inbound.chmod(0o3733)
    (tmp_path / "home" / PS1 / "data").mkdir()
    (tmp_path / "home" / PS1 / "data" / "notes.txt").write_text("extra file")
    handin = submit(tmp_path, exchange, course, factory=attnkit_hub.PrivateSubmit)
    modes = {p.relative_to(handin).as_posix() or ".": (stat.S_IMODE(p.stat().st_mode), p.stat().st_gid)
             for p in [handin, *handin.rglob("*")]}
    assert {"timestamp.txt", "submission_secret.txt", f"{PS1}.ipynb", "data/notes.txt"} <= set(modes)
    assert not (handin / ".copying").exists()
    if setgid:
        assert all(gid == group and mode in (0o640, 0o750) for mode, gid in modes.values()), modes
        assert modes["."][0] == 0o750 and modes["timestamp.txt"][0] == 0o640
    else:
        assert modes["."][0] == 0o777 and modes["timestamp.txt"][0] == 0o644
    assert [h.path for h in collect(course, PS1, exchange).collected] == [handin]

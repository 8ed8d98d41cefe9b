"""The hub's Formgrader buttons (hub/attnkit_formgrader.py): Collect and Autograde run the kit's commands.

Here without a hub: the answer the formgrader's dialog receives, from a stand-in ``attnkit`` on PATH, and the
routing (the extension's routes answer before nbgrader's). The buttons clicked in Chromium on the course's hub:
tests_browser/test_course_in_browser.py.
"""

import asyncio
import importlib
import stat
import sys

import pytest
from tornado.httputil import HTTPHeaders, HTTPServerRequest, RequestStartLine
from tornado.web import Application

from conftest import ROOT

sys.path.insert(0, str(ROOT / "hub"))
formgrader = importlib.import_module("attnkit_formgrader")
course = importlib.import_module("course")

LONG = ("refused student2+ps1_learnable_pe+2026-11-28 10:00:00.000000 UTC, left in the exchange: owned by "
        "student3, not by student2 (the folder, /opt/attnkit-course/exchange/attention-kit/inbound/...)")


@pytest.fixture
def attnkit(tmp_path, monkeypatch):
    """A stand-in ``attnkit`` first on PATH: prints its arguments and LONG, exits with $STATUS."""
    program = tmp_path / "bin" / "attnkit"
    program.parent.mkdir()
    program.write_text(f'#!/bin/sh\necho "args: $*"\necho "{LONG}"\nexit "${{STATUS:-0}}"\n')
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{program.parent}:/usr/bin:/bin")
    return program


@pytest.mark.parametrize("status", [0, 1])
def test_a_buttons_answer_is_the_command_and_its_output_wrapped_with_no_traceback(attnkit, tmp_path, monkeypatch,
                                                                                     status):
    monkeypatch.setenv("STATUS", str(status))
    reply = asyncio.run(formgrader.answer(tmp_path, "collect", "--", "ps1_learnable_pe"))
    assert set(reply) == {"success", "log"} and reply["success"] is (status == 0)     # no 'error': no traceback
    lines = reply["log"].splitlines()
    assert lines[0] == "$ attnkit collect -- ps1_learnable_pe"
    assert lines[1] == "args: -q collect -- ps1_learnable_pe"
    assert all(len(line) <= formgrader.WIDTH for line in lines), lines
    assert " ".join(line.strip() for line in lines).count("owned by student3, not by student2") == 1
    assert ("(exit status 1)" in reply["log"]) is (status == 1)


def test_without_attnkit_on_path_the_answer_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    reply = asyncio.run(formgrader.answer(tmp_path, "grade", "--student=s1", "--", "ps1_learnable_pe"))
    assert not reply["success"] and "attnkit is not on this server's PATH" in reply["log"].replace("\n", " ")


def test_the_kits_routes_answer_before_the_formgraders_own():
    """jupyter_server loads extensions in alphabetical order (so this one before nbgrader's formgrader) and
    tornado tries routes in the order they were added: Collect and Autograde reach the kit's handlers, every
    other formgrader route nbgrader's."""
    from nbgrader.server_extensions.formgrader import apihandlers
    from jupyter_server.extension.manager import ExtensionManager

    names = course.INSTRUCTOR_EXTENSIONS["server"]
    assert "attnkit_formgrader" in names
    manager = ExtensionManager()
    manager.extensions.update({name: None for name in names})
    assert next(iter(manager.sorted_extensions)) == "attnkit_formgrader"
    app = Application([], base_url="/user/instructor/")

    class Server:
        web_app = app

    formgrader._load_jupyter_server_extension(Server)
    app.add_handlers(".*$", [("/user/instructor" + pattern, handler) for pattern, handler in apihandlers.default_handlers])

    def handler(path):
        request = HTTPServerRequest(start_line=RequestStartLine("POST", path, "HTTP/1.1"),
                                    headers=HTTPHeaders({"Host": "127.0.0.1"}))
        return app.default_router.find_handler(request).handler_class

    base = "/user/instructor/formgrader/api"
    assert handler(f"{base}/assignment/ps1_learnable_pe/collect") is formgrader.Collect
    assert handler(f"{base}/submission/ps1_learnable_pe/student1/autograde") is formgrader.Autograde
    assert handler(f"{base}/assignment/ps1_learnable_pe/release_feedback") is apihandlers.ReleaseAllFeedbackHandler

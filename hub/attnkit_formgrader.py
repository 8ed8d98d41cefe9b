"""The Formgrader's *Collect* and *Autograde* buttons, the kit's way (a Jupyter server extension of the instructor's).

``hub/course.py setup`` installs this module in the course's environment and switches it on in the instructor's
server only, beside nbgrader's formgrader. jupyter_server loads extensions in alphabetical order and tornado
tries their routes in the order they were added, so the two routes below answer before the formgrader's own:

- *Collect* (``POST .../formgrader/api/assignment/A/collect``) runs ``attnkit collect A``: the kit's checks
  (forged owner, backdated or later-changed hand-ins, links), every language edition gathered.
- *Autograde* (``POST .../formgrader/api/submission/A/S/autograde``) runs ``attnkit grade A --student S``: the
  chosen submission graded in the sandbox, through the door, the canary sung first; the reports keep the
  classmates' results (:mod:`attnkit_grader.coursewide`).

Each answer keeps the formgrader's shape, ``{"success": ..., "log": ...}``, so its own dialog shows it: a command
that refuses or fails makes ``success`` false (the dialog then reads "There was an error ..."), never a
traceback; the log is the command line and its output, wrapped to the dialog's width (the dialog shows the log
in a ``<pre>``, which does not wrap). ``nbgrader collect`` and ``nbgrader autograde`` typed in a terminal are
the plugins' of ``attnkit_hub``.
"""

import asyncio
import json
import shlex
import shutil
import textwrap

from jupyter_server.utils import url_path_join
from tornado import web

from nbgrader.server_extensions.formgrader.base import BaseApiHandler, check_notebook_dir, check_xsrf

WIDTH = 64          # characters of the dialog's log panel (Bootstrap 3's 600-pixel modal, 13-pixel monospace)


def wrapped(text, width=WIDTH):
    """``text`` with every line longer than ``width`` broken into lines indented under their first."""
    lines = []
    for line in text.rstrip().splitlines():
        indent = line[:len(line) - len(line.lstrip())]
        lines += textwrap.wrap(line, width, subsequent_indent=indent + "    ", break_on_hyphens=False) or [""]
    return "\n".join(lines)


async def answer(course_root, *arguments):
    """Run ``attnkit -q ARGUMENTS`` in the course folder: the formgrader's answer (see the module)."""
    shown = "$ " + shlex.join(["attnkit", *arguments])
    program = shutil.which("attnkit")
    if program is None:
        return {"success": False, "log": wrapped(f"{shown}\nattnkit is not on this server's PATH: the hub gives "
                                                 f"it to instructors only (hub/jupyterhub_config.py)")}
    process = await asyncio.create_subprocess_exec(
        program, "-q", *arguments, cwd=course_root, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    output, _ = await process.communicate()
    status = "" if process.returncode == 0 else f"\n(exit status {process.returncode})"
    return {"success": process.returncode == 0,
            "log": wrapped(f"{shown}\n{output.decode('utf-8', 'replace').rstrip()}{status}")}


class KitHandler(BaseApiHandler):
    async def reply(self, *arguments):
        if "nbgrader_formgrader" not in self.settings:      # no formgrader in this server: nothing here
            raise web.HTTPError(404)
        self.write(json.dumps(await answer(self.coursedir.root, *arguments)))


class Collect(KitHandler):
    @web.authenticated
    @check_xsrf
    @check_notebook_dir
    async def post(self, assignment_id):
        await self.reply("collect", "--", assignment_id)


class Autograde(KitHandler):
    @web.authenticated
    @check_xsrf
    @check_notebook_dir
    async def post(self, assignment_id, student_id):
        await self.reply("grade", f"--student={student_id}", "--", assignment_id)


ROUTES = [(r"/formgrader/api/assignment/([^/]+)/collect", Collect),
          (r"/formgrader/api/submission/([^/]+)/([^/]+)/autograde", Autograde)]


def _jupyter_server_extension_points():
    return [{"module": "attnkit_formgrader"}]


def _load_jupyter_server_extension(serverapp):
    base = serverapp.web_app.settings["base_url"]
    serverapp.web_app.add_handlers(".*$", [(url_path_join(base, pattern), handler) for pattern, handler in ROUTES])

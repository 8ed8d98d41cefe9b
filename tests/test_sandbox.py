"""The grading sandbox: exchange files read as hostile, the notebook runner, and bubblewrap's isolation and limits.

Fast tests run the runner in this process on benign notebooks and feed the exchange readers hostile files.
The slow ones run hostile notebooks in the sandbox, next to a fake course (source/secret.txt, gradebook.db,
submitted/) that must stay invisible and byte-identical. Sandboxed runs need bubblewrap
(`apt-get install -y bubblewrap`): without it they are skipped, or fail when the CI variable is set.
"""

import hashlib
import json
import os
import re
import pickle
import socket
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

import attnkit
import attnkit_assignments
from attnkit_grader.feedback import translations
from attnkit_grader.isolation import bwrap as sandbox
from attnkit_grader.isolation import notebook_run, seccomp, staging, warm
from attnkit_grader.isolation.notebook_run import remark_message
from attnkit_grader.results import Message
from attnkit_grader.isolation.limits import GiB, Limits, worker_uid
from attnkit_sandbox import channel, remarks, runner
from attnkit_sandbox.cells import EXPECTED, NOTEBOOK, python_source

from conftest import processes_of

TOY_PROBES = '''
from dataclasses import dataclass

import numpy as np


@dataclass
class Probe:
    name: str
    grade_id: str
    function: str

    def run(self, namespace, arrays, params):
        result = namespace[self.function](arrays["x"], **params)
        return {"y": np.asarray(result)}


class Liar:
    name, grade_id = "liar", "test_liar"

    def run(self, namespace, arrays, params):
        return {"y": np.array([object()], dtype=object)}


PROBES = [Probe("square", "test_square", "square"), Probe("scale", "test_scale", "scale"),
          Probe("cube", "test_cube", "cube"), Liar()]
'''

GOOD_CELLS = [
    ("markdown", "# Toy assignment", None),
    ("code", "%matplotlib inline\nimport numpy as np\nimport matplotlib.pyplot as plt", "setup"),
    ("code", "def square(x):\n    return x * x", "square_answer"),
    ("code", "def scale(x, factor=1.0):\n    return x * factor\n\nprint('scaled', scale(2.0, factor=3.0))",
     "scale_answer"),
    ("code", "assert square(3) == 9\nplt.plot([1, 2]);\n__name__", "test_square"),
]


def notebook(cells):
    """A notebook dict from (cell_type, source, grade_id) triples."""
    made = []
    for cell_type, source, grade_id in cells:
        metadata = {"nbgrader": {"grade_id": grade_id, "grade": grade_id.startswith("test"),
                                 "solution": grade_id.endswith("answer")}} if grade_id else {}
        cell = {"cell_type": cell_type, "metadata": metadata, "source": source}
        if cell_type == "code":
            cell.update(outputs=[], execution_count=None)
        made.append(cell)
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": made}


def code(*sources):
    return notebook([("code", source, None) for source in sources])


def write(path, content):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


INPUTS = {"square": {"arrays": {"x": np.arange(5.0)}, "params": {}},
          "scale": {"arrays": {"x": np.arange(3.0)}, "params": {"factor": 2.5}},
          "cube": {"arrays": {"x": np.ones(2)}, "params": {}}}


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A scratch folder with the toy probes module importable (in this process) and the toy inputs."""
    folder = tmp_path / "scratch"
    write(folder / "toy_probes.py", TOY_PROBES)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(__import__("sys").modules, "toy_probes", raising=False)
    channel.write_inputs(folder, INPUTS)
    return folder


def run_here(folder, content, **options):
    """Run the runner in this process on ``content`` (a notebook dict or raw text); return the report."""
    write(folder / NOTEBOOK, content)
    options.setdefault("assignment", "toy")
    return runner.Runner(folder, probes="toy_probes", **options).run()


def cells_by_index(report):
    return {cell["index"]: cell for cell in report["cells"]}


# --- exchange: the parent's readers of what the sandbox wrote --------------------------------------------------

def test_exchange_round_trip_keeps_values_and_dtypes(tmp_path):
    channel.write_inputs(tmp_path, INPUTS)
    read = channel.read_inputs(tmp_path)
    assert read.keys() == INPUTS.keys() and read["scale"]["params"] == {"factor": 2.5}
    np.testing.assert_array_equal(read["square"]["arrays"]["x"], INPUTS["square"]["arrays"]["x"])
    outputs = {"p": {"f": np.arange(6, dtype=">f4").reshape(2, 3), "b": np.array([True, False]),
                     "i": np.int64(7), "fortran": np.asfortranarray(np.arange(6).reshape(2, 3))}}
    channel.write_outputs(tmp_path / "out", outputs)
    back, errors = channel.read_outputs(tmp_path / "out")
    assert errors == {}
    assert back["p"]["f"].dtype == np.float32 and back["p"]["f"].dtype.isnative
    assert back["p"]["b"].dtype == bool and back["p"]["i"].shape == ()
    for key, value in outputs["p"].items():
        np.testing.assert_array_equal(back["p"][key], value)


def test_read_outputs_never_unpickles(tmp_path):
    marker = tmp_path / "unpickled"

    class Bomb:
        def __reduce__(self):
            return (Path.touch, (marker,))

    np.savez(tmp_path / channel.OUTPUTS_NPZ, **{"evil/x": np.array([Bomb()], dtype=object),
                                                 "good/y": np.arange(3)})
    assert pickle.loads(pickle.dumps(Bomb())) is None and marker.exists()   # the bomb is real ...
    marker.unlink()
    outputs, errors = channel.read_outputs(tmp_path)
    assert not marker.exists()                                             # ... and never went off
    assert "evil" not in outputs and "object" in errors["evil"]
    np.testing.assert_array_equal(outputs["good"]["y"], np.arange(3))


@pytest.mark.parametrize("arrays, expected", [
    ({"p/rec": np.zeros(2, dtype=[("a", "f4")])}, "not numeric"),
    ({"p/text": np.array(["secret"])}, "not numeric"),
    ({"p/when": np.array(["2024-01-01"], dtype="datetime64[D]")}, "not numeric"),
    ({"p/big": np.zeros(2**20 + 1, dtype=np.uint8)}, "over the"),
])
def test_read_outputs_rejects_bad_arrays_of_one_probe(tmp_path, arrays, expected):
    np.savez(tmp_path / channel.OUTPUTS_NPZ, **arrays, **{"q/ok": np.ones(2)})
    outputs, errors = channel.read_outputs(tmp_path, max_array_bytes=2**20)
    assert expected in errors["p"] and "p" not in outputs
    np.testing.assert_array_equal(outputs["q"]["ok"], np.ones(2))


@pytest.mark.parametrize("make, expected", [
    (lambda path: path.write_bytes(b"not a zip"), "not a readable"),
    (lambda path: np.savez(path, **{f"p/a{i}": np.zeros(1) for i in range(9)}), "over the limit of 8"),
    (lambda path: np.savez(path, **{"../../etc/x": np.zeros(1)}), "is not 'probe/key.npy'"),
    (lambda path: np.savez(path, plain=np.zeros(1)), "is not 'probe/key.npy'"),
])
def test_read_outputs_rejects_bad_files_whole(tmp_path, make, expected):
    make(tmp_path / channel.OUTPUTS_NPZ)
    outputs, errors = channel.read_outputs(tmp_path, max_arrays=8)
    assert outputs == {} and expected in errors[channel.ANY_PROBE]


def test_read_outputs_checks_the_header_before_reading_data(tmp_path):
    """A member whose header claims a shape its data does not fill is rejected, not read past its end."""
    with zipfile.ZipFile(tmp_path / channel.OUTPUTS_NPZ, "w") as archive:
        header = np.lib.format.header_data_from_array_1_0(np.zeros(1000))
        with archive.open("p/x.npy", "w") as handle:
            np.lib.format.write_array_header_1_0(handle, header)
            handle.write(np.zeros(10).tobytes())
    outputs, errors = channel.read_outputs(tmp_path)
    assert outputs == {} and "header says 8000" in errors["p"]


def test_read_report_bounds_size_and_type(tmp_path):
    write(tmp_path / channel.REPORT_JSON, {"probes": {"p": {"error": "ValueError: bad\nmore"}}})
    assert channel.read_outputs(tmp_path) == ({}, {"p": "ValueError: bad"})
    write(tmp_path / channel.REPORT_JSON, "[1, 2]")
    assert channel.read_report(tmp_path) == {}
    write(tmp_path / channel.REPORT_JSON, json.dumps({"pad": "x" * 200}))
    assert channel.read_report(tmp_path, max_bytes=100) == {}
    write(tmp_path / channel.REPORT_JSON, "[" * 100000)
    assert channel.read_report(tmp_path) == {}


def test_channel_framing_appends_and_stops_at_garbage():
    read, send = os.pipe()
    channel.send_file(send, "progress.jsonl", b'{"cell": 1}\n')
    channel.send_file(send, "progress.jsonl", b'{"cell": 2}\n')
    channel.send_file(send, "report.json", b"{}")
    os.close(send)
    data = os.read(read, 4096)
    os.close(read)
    assert channel.parse_channel(data) == ({"progress.jsonl": b'{"cell": 1}\n{"cell": 2}\n',
                                             "report.json": b"{}"}, None)
    files, problem = channel.parse_channel(data + b"../../x 3\nabc")
    assert "garbled" in problem and set(files) == {"progress.jsonl", "report.json"}
    assert "cut short" in channel.parse_channel(b"report.json 100\n{}")[1]


def test_results_travel_in_memory_and_are_decoded_as_hostile(scratch):
    """With a pipe the runner writes no file: the parent decodes the bytes it sent, and garbage, a cut-short
    archive or an oversized one are reasons, never exceptions."""
    read, send = os.pipe()
    write(scratch / NOTEBOOK, notebook(GOOD_CELLS))
    done = {}
    reader = threading.Thread(target=lambda: done.setdefault("data", b"".join(iter(lambda: os.read(read, 1 << 16), b""))))
    reader.start()
    runner.Runner(scratch, assignment="toy", probes="toy_probes", pipe=send).run()
    os.close(send)
    reader.join()
    os.close(read)
    assert not (scratch / channel.OUT_DIR).exists()
    files, problem = channel.parse_channel(done["data"])
    report = channel.parse_report(files[channel.REPORT_JSON])
    outputs, errors = channel.decode_outputs(files[channel.OUTPUTS_NPZ], report)
    assert problem is None and report["probes"]["square"]["status"] == "ok"
    np.testing.assert_array_equal(outputs["square"]["y"], np.arange(5.0) ** 2)
    assert errors["cube"] == "KeyError: 'cube'"
    npz = files[channel.OUTPUTS_NPZ]
    assert "not a readable .npz" in channel.decode_outputs(b"garbage", {})[1][channel.ANY_PROBE]
    assert channel.ANY_PROBE in channel.decode_outputs(npz[: len(npz) // 2], {})[1]
    assert channel.ANY_PROBE in channel.decode_outputs(npz, {}, max_total_bytes=8)[1]
    assert channel.decode_outputs(None, {"probes": {"p": {"error": "ValueError: bad"}}}) == ({}, {"p": "ValueError: bad"})
    assert channel.parse_report(b"[1, 2]") == {} and channel.parse_report(b"{" * 10) == {}


# --- the runner, in this process ------------------------------------------------------------------------------

def test_runner_runs_cells_in_one_namespace_then_the_probes(scratch):
    report = run_here(scratch, notebook(GOOD_CELLS))
    cells = cells_by_index(report)
    assert report["status"] == "ok" and report["reason"] is None
    assert [c["status"] for c in report["cells"]] == ["ok"] * 4
    assert cells[2]["notes"] == ["skipped %matplotlib"]
    assert cells[4]["stdout"] == "scaled 6.0\n"
    assert cells[5]["result"] == "'__main__'"
    outputs, errors = channel.read_outputs(scratch / "out")
    np.testing.assert_array_equal(outputs["square"]["y"], np.arange(5.0) ** 2)
    np.testing.assert_array_equal(outputs["scale"]["y"], np.arange(3.0) * 2.5)
    assert errors["cube"] == "KeyError: 'cube'"
    assert "dtype object" in errors["liar"]
    assert json.loads((scratch / "out" / channel.REPORT_JSON).read_text())["probes"]["square"]["status"] == "ok"


def test_runner_records_errors_timeouts_and_caps_output_then_goes_on(scratch):
    report = run_here(scratch, code(
        "def square(x):\n    return x * x",
        "x = 1\nraise ValueError('first line\\nsecond line')",
        "while True:\n    pass",
        "import sys\nprint('y' * 100000)\nprint('e' * 10, file=sys.stderr)",
        "raise SystemExit(3)",
        "%%bash\necho never",
        "print('still running', x)",
    ), cell_timeout=0.5, cell_output=1000)
    cells = cells_by_index(report)
    assert cells[2]["status"] == "error" and cells[2]["error"] == "ValueError: first line" and cells[2]["line"] == 2
    assert cells[3]["status"] == "timeout" and 0.4 < cells[3]["seconds"] < 5
    assert len(cells[4]["stdout"]) == 1000 and cells[4]["stdout_bytes"] == 100001
    assert cells[4]["stderr"] == "e" * 10 + "\n"
    assert cells[5]["error"] == "SystemExit: 3"
    assert cells[6]["status"] == "skipped" and "%%bash" in cells[6]["notes"][0]
    assert cells[7]["stdout"] == "still running 1\n"
    assert report["reason"] == {"template": remarks.TIMEOUT, "args": {"index": 3, "grade_id": None, "seconds": 0.5}}
    assert str(remark_message(report["reason"])) == "cell 3 ran over the 0.5 s limit and was interrupted"
    assert "square" in channel.read_outputs(scratch / "out")[0]


def test_runner_skips_cells_on_request_and_bounds_the_output_it_keeps(scratch, monkeypatch):
    monkeypatch.setattr(runner, "REPORT_OUTPUT", 1500)
    report = run_here(scratch, code("print('a' * 999)", "import os\nos._exit(1)", "print('b' * 999)"), skip={2})
    cells = cells_by_index(report)
    assert cells[1]["stdout"] == "a" * 999 + "\n" and "stdout_bytes" not in cells[1]
    assert cells[2]["status"] == "skipped"
    assert cells[3]["stdout"] == "b" * 500 and cells[3]["stdout_bytes"] == 1000


def test_runner_counts_output_in_bytes_and_never_cuts_a_character(scratch, monkeypatch):
    # "é" is 2 bytes, "注意" 6: under the cap in bytes but with fewer characters than bytes -- no warning;
    # over it, the warning gives the byte counts and the kept text ends on a whole character.
    monkeypatch.setattr(runner, "REPORT_OUTPUT", 801 + 601 + 1000 + 999 + 500)
    report = run_here(scratch, code(
        "print('é' * 400)",          # 801 bytes, 401 characters
        "print('注意' * 100)",        # 601 bytes, 201 characters
        "print('é' * 600)",          # 1201 bytes: kept 1000 (500 whole "é")
        "print('注' * 400)",          # 1201 bytes: the cap falls inside a character; 333 kept, 999 bytes
        "print('注' * 400)",          # the report's room is down to 500 bytes: 166 whole characters, 498 bytes
    ), cell_output=1000)
    cells = cells_by_index(report)
    assert cells[1]["stdout"] == "é" * 400 + "\n" and "stdout_bytes" not in cells[1]
    assert cells[2]["stdout"] == "注意" * 100 + "\n" and "stdout_bytes" not in cells[2]
    assert cells[3]["stdout"] == "é" * 500 and cells[3]["stdout_bytes"] == 1201
    assert cells[4]["stdout"] == "注" * 333 and cells[4]["stdout_bytes"] == 1201
    assert cells[5]["stdout"] == "注" * 166 and cells[5]["stdout_bytes"] == 1201
    assert "\ufffd" not in "".join(cell.get("stdout", "") for cell in report["cells"])
    assert str(remark_message(report["reason"])) == "cell 3 wrote 1201 bytes to stdout; only the first 1000 were kept"


def test_capped_stream_keeps_whole_characters_and_nothing_after_a_cut():
    stream = runner.CappedStream(4)
    stream.write("aé注")     # 1 + 2 + 3 bytes: only "aé" fits whole
    stream.write("b")        # room for one byte left, but the stream was cut: "b" is not kept after the gap
    assert stream.text() == "aé" and stream.kept == 3 and stream.total == 7 and stream.truncated


@pytest.mark.parametrize("content, status, reason", [
    ('{"cells": [', "invalid-notebook", "notebook.ipynb is not valid JSON (line 1, column 12"),
    ("", "invalid-notebook", "notebook.ipynb is empty"),
    ('{"worksheets": []}', "invalid-notebook", "notebook.ipynb is JSON but not a notebook (no list of cells)"),
    (b"\xff\xfe{}", "invalid-notebook", "notebook.ipynb is not UTF-8 text (byte 0)"),
])
def test_runner_reports_unreadable_notebooks(scratch, content, status, reason):
    if isinstance(content, bytes):
        (scratch / NOTEBOOK).write_bytes(content)
        report = runner.Runner(scratch, assignment="toy", probes="toy_probes").run()
    else:
        report = run_here(scratch, content)
    assert report["status"] == status and str(remark_message(report["reason"])).startswith(reason)
    assert report["probes"]["square"]["error"].startswith("not run: notebook.ipynb")
    assert channel.read_outputs(scratch / "out")[0] == {}


def test_runner_reports_deleted_retyped_and_duplicated_cells(scratch):
    cells = [("code", "def square(x):\n    return x * x", "square_answer"),
             ("code", "def square(x):\n    return -x", "square_answer"),           # duplicated, later wins
             ("markdown", "def scale(x, factor=1.0):\n    return x * factor", "scale_answer"),   # retyped
             ("markdown", "assert square(2) == 4", "test_square"),                # test cell retyped
             {"no": "cell type"}]
    content = notebook(cells[:4])
    content["cells"].append(cells[4])
    expected = {"square_answer": "code", "scale_answer": "code", "test_square": "code", "test_scale": "code"}
    write(scratch / EXPECTED, {"cells": expected})
    report = run_here(scratch, content)
    said = [str(remark_message(remark)) for remark in report["remarks"]]     # templates and values: worded here
    assert "cell 5 is not a notebook cell (no cell_type); ignored" in said
    assert "cell 1 ('square_answer') appears 2 times (cells 1, 2): duplicated?" in said
    assert "cell 3 ('scale_answer') has cell type markdown; the release has code: retyped?" in said
    assert "cell 4 ('test_square') has cell type markdown; the release has code: retyped?" in said
    assert "cell 'test_scale' of the release is missing: deleted?" in said
    assert report["reason"] == report["remarks"][0]
    for language in ("fr", "zh"):                 # and in the hand-in's language, with no English word left
        translate = translations(language, "ps1_learnable_pe").gettext
        shown = " ".join(remark_message(remark).render(translate) for remark in report["remarks"])
        assert not re.findall(r"\b(?:is|cell|has|appears|times|release|missing|retyped|deleted|ignored|not)\b", shown), shown
    outputs, errors = channel.read_outputs(scratch / "out")
    np.testing.assert_array_equal(outputs["square"]["y"], -np.arange(5.0))
    assert errors["scale"] == "KeyError: 'scale'"


def test_runner_without_release_still_flags_a_retyped_test_cell(scratch):
    report = run_here(scratch, notebook([("markdown", "assert True", "test_square")]))
    assert [str(remark_message(r)) for r in report["remarks"]] == [
        "cell 1 ('test_square'), a test cell, has cell type markdown, not code: retyped?"]


def test_a_cell_type_a_remark_names_is_one_of_the_known_ones(scratch):
    """A notebook may hold any string as a cell type: a remark names it 'other', never the student's text."""
    report = run_here(scratch, notebook([("<b>x</b>", "assert True", "test_square")]))
    assert [str(remark_message(r)) for r in report["remarks"]] == [
        "cell 1 ('test_square'), a test cell, has cell type other, not code: retyped?"]


def test_runner_tolerates_a_missing_probes_module(scratch):
    write(scratch / NOTEBOOK, code("x = 1"))
    report = runner.Runner(scratch, assignment="toy", probes="no_such_probes_module").run()
    assert report["cells"][0]["status"] == "ok"
    assert report["reason"].startswith("probes unavailable (ModuleNotFoundError")


def test_runner_leaves_this_process_as_it_found_it(scratch):
    import sys
    before = (os.getcwd(), sys.stdout, sys.stderr, os.environ.get("MPLBACKEND"))
    run_here(scratch, code("import sys, os\nsys.stdout = None\nos.chdir('/')"), cell_timeout=5)
    assert (os.getcwd(), sys.stdout, sys.stderr, os.environ.get("MPLBACKEND")) == before


def test_python_source_handles_magics_minimally():
    assert python_source("x = 1") == ("x = 1", [])
    assert python_source("%time y = 2\n!ls") == ("y = 2\npass", ["ran the statement of %time", "skipped !ls"])
    assert python_source("%%time\nz = 3")[0] == "z = 3"
    assert python_source("%%writefile a.py\nx")[0] is None
    assert python_source("s = '''\n%d\n'''")[1] == []      # valid Python is never rewritten


# --- staging the packages the sandbox may import -------------------------------------------------------------

def test_staged_tree_holds_the_student_package_the_sandbox_package_and_the_probes_only(tmp_path):
    staging.stage_packages(tmp_path)
    names = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.py")}
    assert {"attnkit/__init__.py", "attnkit/attention.py", "attnkit/checking.py", "attnkit_sandbox/runner.py",
            "attnkit_sandbox/channel.py", "attnkit_sandbox/probing.py", "attnkit_assignments/__init__.py",
            "attnkit_assignments/ps1_learnable_pe/probes/__init__.py",
            "attnkit_assignments/ps2_relative_pe/probes/__init__.py"} <= names
    staged = {name for name in names if name.startswith("attnkit_assignments/")}
    assert all(name.count("/") == 1 or name.endswith("/__init__.py") and name.count("/") == 2 or "/probes/" in name
               for name in staged), "trusted code reached the sandbox"
    assert {name.split("/")[0] for name in names} == {"attnkit", "attnkit_sandbox", "attnkit_assignments"}
    for name in names:                                  # every file staged is a package the sandbox may import
        assert name.startswith(("attnkit/", "attnkit_sandbox/")) or "/probes/" in name or name.endswith("__init__.py")
    for init in tmp_path.glob("attnkit_assignments/**/__init__.py"):
        if init.parent.name != "probes":
            assert "import" not in init.read_text()     # docstrings only above the probes
    compiled = {p.name.split(".")[0] for p in tmp_path.rglob("__pycache__/*.pyc")}    # no sandbox compiles them again
    assert {"__init__", "attention", "runner", "channel", "probing"} <= compiled
    assert [p.name for p in (tmp_path / staging.FONT_CACHE).iterdir()] == [   # nor scans the fonts again
        f"fontlist-v{__import__('matplotlib.font_manager').font_manager.FontManager.__version__}.json"]


def test_every_trusted_file_of_an_assignment_folder_stays_out(tmp_path):
    """Every file of an assignment folder outside probes/ is trusted (no list of names: the folder minus
    probes/), none of them is staged, and a staged tree that holds one is refused."""
    staging.stage_packages(tmp_path)
    root = Path(next(iter(attnkit_assignments.__path__)))
    for folder in (p for p in root.iterdir() if p.is_dir() and (p / "probes").is_dir()):
        trusted = [p for p in folder.iterdir() if p.name not in ("__init__.py", "probes", "__pycache__")]
        assert trusted, f"{folder.name}: no trusted part?"
        for path in trusted:
            assert not (tmp_path / "attnkit_assignments" / folder.name / path.name).exists(), path
    staging.check_staged(tmp_path)
    (tmp_path / "attnkit_assignments" / "ps1_learnable_pe" / "notes.txt").write_text("any file at all")
    with pytest.raises(ValueError, match="holds trusted files \\['notes.txt'\\]"):
        staging.check_staged(tmp_path)


def test_staging_refuses_code_in_an_init_above_the_probes(tmp_path, monkeypatch):
    fake = tmp_path / "assignments"
    (fake / "toy" / "probes").mkdir(parents=True)
    write(fake / "__init__.py", '"""docstring only"""\n')
    write(fake / "toy" / "__init__.py", "from .reference import solution\n")
    write(fake / "toy" / "probes" / "__init__.py", "PROBES = []\n")
    monkeypatch.setattr(attnkit_assignments, "__path__", [str(fake)])
    with pytest.raises(RuntimeError, match="must hold only a docstring"):
        staging.stage_packages(tmp_path / "out")


def test_missing_bubblewrap_says_how_to_install_it(monkeypatch):
    sandbox.unavailable_reason.cache_clear()
    monkeypatch.setattr(sandbox.shutil, "which", lambda name, **where: None)
    try:
        assert not sandbox.available()
        with pytest.raises(sandbox.SandboxUnavailable, match="apt-get install -y bubblewrap libseccomp2"):
            sandbox.check_available()
    finally:
        sandbox.unavailable_reason.cache_clear()


# --- in the sandbox: slow -------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def public_dir(tmp_path_factory):
    reason = sandbox.unavailable_reason()
    if reason:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(reason)
    return staging.stage_packages(tmp_path_factory.mktemp("public"))


@pytest.fixture(scope="session", params=["cold", "warm"])
def box(request, public_dir):
    """Each sandboxed test runs twice: started afresh (bwrap), and forked from a warm zygote (root only)."""
    # A uid no pool slot uses, and one per xdist worker: RLIMIT_NPROC counts all processes of a uid, so a
    # fork bomb in one worker's test must not starve a sandbox that another worker runs at the same time.
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").lstrip("gw") or 0)
    limits = Limits(wall_seconds=60, uid=worker_uid(900 + worker))
    if request.param == "cold":
        yield sandbox.Sandbox(public_dir, limits)
        return
    if not warm.available():
        pytest.skip("warm starts need root")
    launcher = warm.WarmSandbox(public_dir, limits)
    yield launcher
    launcher.close()


@pytest.fixture
def course(tmp_path):
    """A fake course next to the scratch folder: what a hostile notebook would like to read or change."""
    root = tmp_path / "course"
    write(root / "source" / "toy" / "secret.txt", "THE-SOLUTION-IS-42")
    (root / "gradebook.db").write_bytes(b"SQLite format 3\x00 scores")
    write(root / "submitted" / "bob" / "toy" / "toy.ipynb", code("x = 1"))
    return root


def tree_digest(root, skip=()):
    """{relative path: sha256} of every file under ``root`` (except under ``skip`` folders)."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not set(p.relative_to(root).parts) & set(skip)}


def run_boxed(box, course, content, **options):
    """Run ``content`` in the sandbox from course/submitted/alice/toy, scratch course/scratch/alice."""
    submitted = write(course / "submitted" / "alice" / "toy" / "toy.ipynb", content)
    scratch = course / "scratch" / "alice"
    write(scratch / "toy_probes.py", TOY_PROBES)
    options.setdefault("assignment", "toy")
    options.setdefault("probes", "toy_probes")
    return notebook_run.run_notebook(box, submitted, scratch, inputs=INPUTS, **options)


@pytest.mark.slow
def test_sandboxed_runner_matches_the_in_process_one(box, course):
    run = run_boxed(box, course, notebook(GOOD_CELLS + [("code", "import attnkit\nattnkit.__file__", None)]))
    assert run.reason is None and run.result.ok and run.report["status"] == "ok"
    cells = cells_by_index(run.report)
    assert cells[4]["stdout"] == "scaled 6.0\n"
    assert cells[6]["result"] == f"'{sandbox.PUBLIC}/attnkit/__init__.py'"
    outputs, errors = run.outputs, run.errors
    np.testing.assert_array_equal(outputs["scale"]["y"], np.arange(3.0) * 2.5)
    assert set(errors) == {"cube", "liar"}



@pytest.mark.slow
def test_the_runner_prints_attnkits_messages_in_the_hand_ins_language(box, course):
    """The grader passes the hand-in's edition into the sandbox: a check's message is printed in French there,
    as in the student's own kernel; a set_language call in the notebook still wins; none: English."""
    cells = [("code", "import torch\nfrom attnkit.checking import Checks, expect_shape\nchecks = Checks(points=1)\n"
                      "with checks('the shape', 1):\n    expect_shape(torch.zeros(3, 2), (2, 3), 'the output')", None),
             ("code", "import attnkit\nattnkit.set_language('zh')\nprint(attnkit.i18n.language())", None)]
    french = cells_by_index(run_boxed(box, course, notebook(cells), language="fr").report)
    assert "forme attendue (2, 3), obtenue (3, 2)" in french[1]["stdout"] and french[2]["stdout"] == "zh\n"
    english = cells_by_index(run_boxed(box, course, notebook(cells[:1])).report)
    assert "should have shape (2, 3), got (3, 2)" in english[1]["stdout"]
    with pytest.raises(ValueError, match="language"):
        run_boxed(box, course, notebook(cells), language="de")


HOSTILE = {
    "read": "for path in {paths!r}:\n    try:\n        print(open(path).read())\n    except OSError as e:\n"
            "        print(type(e).__name__)",
    "solutions": "import attnkit_assignments.ps2_relative_pe.reference",
    "solutions_on_disk": "import os\nprint(os.path.exists({solutions!r}), os.path.exists({lib!r}))\n"
                         "print(sorted(os.listdir({repository!r})) if os.path.exists({repository!r}) else 'absent')",
    "write": "import errno\nfor path in {targets!r}:\n    try:\n        open(path, 'w').write('pwned')\n"
             "        print('wrote', path)\n    except OSError as e:\n        print(errno.errorcode[e.errno])",
    "network": "import socket\nfor address in [('127.0.0.1', {port}), ('1.1.1.1', 53)]:\n    try:\n"
               "        socket.create_connection(address, timeout=2)\n        print('connected', address)\n"
               "    except OSError as e:\n        print(type(e).__name__)",
    "who": "import os\nprint(os.getuid(), os.getgid(), os.getgroups(), sorted(os.listdir('/')))",
}


@pytest.fixture
def listener():
    """A TCP server on this machine's loopback that records whether anything connected."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    accepted, stop = [], threading.Event()

    def serve():
        while not stop.is_set():
            try:
                accepted.append(server.accept())
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()


@pytest.mark.slow
def test_hostile_notebook_sees_and_changes_nothing_outside_its_scratch(box, course, listener, tmp_path):
    port, accepted = listener
    repository = Path(attnkit.__file__).resolve().parents[2]
    escape = tmp_path / "escaped.txt"
    secrets = [str(course / "source" / "toy" / "secret.txt"), "../../source/toy/secret.txt",
               str(course / "gradebook.db"), str(course / "submitted" / "bob" / "toy" / "toy.ipynb"),
               "/etc/shadow", "/root/.bash_history"]
    targets = [str(course / "gradebook.db"), str(course / "submitted" / "bob" / "toy" / "toy.ipynb"),
               "notebook.ipynb", "/usr/evil", f"{sandbox.PUBLIC}/attnkit/evil.py", str(escape),
               sandbox.__file__, "/scratch/mine.txt"]
    sources = dict(HOSTILE)
    sources["read"] = HOSTILE["read"].format(paths=secrets)
    sources["write"] = HOSTILE["write"].format(targets=targets)
    sources["network"] = HOSTILE["network"].format(port=port)
    sources["solutions_on_disk"] = HOSTILE["solutions_on_disk"].format(
        solutions=str(Path(next(iter(attnkit_assignments.__path__)))), lib=str(repository / "lib"),
        repository=str(repository))
    content = notebook([("code", source, f"hostile_{name}") for name, source in sources.items()])
    write(course / "submitted" / "alice" / "toy" / "toy.ipynb", content)      # as handed in
    before = tree_digest(course, skip=("scratch",))
    run = run_boxed(box, course, content)
    out = {cell["grade_id"]: cell for cell in run.report["cells"]}
    assert out["hostile_read"]["stdout"].split() == ["FileNotFoundError"] * 6
    assert out["hostile_solutions"]["error"] == \
        "ModuleNotFoundError: No module named 'attnkit_assignments.ps2_relative_pe.reference'"
    # the virtual environment is mounted at its own path: when it lives in the repository, that is all of it
    assert out["hostile_solutions_on_disk"]["stdout"] in ("False False\nabsent\n", "False False\n['.venv']\n")
    assert out["hostile_write"]["stdout"].split() == ["ENOENT", "ENOENT", "EROFS", "EROFS", "EROFS", "ENOENT",
                                                      "ENOENT", "wrote", "/scratch/mine.txt"]
    assert out["hostile_network"]["stdout"].split() == ["ConnectionRefusedError", "OSError"] and accepted == []
    uid = box.limits.uid if os.geteuid() == 0 else None
    who = out["hostile_who"]["stdout"]
    assert who.startswith(f"{uid} {uid} []" if uid is not None else "") and "course" not in who
    assert "THE-SOLUTION-IS-42" not in json.dumps(run.report) + run.result.stdout.decode() + run.result.stderr.decode()
    assert tree_digest(course, skip=("scratch",)) == before
    assert not escape.exists()
    assert sorted(p.name for p in (course / "scratch" / "alice").iterdir()) == [
        "inputs.json", "inputs.npz", "notebook.ipynb", "toy_probes.py"]      # results came back in memory


# unshare() in a process of one thread (the runner has more: there it is EINVAL whatever the sandbox does)
UNSHARE_PROBE = ("import ctypes, errno\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                 "for name, flag in (('user', 0x10000000), ('user+mount', 0x10020000)):\n"
                 "    made = libc.unshare(flag) == 0\n"
                 "    print(name, 'made' if made else errno.errorcode[ctypes.get_errno()])")
UNSHARE = (f"import subprocess, sys\nprobe = {UNSHARE_PROBE!r}\n"
           "print(subprocess.run([sys.executable, '-c', probe], capture_output=True, text=True).stdout, end='')\n"
           "done = subprocess.run(['unshare', '--user', '--map-root-user', 'id', '-u'], capture_output=True)\n"
           "print('unshare(1)', done.returncode, done.stdout.decode().strip() or 'nothing')")


@pytest.mark.slow
def test_the_sandbox_cannot_make_a_user_namespace(box, course):
    """In one it would hold every capability: mount, make network namespaces, map uids of its own."""
    run = run_boxed(box, course, code(UNSHARE))
    lines = cells_by_index(run.report)[1]["stdout"].splitlines()
    # EPERM as root (the command is chrooted), ENOSPC in bwrap's own user namespace (--disable-userns)
    refused = "EPERM" if box.as_root else "ENOSPC"
    assert lines[:2] == [f"user {refused}", f"user+mount {refused}"]
    assert lines[2].startswith("unshare(1) ") and lines[2] != "unshare(1) 0 0" and lines[2].endswith("nothing")


# Run in a process of one thread: raw system calls, then what Python and torch need still works.
SYSCALL_PROBE = """import ctypes, errno, os, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
def call(name, *args):
    done = libc.syscall(*args)
    print(name, 'ok' if done >= 0 else errno.errorcode[ctypes.get_errno()])
    return done
class IOVec(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('length', ctypes.c_size_t)]
buffer = ctypes.create_string_buffer(8)
near = IOVec(ctypes.cast(buffer, ctypes.c_void_p), 8)
call('process_vm_readv', 310, os.getpid(), ctypes.byref(near), 1, ctypes.byref(near), 1, 0)
call('add_key', 248, b'user', b'key', b'value', 5, 0xFFFFFFFE)
call('userfaultfd', 323, 1)
call('unshare', 272, 0x20000)
call('clone_newuser', 56, 0x10000000 | 17, 0, 0, 0, 0)
call('clone3', 435, 0, 0)
child = os.fork()
if child == 0:
    os.execv('/bin/sleep', ['sleep', '30'])
call('ptrace_attach', 101, 16, child, 0, 0)
os.kill(child, 9)
os.waitpid(child, 0)
thread = threading.Thread(target=lambda: print('thread ran'))
thread.start()
thread.join()
print(subprocess.run(['echo', 'spawned'], capture_output=True, text=True).stdout.strip())
import numpy, torch
print(torch.arange(4.0).sum().item(), int(numpy.arange(4).sum()))
"""
SYSCALLS = (f"import subprocess, sys\nprobe = {SYSCALL_PROBE!r}\n"
            "print(subprocess.run([sys.executable, '-c', probe], capture_output=True, text=True).stdout, end='')")
REFUSED = ["process_vm_readv EPERM", "add_key EPERM", "userfaultfd EPERM", "unshare EPERM", "clone_newuser EPERM",
           "clone3 ENOSYS", "ptrace_attach EPERM"]
STILL_WORKS = ["thread ran", "spawned", "6.0 6"]


@pytest.mark.slow
def test_system_call_filter_in_the_sandbox(box, course, monkeypatch):
    """Refused with the filter; with none (as on another architecture) the same calls mostly succeed."""
    if seccomp.program() is None:
        pytest.skip(f"no system-call filter on {seccomp.this_machine()}")
    run = run_boxed(box, course, code(SYSCALLS))
    assert run.result.seccomp and run.reason is None
    assert cells_by_index(run.report)[1]["stdout"].splitlines() == REFUSED + STILL_WORKS
    monkeypatch.setattr(seccomp, "program", lambda: None)
    run = run_boxed(box, course, code(SYSCALLS))
    lines = cells_by_index(run.report)[1]["stdout"].splitlines()
    assert not run.result.seccomp and lines[-3:] == STILL_WORKS
    assert "process_vm_readv ok" in lines             # reading its own memory: allowed by the kernel alone


@pytest.mark.slow
def test_fork_bomb_stops_at_the_process_limit(box, course):
    run = run_boxed(box, course, code("import os\nwhile True:\n    os.fork()", "print('after')"))
    cells = cells_by_index(run.report)
    assert cells[1]["error"].startswith("BlockingIOError")
    assert cells[2]["stdout"] == "after\n"
    assert str(run.reason).startswith(f"cell 1 hit the limit of {box.limits.processes} processes and threads")
    assert processes_of(box.limits.uid) == []


PROCESSES = "import os\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))"


@pytest.mark.slow
def test_processes_a_cell_or_probe_leaves_behind_are_gone_before_the_next_step(box, course):
    """Only bubblewrap's init (1) and the runner (2) are left after each cell; threads are counted, not killed."""
    daemons = ("import os, time\nfor _ in range(3):\n    if os.fork() == 0:\n        os.setsid()\n"
               "        while True:\n            time.sleep(1)")
    spinning_bomb = "import os\nwhile True:\n    if os.fork() == 0:\n        while True:\n            pass"
    forking_square = ("import os\ndef square(x):\n    if os.fork() == 0:\n        while True:\n            pass\n"
                      "    return x * x")
    thread = "import threading, time\nthreading.Thread(target=time.sleep, args=(60,), daemon=True).start()"
    niceness = ("import os\nr, w = os.pipe()\nif os.fork() == 0:\n    os.write(w, b'%d' % os.nice(0))\n"
                "    os._exit(0)\nos.wait()\nprint(os.read(r, 10).decode(), os.nice(0))")
    run = run_boxed(box, course, code(daemons, PROCESSES, spinning_bomb, PROCESSES, forking_square, thread,
                                      PROCESSES, niceness))
    cells = cells_by_index(run.report)
    assert cells[1]["killed"] == 3 and cells[2]["stdout"] == "[1, 2]\n"
    # the rest of the limit: the runner and its watchdog thread count too (and bwrap's init, in a user namespace)
    assert cells[3]["processes"] and box.limits.processes - 3 <= cells[3]["killed"] <= box.limits.processes - 2
    assert cells[4]["stdout"] == "[1, 2]\n" and "killed" not in cells[4]
    assert cells[6]["threads"] == 1 and "killed" not in cells[6] and cells[7]["stdout"] == "[1, 2]\n"
    assert cells[8]["stdout"] == "19 0\n"         # a forked child yields the CPU to the runner, not it
    assert run.report["probes"]["square"]["killed"] == 1 and run.report["probes"]["square"]["status"] == "ok"
    np.testing.assert_array_equal(run.outputs["square"]["y"], np.arange(5.0) ** 2)
    assert str(run.reason).startswith(f"cell 3 hit the limit of {box.limits.processes} processes and threads")
    assert processes_of(box.limits.uid) == []


def test_runner_never_kills_other_processes_in_process_or_as_root(scratch):
    child = os.fork()
    if child == 0:
        os.pause()
        os._exit(0)
    try:
        report = run_here(scratch, code("x = 1"))
        assert os.waitpid(child, os.WNOHANG) == (0, 0) and "killed" not in report["cells"][0]
    finally:
        os.kill(child, 9)
        os.waitpid(child, 0)
    if os.geteuid() == 0:
        with pytest.raises(SystemExit, match="--reap: refused as root"):
            runner.main([str(scratch), "--reap"])


@pytest.mark.slow
def test_memory_exhaustion_is_reported_as_the_memory_limit(box, course):
    run = run_boxed(box, course, code("import torch\nx = torch.ones(2**30, dtype=torch.float32)",
                                      "block = bytearray(4 * 2**30)", "print('after')"))
    cells = cells_by_index(run.report)
    assert cells[1]["memory"] and "can't allocate memory" in cells[1]["error"]
    assert cells[2]["memory"] and cells[2]["error"] == "MemoryError"
    assert cells[3]["stdout"] == "after\n"
    assert str(run.reason).startswith("cell 1 ran out of memory (limit 3 GiB): RuntimeError")


@pytest.mark.slow
def test_memory_of_all_processes_together_is_capped_where_cgroups_can_be_made(box, course):
    """Three children of 512 MiB each stay under RLIMIT_AS one by one; the cgroup stops them together."""
    if not box.use_cgroups:
        pytest.skip("this machine lets the grader make no cgroup: only RLIMIT_AS (per process) caps memory")
    children = ("import os, signal, time\nimport numpy as np\npids = []\nfor _ in range(3):\n"
                "    pid = os.fork()\n    if pid == 0:\n        block = np.ones(2**29, dtype=np.uint8)\n"
                "        time.sleep(60)\n    pids.append(pid)\n_, status = os.wait()\n"
                "print('a child ended by signal', os.WTERMSIG(status))\nfor pid in pids:\n"
                "    os.kill(pid, signal.SIGKILL)")
    limits = Limits(total_memory=GiB, uid=box.limits.uid)
    run = run_boxed(box, course, code(children), limits=limits, cell_timeout=60)
    assert run.result.oom_killed and run.result.cgroup in ("v1", "v2")
    assert cells_by_index(run.report)[1]["stdout"] == "a child ended by signal 9\n"
    assert str(run.reason) == "one of its processes was killed: its processes together went over the memory limit of 1 GiB"
    assert not list(Path("/sys/fs/cgroup").glob(f"**/*sandbox-{os.getpid()}-*"))     # removed after the run


@pytest.mark.slow
def test_endless_loop_is_interrupted_and_the_next_cell_runs(box, course):
    run = run_boxed(box, course, code("def square(x):\n    return x * x", "while True:\n    pass", "print('after')"),
                    cell_timeout=1)
    cells = cells_by_index(run.report)
    assert cells[2]["status"] == "timeout" and cells[3]["stdout"] == "after\n"
    assert str(run.reason) == "cell 2 ran over the 1 s limit and was interrupted"
    assert "square" in run.outputs


@pytest.mark.slow
def test_loop_that_swallows_the_interrupt_ends_the_run_with_a_reason(box, course):
    stubborn = "import time\nwhile True:\n    try:\n        time.sleep(10)\n    except BaseException:\n        pass"
    run = run_boxed(box, course, code("x = 1", stubborn, "print('never')"), cell_timeout=1, grace=1)
    assert str(run.reason) == "cell 2 ran over the 1 s limit and ignored the interrupt; the run was stopped"
    assert run.report["status"] == "crashed" and [c["index"] for c in run.report["cells"]] == [1]


@pytest.mark.slow
def test_code_holding_the_interpreter_meets_the_wall_clock(box, course):
    """sum() over a long range holds the GIL in C: no signal handler, no watchdog thread gets to run."""
    stuck = "sum(range(10**11))"
    limits = Limits(wall_seconds=8, uid=box.limits.uid)
    run = run_boxed(box, course, code("x = 1", stuck), cell_timeout=1, grace=1, limits=limits)
    assert run.result.timed_out and 8 <= run.result.seconds < 15
    assert str(run.reason) == ("stopped at the wall-clock limit of 8 s (an endless loop, or a blocked process?) "
                          "during cell 2")
    assert processes_of(box.limits.uid) == []


@pytest.mark.slow
def test_output_flood_outside_the_cells_capture_stops_the_run(box, course):
    run = run_boxed(box, course, code("print('y' * 10**7)", "import os\nwhile True:\n    os.write(1, b'x' * 65536)"))
    assert cells_by_index(run.report)[1]["stdout_bytes"] == 10**7 + 1
    assert run.result.output_exceeded and len(run.result.stdout) <= box.limits.output
    assert str(run.reason) == "stopped: wrote more than 1 MiB to stdout/stderr outside the captured cells during cell 2"


@pytest.mark.slow
@pytest.mark.parametrize("crash, reason", [
    ("import os\nos._exit(3)", "the process ended with exit status 3 (os._exit?) during cell 2"),
    ("import os\nos._exit(255)", "the process ended with exit status 255 (os._exit?) during cell 2"),
    ("import os, signal\nos.kill(os.getpid(), signal.SIGRTMIN + 2)", "ended by signal 36 during cell 2"),
    ("import ctypes\nctypes.string_at(0)", "crashed: segmentation fault (SIGSEGV) during cell 2"),
])
def test_interpreter_crash_gives_a_reason_and_the_cells_before(box, course, crash, reason):
    run = run_boxed(box, course, code("print('before')", crash, "print('never')"))
    assert str(run.reason) == reason
    assert run.report["status"] == "crashed" and run.report["cells"][0]["stdout"] == "before\n"
    assert (run.outputs, run.errors) == ({}, {})


# --- the runner's remarks: data from the sandbox, worded by the grader ------------------------------------------

def test_a_remark_of_the_runner_reads_in_the_hand_ins_language_with_no_english_word_left():
    sent = [remarks.remark(remarks.TIMEOUT, 5, "pe_answer", seconds=30.0),
            remarks.remark(remarks.MEMORY_LIMIT, 3, None, gib=3.0, error="MemoryError"),
            remarks.remark(remarks.PROCESSES, 2, None, count=64, error="BlockingIOError: no more"),
            remarks.remark(remarks.STILL_RUNNING, 4, None, count=2),
            remarks.remark(remarks.KILLED, 4, None, count=2),
            remarks.remark(remarks.CUT, 6, "test_index", total=30000, stream="stdout", kept=20000)]
    english = [str(remark_message(data)) for data in sent]
    assert english[0] == "cell 5 ('pe_answer') ran over the 30 s limit and was interrupted"
    assert english[5] == "cell 6 ('test_index') wrote 30000 bytes to stdout; only the first 20000 were kept"
    words = ("cell", "ran", "over", "limit", "memory", "processes", "left", "grader", "wrote", "bytes", "first",
             "kept", "killed", "interrupted")
    for language in ("fr", "zh"):
        translate = translations(language, "ps1_learnable_pe").gettext
        for data in sent:
            shown = remark_message(data).render(translate)
            left = [w for w in words if re.search(rf"\b{w}\b", shown.replace("MemoryError", ""))]
            assert not left, (language, shown, left)
    assert "cellule 5 («\u00a0pe_answer\u00a0») a dépassé" in remark_message(sent[0]).render(
        translations("fr", "ps1_learnable_pe").gettext)


@pytest.mark.parametrize("forged", [
    {"template": "{cell} owns you: {x}", "args": {"index": 1, "grade_id": None, "x": 1}},     # not the runner's
    {"template": remarks.KILLED, "args": {"index": 1, "grade_id": None, "count": 2, "extra": "<script>"}},
    {"template": remarks.KILLED, "args": {"index": 1, "grade_id": None}},                       # an argument short
    {"template": remarks.KILLED, "args": {"index": 1, "grade_id": None, "count": {"template": "{x}"}}},
    {"template": remarks.KILLED, "args": {"index": True, "grade_id": None, "count": 2}},
    {"template": remarks.KILLED, "args": {"index": 1, "grade_id": "x')" + "y" * 100, "count": 2}},
    {"template": remarks.CUT, "args": {"index": 1, "grade_id": None, "total": 9, "stream": "/etc/passwd", "kept": 1}},
    {"template": remarks.TIMEOUT, "args": {"index": 1, "grade_id": None, "seconds": float("nan")}},
    {"template": remarks.KILLED, "args": {"index": 1, "grade_id": None, "count": 2}, "more": 1},
    "cell 1 says hello",
])
def test_a_remark_the_runner_never_makes_is_never_shown(forged):
    shown = remark_message(forged)
    assert shown.template == notebook_run.UNREADABLE_REMARK and not shown.args


def test_a_long_or_multiline_error_in_a_remark_is_one_clipped_printable_line():
    shown = str(remark_message(remarks.remark(remarks.MEMORY, 1, None, error="A\x1b[31m" + "b" * 900 + "\nsecond")))
    assert "\n" not in shown and "\x1b" not in shown and len(shown) < 400 and "second" not in shown


def test_how_a_run_ended_reads_in_the_hand_ins_language_and_names_only_cells_it_can_check():
    stuck = Message.make(notebook_run.STUCK, step=notebook_run.cell_message(2, "test_x"), seconds=1.0)
    crashed = Message.make(notebook_run.CRASHED_DURING, step=Message.make(notebook_run.PROBE, name="square"))
    assert str(stuck) == "cell 2 ('test_x') ran over the 1 s limit and ignored the interrupt; the run was stopped"
    assert str(crashed) == "the run ended before the grader's report was written during probe square"
    for language in ("fr", "zh"):
        translate = translations(language, "ps1_learnable_pe").gettext
        for shown in (stuck.render(translate), crashed.render(translate)):
            assert not re.search(r"\b(cell|ran|over|limit|ignored|stopped|run|ended|report|written|probe)\b",
                                 shown), (language, shown)
    for index, grade_id in (("2", None), (True, None), (0, None), (2, "a')"), (2, 7)):   # as the sandbox could send
        assert notebook_run.cell_message(index, grade_id).template == notebook_run.UNKNOWN_STEP


def _ended(**fields):
    return sandbox.SandboxResult(True, **{"exit_code": 1, "signal": None, **fields})


@pytest.mark.parametrize("result", [
    _ended(signal=11), _ended(signal=9), _ended(signal=24), _ended(signal=6), _ended(signal=40), _ended(),
    _ended(timed_out=True), _ended(output_exceeded=True), _ended(channel_exceeded=True),
    sandbox.SandboxResult(False, stderr=b"bwrap: No permissions to create new namespace"),
], ids=["SIGSEGV", "SIGKILL", "SIGXCPU", "SIGABRT", "real-time", "status", "wall", "output", "channel", "start"])
def test_why_a_run_ended_is_worded_in_the_hand_in_s_language(result):
    """The sandbox's exit reasons are message ids: English for the logs, French and Chinese on the feedback page,
    the same after the door's JSON (a door's reply carries its reason as a message, not as English text)."""
    from attnkit_grader.isolation import door, reasons

    why = reasons.exit_reason(result, Limits())
    assert isinstance(why, Message) and str(why)
    result.reason = why
    assert door.parse_reply(door.result_frames(result)).reason == why
    words = ("stopped", "killed", "crashed", "ended", "limit", "wrote", "sent", "results", "sandbox", "could",
             "not", "start", "status", "process", "memory", "the", "of", "or")    # "signal", "machine": French too
    for language in ("fr", "zh"):
        shown = why.render(translations(language).gettext)
        english = [w for w in words if re.search(rf"\b{w}\b", shown.replace("bwrap: No permissions to create new "
                                                                              "namespace", ""))]
        assert not english, (language, shown, english)

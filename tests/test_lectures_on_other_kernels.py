"""The lectures' committed outputs do not depend on which CPU kernels PyTorch, MKL and NumPy pick.

`make test` validates the lectures with nbval on this machine's own kernels. A CPU with other vector
instructions runs other kernels, which add the same numbers in other orders; an output that depends on
the last bits then fails nbval there (it did: a trained accuracy printed 0.88 here and 0.89 on a Xeon).
These tests run nbval again, in a fresh process, with the kernels forced down to other instruction sets
and other thread counts, and compare every output with the committed one exactly as nbval does.

`make test` runs the two combined settings below (each instruction-set variable at its low or middle
value together, plus 1 or 2 threads), one per core. `make test-lectures-all` runs every variable alone
(LECTURE_KERNELS=all). These are marked `kernels`, so the main pytest run leaves them out.
"""

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]

# ATEN_CPU_CAPABILITY: ATen's own vectorised kernels (softmax, element-wise, reductions).
# MKL_ENABLE_INSTRUCTIONS / MKL_CBWR: the code path of MKL's GEMMs (every nn.Linear, bmm, matmul).
# ONEDNN_MAX_CPU_ISA: oneDNN (convolutions, where PyTorch routes them there).
# NPY_DISABLE_CPU_FEATURES: NumPy's SIMD dispatch (lecture 1 computes in NumPy first).
# OMP_NUM_THREADS / MKL_NUM_THREADS: how reductions are split between threads.
COMBINED = {
    "sse4.2, 1 thread": {
        "ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "MKL_CBWR": "COMPATIBLE",
        "ONEDNN_MAX_CPU_ISA": "SSE41", "NPY_DISABLE_CPU_FEATURES": "X86_V3,X86_V4,AVX512_ICL",
        "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
    "avx2, 2 threads": {
        "ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2",
        "NPY_DISABLE_CPU_FEATURES": "X86_V4,AVX512_ICL", "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"},
}
ONE_AT_A_TIME = {
    "ATEN_CPU_CAPABILITY=default": {"ATEN_CPU_CAPABILITY": "default"},
    "ATEN_CPU_CAPABILITY=avx2": {"ATEN_CPU_CAPABILITY": "avx2"},
    "MKL_ENABLE_INSTRUCTIONS=AVX2": {"MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    "MKL_ENABLE_INSTRUCTIONS=SSE4_2": {"MKL_ENABLE_INSTRUCTIONS": "SSE4_2"},
    "1 thread": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
    "2 threads": {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"},
}
SETTINGS = {**COMBINED, **ONE_AT_A_TIME} if os.environ.get("LECTURE_KERNELS") == "all" else COMBINED
# Variables of the machine that would change what the settings above mean.
CLEARED = ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA",
           "DNNL_MAX_CPU_ISA", "NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES", "OMP_NUM_THREADS",
           "MKL_NUM_THREADS", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_TESTRUNUID")


def nbval(variables, folder=ROOT / "course"):
    """Run nbval over the notebooks directly in ``folder`` (the English lectures: the translations are the
    same programs, which tests/test_translations.py holds them to) in a fresh process with ``variables``
    set; (exit status, report)."""
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env.update(variables)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
               "--nbval", "--nbval-current-env", *sorted(str(p) for p in folder.glob("*.ipynb"))]
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=900)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.kernels
@pytest.mark.parametrize("setting", list(SETTINGS))
def test_lecture_outputs_are_the_same_on_other_kernels(setting):
    status, report = nbval(SETTINGS[setting])
    assert status == 0 and " passed" in report, (
        f"with {SETTINGS[setting]} a lecture output differs from the committed one: print only what the "
        f"kernels cannot change (see tests/{Path(__file__).name}).\n{report[-6000:]}")


@pytest.mark.kernels
def test_the_check_fails_when_an_output_depends_on_the_setting(tmp_path):
    """A notebook printing its thread count, executed with 2 threads, must fail nbval with 1 thread."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import torch\nprint('threads:', torch.get_num_threads())")])
    os.environ["OMP_NUM_THREADS"], saved = "2", os.environ.get("OMP_NUM_THREADS")
    try:
        NotebookClient(notebook, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        os.environ.pop("OMP_NUM_THREADS") if saved is None else os.environ.__setitem__("OMP_NUM_THREADS", saved)
    assert "threads: 2" in notebook.cells[0].outputs[0]["text"]
    nbformat.write(notebook, tmp_path / "threads.ipynb")
    assert nbval({"OMP_NUM_THREADS": "2"}, tmp_path)[0] == 0
    status, report = nbval({"OMP_NUM_THREADS": "1"}, tmp_path)
    assert status != 0 and "threads: 1" in report

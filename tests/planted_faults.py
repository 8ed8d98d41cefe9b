"""Faults planted in the sandbox's environment, for the canary's tests (tests/test_canary.py): each one a
``sitecustomize.py`` written into the staged packages' folder, which is first on the sandbox's PYTHONPATH, so
every sandboxed interpreter (a cold run, a warm zygote, a door's) runs it at start-up, before any cell.

    plant(public_dir, fault)        write FAULTS[fault] there
    staged_with(fault)              a stand-in for attnkit_grader.isolation.staging.stage_packages that stages
                                    the packages, then plants ``fault`` (monkeypatch it in, or import it in a
                                    door's or a worker's process)

Nothing here is imported by the kit: a fault exists only in a test's staged copy.
"""

from pathlib import Path

FAULTS = {
    # a module the notebooks and the probes import is missing from the sandbox (as if unstaged or uninstalled)
    "missing_module": '''
import sys


class _Hidden:
    def find_spec(self, name, path=None, target=None):
        if name == "attnkit.checking":
            raise ModuleNotFoundError("No module named 'attnkit.checking'", name=name)
        return None


sys.meta_path.insert(0, _Hidden())
''',
    # a numeric function off by 1e-3 (a changed package or kernel, made visible)
    "softmax_off": '''
import torch

_softmax = torch.softmax


def _off(*args, **kwargs):
    return _softmax(*args, **kwargs) + 1e-3


torch.softmax = _off
torch.Tensor.softmax = lambda self, *args, **kwargs: _off(self, *args, **kwargs)
''',
    # torch's default dtype changed
    "float64": '''
import torch

torch.set_default_dtype(torch.float64)
''',
}


def plant(public_dir, fault):
    """Write the ``fault``'s sitecustomize.py into the staged packages' folder ``public_dir``."""
    path = Path(public_dir) / "sitecustomize.py"
    path.write_text(FAULTS[fault], encoding="utf-8")
    path.chmod(0o644)
    return path


def staged_with(fault):
    """stage_packages, then the ``fault`` planted in what it staged."""
    from attnkit_grader.isolation import staging

    original = staging.stage_packages

    def stage_packages(dest):
        staged = original(dest)
        plant(staged, fault)
        return staged

    return stage_packages

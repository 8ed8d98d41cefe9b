"""What the sandbox may import: whole packages, staged into one read-only folder per batch.

The sandbox sees this folder at /opt/attnkit, first on its PYTHONPATH, and none of the kit's source tree:
- ``attnkit``: the student package (the notebooks import it, the probes use its helpers);
- ``attnkit_sandbox``: the runner, the channel format and the probe machinery;
- of ``attnkit_assignments``, each assignment's ``probes/`` package only, under ``__init__`` files that
  hold a docstring and nothing else. The trusted part of an assignment folder (reference, checks,
  inputs, hidden) never reaches the sandbox: a test reads the staged tree.
What may enter is decided by these package boundaries, not by file names or by scanning imports.
"""

import ast
import compileall
import importlib.util
import logging
import shutil
import sys
from pathlib import Path

from attnkit_sandbox.installed import PACKAGE as ASSIGNMENTS, PROBES, assignments

log = logging.getLogger(__name__)

FONT_CACHE = "_matplotlib"           # in the staged folder: matplotlib's font list, bound into MPLCONFIGDIR


def stage_packages(dest):
    """Copy the packages the sandbox needs into ``dest`` (see the module's docstring); return ``dest``, the
    folder to put on PYTHONPATH. Do it once per batch.

    Two things only save time: the modules are compiled (the sandbox, whose /opt is read-only and which
    writes no bytecode, would compile them again in every run), and matplotlib's font list is written to
    ``dest``/FONT_CACHE (see :func:`write_font_cache`).
    """
    dest = Path(dest)
    for package in ("attnkit", "attnkit_sandbox"):
        _copy_package(package_dir(package), dest / package)
    root = package_dir(ASSIGNMENTS)
    _copy_docstring_only(root / "__init__.py", dest / ASSIGNMENTS / "__init__.py")
    for name in assignments(root):
        _copy_docstring_only(root / name / "__init__.py", dest / ASSIGNMENTS / name / "__init__.py")
        _copy_package(root / name / PROBES, dest / ASSIGNMENTS / name / PROBES)
    compileall.compile_dir(str(dest), quiet=1, force=True)       # this interpreter's bytecode, as the sandbox's
    for path in dest.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    dest.chmod(0o755)
    write_font_cache(dest / FONT_CACHE)
    return dest


def check_staged(dest):
    """Raise ValueError unless every assignment folder staged in ``dest`` holds its docstring-only
    ``__init__.py`` and its ``probes/`` and nothing else: the rest of an assignment's folder is trusted."""
    root = Path(dest) / ASSIGNMENTS
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and p.name != "__pycache__") if root.is_dir() else ():
        extra = sorted(p.name for p in folder.iterdir() if p.name not in ("__init__.py", PROBES, "__pycache__"))
        if extra:
            raise ValueError(f"public_dir: {folder} holds trusted files {extra}; stage the packages again")


def package_dir(name):
    """The folder of the installed package ``name``, found without importing it (the student package imports
    torch, which the root side of a :mod:`.door` has no use for)."""
    module = sys.modules.get(name)
    if module is not None:
        return Path(next(iter(module.__path__)))
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"package {name!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def _copy_package(source, target):
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def _copy_docstring_only(source, target):
    """Copy an ``__init__.py`` that holds a docstring or nothing; refuse one with code (RuntimeError)."""
    text = source.read_text(encoding="utf-8") if source.is_file() else ""
    body = ast.parse(text).body
    if body and not (len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)):
        raise RuntimeError(f"{source}: an __init__ staged above an assignment's probes must hold only a docstring")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def write_font_cache(folder):
    """matplotlib's font list (fontlist-vNNN.json, as matplotlib caches it) in ``folder``, or nothing.

    Each sandbox starts with an empty MPLCONFIGDIR, where matplotlib would scan the fonts and write this
    file again (about 0.1 s of CPU per submission); the sandbox gets this copy read-only there instead.
    The list is this process's (fonts under /usr and matplotlib's own, at the same paths in the sandbox).
    """
    try:
        from matplotlib import font_manager
        folder.mkdir(exist_ok=True)
        folder.chmod(0o755)
        path = folder / f"fontlist-v{font_manager.FontManager.__version__}.json"
        font_manager.json_dump(font_manager.fontManager, path)
        path.chmod(0o644)
        return path
    except Exception as error:  # noqa: BLE001 - only time is at stake: each sandbox builds its own list
        log.info("no matplotlib font list for the sandbox: %s", error)
        return None

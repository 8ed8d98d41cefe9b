"""The docstrings and comments of lib/ name only modules, functions and attributes that exist.

A module renamed or removed leaves its old name in the prose that pointed at it (``judges.make_inputs``
after make_inputs moved to the registry); a reader then looks for what is gone. The rule, for the text of
every docstring and comment in lib/:

- a dotted name is a claim about the kit when it starts with one of the kit's packages
  (``attnkit_grader.judging.engine``), with a dot (``.in_kernel``: relative to the module, as an import),
  or with a name that is a module of the kit or the alias a module of the kit is imported under anywhere in
  lib/ (``registry.make_inputs``, ``judges.judge``); such a name must import, then each further part must
  be an attribute of what came before (for a class, also an attribute its methods assign to ``self`` or a
  dataclass field);
- the target of a Sphinx role (``:func:`judge```, ``:mod:`.in_kernel```) is a claim too, a bare name being
  looked up in the module itself (or its class);
- file names (``checks.py``, ``outputs.npz``) and names that start with anything else (``torch.Tensor``,
  a local variable such as ``spec.hint``) are not checked;
- a link into the course guide, a path ``site/pages/LANG/...md`` with or without ``#anchor`` (docstrings
  link to the guide instead of restating it), must name a page of the repository and one of its headings.
Run as a script to list every claim it checked: ``.venv/bin/python tests/test_docstring_references.py``.
"""

import ast
import importlib
import inspect
import io
import re
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "site"))
from linkcheck import markdown_target_problem  # noqa: E402  (a module of site/, not a package)
from test_layout import PACKAGES, modules  # noqa: E402  (a test module of this folder, not a package)

# A dotted name standing alone (not inside a path, a URL or a longer dotted name).
DOTTED = re.compile(r"(?<![\w./<>-])\.?[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?![\w/-])")
GUIDE_LINK = re.compile(r"site/pages/[\w/.-]+?\.md(?:#[\w-]+)?")
ROLE = re.compile(r":(?:mod|func|class|meth|attr|data|exc|obj):`~?(\.?[A-Za-z_][\w.]*)`")
# Name parts that make a dotted name a file name, not a module path.
FILE_SUFFIXES = {"py", "ipynb", "json", "jsonl", "csv", "txt", "png", "html", "md", "npz", "toml", "yml", "yaml",
                 "so", "db", "cfg", "sh", "js", "old", "tar", "gz", "zip", "whl"}


def texts(path):
    """[(line, text)]: every docstring and comment of the file."""
    source = path.read_text(encoding="utf-8")
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node, clean=False)
            if docstring:
                found.append((node.body[0].lineno, docstring, node.name if isinstance(node, ast.ClassDef) else None))
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found.append((token.start[0], token.string, None))
    return found


def module_aliases(known):
    """{name: {kit module}}: each kit module under its own last name and under every alias lib/ imports it as."""
    aliases = {}
    for name in known:
        aliases.setdefault(name.rpartition(".")[2], set()).add(name)
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(parent + ([base] if base else []))
                for alias in node.names:
                    if f"{base}.{alias.name}" in known:
                        aliases.setdefault(alias.asname or alias.name, set()).add(f"{base}.{alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and alias.name in known:
                        aliases.setdefault(alias.asname, set()).add(alias.name)
    return aliases


def _attribute(value, part):
    """``value.part`` if it exists; for a class, also an attribute its code assigns to ``self`` or declares."""
    if isinstance(value, type):
        for cls in value.__mro__:
            if part in vars(cls) or part in getattr(cls, "__annotations__", {}):
                return getattr(value, part, cls)
            try:
                if re.search(rf"\bself\.{re.escape(part)}\s*(?::[^=\n]*)?=(?!=)", inspect.getsource(cls)):
                    return cls
            except (OSError, TypeError):
                pass
    if hasattr(value, part):
        return getattr(value, part)
    if inspect.ismodule(value):
        try:
            return importlib.import_module(f"{value.__name__}.{part}")
        except ImportError:
            pass
    raise AttributeError(part)


def resolves(start, parts):
    """Whether ``start.parts[0].parts[1]...`` exists."""
    value = start
    for part in parts:
        try:
            value = _attribute(value, part)
        except AttributeError:
            return False
    return True


def resolve_absolute(name):
    """Whether the dotted ``name`` is a module of the kit, or an attribute of one, that imports."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        return resolves(module, parts[cut:])
    return False


def claims(module_name, path, aliases):
    """[(line, name, where it must resolve: a callable returning True when it does)] for one module."""
    package = module_name if path.name == "__init__.py" else module_name.rpartition(".")[0]
    module = importlib.import_module(module_name)
    found = []

    def relative(name):
        level = len(name) - len(name.lstrip("."))
        base = package.split(".")[:len(package.split(".")) - level + 1]
        return ".".join(base + [name.lstrip(".")])

    def check(name, cls_name):
        head, *rest = name.split(".")
        if name.startswith("."):
            return resolve_absolute(relative(name))
        if head in PACKAGES:
            return resolve_absolute(name)
        if hasattr(module, head):
            return resolves(getattr(module, head), rest)
        if cls_name and resolves(getattr(module, cls_name, None), [head]):
            return resolves(getattr(getattr(module, cls_name), head), rest)
        return any(resolve_absolute(".".join([target, *rest])) for target in aliases.get(head, ())) \
            or resolve_absolute(name)           # a role's target outside the kit (nbgrader.api.Gradebook)

    for line, text, cls_name in texts(path):
        names = {(match.start(1), match.group(1)) for match in ROLE.finditer(text)}
        for match in DOTTED.finditer(text):
            name = match.group()
            parts = name.lstrip(".").split(".")
            if FILE_SUFFIXES & set(parts[1:]):
                continue
            if name.startswith(".") or parts[0] in PACKAGES or parts[0] in aliases:
                names.add((match.start(), name))
        found += [(line + text.count("\n", 0, start), name, check(name, cls_name)) for start, name in sorted(names)]
        found += [(line + text.count("\n", 0, match.start()), match.group(),
                   markdown_target_problem(match.group(), ROOT, ROOT) is None) for match in GUIDE_LINK.finditer(text)]
    return found


def every_claim():
    known = {name: path for name, path in modules().items() if not name.endswith("__main__")}
    aliases = module_aliases(known)
    return [(path, line, name, ok) for module_name, path in sorted(known.items())
            for line, name, ok in claims(module_name, path, aliases)]


def test_docstrings_and_comments_name_modules_and_attributes_that_exist():
    found = every_claim()
    assert len(found) > 50, "the scan found almost no names: is the rule still reading the docstrings?"
    broken = [f"{path.relative_to(ROOT)}:{line}: {name}" for path, line, name, ok in found if not ok]
    assert not broken, "names in docstrings or comments that do not import (renamed or removed?):\n" + \
        "\n".join(broken)


def test_the_rule_catches_a_stale_name_and_passes_a_live_one():
    aliases = module_aliases({name: path for name, path in modules().items() if not name.endswith("__main__")})
    assert "judges" in aliases and "registry" in aliases      # an import alias and a module's own name
    assert resolve_absolute("attnkit_grader.judging.engine.judge")
    assert not resolve_absolute("attnkit_grader.judging.engine.make_inputs")
    assert not resolve_absolute("attnkit.solutions")
    assert DOTTED.findall("see checks.py, `registry.make_inputs()` and e.g. build/site/en.html") == \
        ["checks.py", "registry.make_inputs", "e.g"]
    assert markdown_target_problem("site/pages/en/guide/grading.md#checks-and-their-points", ROOT, ROOT) is None
    assert markdown_target_problem("site/pages/en/guide/grading.md#no-such-heading", ROOT, ROOT)
    assert GUIDE_LINK.findall("policy: site/pages/en/guide/grading.md#checks-and-their-points.") == \
        ["site/pages/en/guide/grading.md#checks-and-their-points"]


if __name__ == "__main__":
    for path, line, name, ok in every_claim():
        print(f"{'ok  ' if ok else 'FAIL'} {path.relative_to(ROOT)}:{line} {name}")

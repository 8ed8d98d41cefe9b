"""The packages keep their trust levels: who imports whom, no import cycle, modules a newcomer can read.

Run as a script to see the import graph's figures: ``.venv/bin/python tests/test_layout.py``.
"""

import ast
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"attnkit": ROOT / "lib" / "attnkit", "attnkit_grader": ROOT / "lib" / "grader" / "attnkit_grader",
            "attnkit_sandbox": ROOT / "lib" / "grader" / "attnkit_sandbox",
            "attnkit_assignments": ROOT / "lib" / "grader" / "attnkit_assignments"}
MAX_LINES = 520                      # "no module over ~500 lines"
TRUSTED_PARTS = ("reference", "checks", "checks_causal", "inputs", "hidden", "bugs", "mutation")


def modules():
    """{dotted module name: path} of every module of the kit's packages."""
    found = {}
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = [package, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imports(name, path):
    """Every module ``name`` imports, anywhere in the file (inside functions too), relative ones resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")
                parent = parent[:len(parent) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def graph():
    """{module: set of the kit's modules it imports}."""
    known = modules()
    return {name: {target for target in imports(name, path) if target in known and target != name}
            for name, path in known.items()}


def cycles(edges):
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in edges[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def package_imports_of(prefix):
    """All modules (the kit's and others) that the modules under ``prefix`` import."""
    return {target for name, path in modules().items() if name == prefix or name.startswith(prefix + ".")
            for target in imports(name, path)}


def test_the_import_graph_has_no_cycle():
    edges = graph()
    assert sum(map(len, edges.values())) > 30, "the graph looks empty: did the packages move?"
    assert cycles(edges) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_is_longer_than_a_newcomer_can_read():
    long = {name: n for name, path in modules().items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"split these modules: {long}"


def test_each_package_imports_only_what_its_trust_level_allows():
    student = package_imports_of("attnkit")
    assert not {t for t in student if t.split(".")[0] in ("attnkit_grader", "attnkit_sandbox", "attnkit_assignments",
                                                           "nbgrader", "nbformat", "tests")}
    sandbox = package_imports_of("attnkit_sandbox")
    assert not {t for t in sandbox if t.split(".")[0] in ("attnkit_grader", "nbgrader", "nbformat", "nbclient",
                                                           "nbconvert", "sqlalchemy", "tests")}
    for name in modules():
        parts = name.split(".")
        if parts[0] == "attnkit_assignments" and "probes" in parts:
            reached = imports(name, modules()[name])
            assert not {t for t in reached if t.startswith("attnkit_grader") or t.split(".")[-1] in TRUSTED_PARTS}, name
    everything = package_imports_of("attnkit") | package_imports_of("attnkit_grader") | sandbox
    assert not {t for t in everything if t == "tests" or t.startswith(("tests.", "conftest"))}


def test_every_assignment_folder_has_both_halves():
    folder = PACKAGES["attnkit_assignments"]
    for assignment in (p for p in folder.iterdir() if p.is_dir() and p.name != "__pycache__"):
        assert (assignment / "probes" / "__init__.py").is_file(), f"{assignment.name}: no probes/"
        for part in ("__init__", "reference", "checks", "hidden"):
            assert (assignment / f"{part}.py").is_file(), f"{assignment.name}: no {part}.py"


if __name__ == "__main__":
    edges = graph()
    lines = {name: len(path.read_text().splitlines()) for name, path in modules().items()}
    for package, folder in PACKAGES.items():
        members = [n for n in lines if n == package or n.startswith(package + ".")]
        print(f"{package:20s} {len(members):3d} modules {sum(lines[n] for n in members):6d} lines")
    largest = max(lines, key=lines.get)
    print(f"largest module: {largest} ({lines[largest]} lines)")
    print(f"import graph: {len(edges)} modules, {sum(map(len, edges.values()))} edges; "
          f"cycles: {cycles(edges) or 'none'}")
    sys.exit(1 if cycles(edges) else 0)

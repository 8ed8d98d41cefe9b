"""The packages keep their trust levels: who imports whom, no import cycle, modules a newcomer can read.

The import graph holds every ``import`` of the kit's modules (inside functions too) and the modules a module
loads by name (``importlib.import_module(f"attnkit_assignments.{name}.assignment")``: an edge to every
module the name can be), so a loop through the registry shows. Run as a script to see the graph's
figures: ``.venv/bin/python tests/test_layout.py``.
"""

import ast
import fnmatch
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"attnkit": ROOT / "lib" / "attnkit", "attnkit_grader": ROOT / "lib" / "grader" / "attnkit_grader",
            "attnkit_sandbox": ROOT / "lib" / "grader" / "attnkit_sandbox",
            "attnkit_assignments": ROOT / "lib" / "grader" / "attnkit_assignments"}
MAX_LINES = 520                      # "no module over ~500 lines"
LOADERS = ("import_module", "__import__")   # calls that import a module given its name as a string
API = "attnkit_grader.authoring"           # all an assignment may import of the grader
RUNNER = "attnkit_sandbox.runner"          # the program run inside the sandbox
NAME_PATTERN = r"[a-z][a-z0-9_]{0,63}"     # an assignment's name
# Left out: the files `attnkit new-assignment` copies, which are no modules until copied (their manifest's name is
# a placeholder, "{{name}}"); tests/test_scaffold.py runs this test and the docstrings' over a copy in place.
TEMPLATE = PACKAGES["attnkit_grader"] / "scaffold_template"


def modules():
    """{dotted module name: path} of every module of the kit's packages."""
    found = {}
    for package, folder in PACKAGES.items():
        for path in sorted(p for p in folder.rglob("*.py") if TEMPLATE not in p.parents):
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


def loaded_by_name(path, known):
    """The kit's modules ``path`` may load by name: when it calls importlib.import_module (or __import__),
    every module matching a string or f-string of the file naming a module of the assignments' package
    (an f-string's placeholders match any name)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = {node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
             for node in ast.walk(tree) if isinstance(node, ast.Call)}
    if not calls & set(LOADERS):
        return set()
    patterns = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            patterns.add(node.value)
        elif isinstance(node, ast.JoinedStr):
            patterns.add("".join(part.value if isinstance(part, ast.Constant) else "*" for part in node.values))
    patterns = {p for p in patterns if p.startswith("attnkit_assignments.")}
    return {name for name in known for pattern in patterns if fnmatch.fnmatchcase(name, pattern)}


def graph():
    """{module: set of the kit's modules it imports or loads by name}."""
    known = modules()
    return {name: {target for target in imports(name, path) | loaded_by_name(path, known)
                   if target in known and target != name}
            for name, path in known.items()}


def reached(edges, start):
    """Every module ``start`` reaches through the graph (itself excluded)."""
    seen, pending = set(), [start]
    while pending:
        for target in edges[pending.pop()]:
            if target not in seen:
                seen.add(target)
                pending.append(target)
    return seen - {start}


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


def test_loads_by_name_are_edges_so_a_loop_through_the_registry_would_show():
    edges = graph()
    manifests = {n for n in modules() if n.startswith("attnkit_assignments.") and n.endswith(".assignment")}
    assert manifests and manifests <= edges["attnkit_grader.registry"]
    assert {n for n in modules() if n.endswith(".probes")} <= edges["attnkit_sandbox.probe_sets"]
    looped = {**edges, API: edges[API] | {"attnkit_grader.registry"}}      # what the old layout had
    assert cycles(looped), "an API that reached the registry would close a loop, and the test must see it"


def test_an_assignment_imports_the_grader_through_the_api_alone_which_reaches_no_assignment():
    for name, path in modules().items():
        if name.startswith("attnkit_assignments."):
            grader = {t for t in imports(name, path) if t.split(".")[0] == "attnkit_grader"
                      and t != "attnkit_grader" and not (t == API or t.startswith(API + "."))}
            assert not grader, f"{name} imports {sorted(grader)}: use {API}"
    reach = reached(graph(), API)
    # run() runs an assignment's probes, loaded by name; they import the sandbox's helpers, never the API
    assert not {t for t in reach if t.startswith("attnkit_assignments") and ".probes" not in t}, sorted(reach)
    assert "attnkit_grader.registry" not in reach


def test_the_judge_imports_no_assignment_and_asks_no_registry():
    """The judging package decides from the manifest it is given: it imports no assignment module and never
    reaches the registry; of the assignments it reaches only their probes, through the sandbox's probe sets."""
    edges = graph()
    judging = [n for n in edges if n == "attnkit_grader.judging" or n.startswith("attnkit_grader.judging.")]
    assert len(judging) >= 5
    for name in judging:
        assert not {t for t in edges[name] if t.split(".")[0] == "attnkit_assignments"}, name
        reach = reached(edges, name)
        assert "attnkit_grader.registry" not in reach, name
        assert not {t for t in reach if t.startswith("attnkit_assignments.") and ".probes" not in t}, name
    assert "attnkit_grader.registry" in reached(graph() | {"attnkit_grader.judging.engine": {"attnkit_grader.registry"}},
                                               "attnkit_grader.judging.engine"), "the test must see a judge that asks"


def test_trusted_code_never_imports_the_sandboxs_entry_program():
    """attnkit_sandbox.runner is the program that runs inside bubblewrap: the grader reads the cells' names from
    attnkit_sandbox.cells and the command line from attnkit_sandbox.command, so that nothing at the runner's top
    level reaches the grader or its root door. Inside the sandbox package only the zygote runs it in-process."""
    importers = {name for name, path in modules().items() if RUNNER in imports(name, path)}
    assert importers == {"attnkit_sandbox.zygote"}, sorted(importers)
    spoken = {name for name, path in modules().items() if name not in ("attnkit_sandbox.command", RUNNER)
              and RUNNER in {node.value for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                             if isinstance(node, ast.Constant) and isinstance(node.value, str)}}
    assert not spoken, f"{sorted(spoken)} name the runner's module: build its command with attnkit_sandbox.command"


def test_one_rule_says_which_assignments_are_installed():
    """The assignment name pattern is written once (attnkit_sandbox.installed), and every listing of assignment
    folders goes through installed.assignments: the registry, the staging, the zygote and the door."""
    written = {name for name, path in modules().items()
               if NAME_PATTERN in {node.value for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                                   if isinstance(node, ast.Constant) and isinstance(node.value, str)}}
    assert written == {"attnkit_sandbox.installed"}, sorted(written)
    for name in ("attnkit_grader.registry", "attnkit_grader.isolation.staging", "attnkit_sandbox.zygote"):
        assert "attnkit_sandbox.installed" in graph()[name], name
    assert "attnkit_grader.isolation.staging" in graph()["attnkit_grader.isolation.door"]


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
        if parts[0] == "attnkit_assignments" and "probes" in parts:     # trusted: the folder minus probes/
            probes = ".".join(parts[:parts.index("probes") + 1])
            found = imports(name, modules()[name])
            assert not {t for t in found if t.startswith("attnkit_grader")
                        or t.startswith("attnkit_assignments.") and not t.startswith(probes)}, name
    everything = package_imports_of("attnkit") | package_imports_of("attnkit_grader") | sandbox
    assert not {t for t in everything if t == "tests" or t.startswith(("tests.", "conftest"))}


def test_every_assignment_folder_has_both_halves():
    folder = PACKAGES["attnkit_assignments"]
    for assignment in (p for p in folder.iterdir() if p.is_dir() and p.name != "__pycache__"):
        assert (assignment / "probes" / "__init__.py").is_file(), f"{assignment.name}: no probes/"
        for part in ("__init__", "assignment"):           # the manifest names the rest
            assert (assignment / f"{part}.py").is_file(), f"{assignment.name}: no {part}.py"


if __name__ == "__main__":
    edges = graph()
    lines = {name: len(path.read_text().splitlines()) for name, path in modules().items()}
    for package, folder in PACKAGES.items():
        members = [n for n in lines if n == package or n.startswith(package + ".")]
        print(f"{package:20s} {len(members):3d} modules {sum(lines[n] for n in members):6d} lines")
    largest = max(lines, key=lines.get)
    print(f"largest module: {largest} ({lines[largest]} lines)")
    dynamic = {(name, t) for name, path in modules().items() for t in loaded_by_name(path, modules())}
    print(f"import graph: {len(edges)} modules, {sum(map(len, edges.values()))} edges, of them {len(dynamic)} "
          f"loads by name; cycles: {cycles(edges) or 'none'}")
    for name, target in sorted(dynamic):
        print(f"  {name} loads {target}")
    print(f"{API} reaches {len(reached(edges, API))} modules: of the assignments' only their probes (loaded by "
          f"name), and not the registry")
    trusted = [n for n in edges if not n.startswith(("attnkit_sandbox", "attnkit_assignments"))]
    print(f"trusted modules importing {RUNNER}: {sum(RUNNER in edges[n] for n in trusted)}")
    judging = [n for n in edges if n.startswith("attnkit_grader.judging")]
    print(f"judging modules importing or reaching a manifest or other non-probe assignment module: "
          f"{sum(any(t.startswith('attnkit_assignments.') and '.probes' not in t for t in reached(edges, n)) for n in judging)}"
          f" of {len(judging)}")
    registry = next(n for n in edges if n.endswith(".registry") and n.startswith("attnkit_grader"))
    print(f"the registry: {registry}, imported by {sum(registry in edges[n] for n in edges)} modules")
    patterns = {n for n, path in modules().items()
                if NAME_PATTERN in {node.value for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                                    if isinstance(node, ast.Constant) and isinstance(node.value, str)}}
    print(f"modules writing the assignment name pattern: {len(patterns)} ({', '.join(sorted(patterns))})")
    sys.exit(1 if cycles(edges) else 0)

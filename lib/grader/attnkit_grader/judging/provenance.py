"""Where did a submitted function or class come from? A principled minimum against copying the reference.

A hidden test grades an object only if it was written in the notebook:
1. its ``__module__`` is ``__main__`` (a notebook cell), and no class in its MRO comes from the
   assignments' trusted folders (``attnkit_assignments``, where the reference solutions live);
2. none of its code (methods, nested functions, and the notebook functions and classes it refers
   to by global name) was compiled from a file inside the kit's packages, spells out
   ``attnkit_assignments`` (attribute access or a string), or refers to a global that lives there;
3. none of its code objects is the reference's own code: a fingerprint of the bytecode, constants
   and names (not the file name or line numbers, so a copy pasted into a cell or ``exec``-ed from
   the solution file's text still matches) is compared with every reference function big enough
   not to be written the same way by chance. A copy written out in the notebook is flagged for the
   instructor, never scored 0 (the course's policy, and what the sandboxed grader does: it cannot
   load the reference at all); one loaded from the solutions' files (the notebook holds a module,
   module spec, path or file of theirs) scores 0, as it does in the sandbox, where it fails.
This is not a sandbox: a determined student can evade it; full isolation is a later issue.
"""

import functools
import importlib.machinery
import inspect
import os
import types

import attnkit
from attnkit.checking import NOT_WRITTEN_HERE as SAYS      # the sentences, in the student package's catalog
from attnkit.i18n import Text

SOLUTIONS = "attnkit_assignments"
# A reference code object shorter than this (bytes of bytecode, about 2 per instruction) could be
# written identically by a student (a one-line forward), so it is not compared.
MIN_FINGERPRINT_BYTES = 60


def _code_objects(code):
    """The code object and every code object nested in its constants (inner functions, lambdas)."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _qualname(code):
    return getattr(code, "co_qualname", code.co_name)      # co_qualname is new in Python 3.11


def fingerprint(code):
    """Bytecode, constants (nested code by fingerprint) and names: equal for a verbatim copy anywhere."""
    consts = tuple(fingerprint(c) if isinstance(c, types.CodeType) else (type(c).__name__, repr(c))
                   for c in code.co_consts)
    return (code.co_code, consts, code.co_names, code.co_varnames, code.co_argcount)


def _functions_in_class(cls):
    """Plain functions behind the methods, static/class methods and properties of one class."""
    found = []
    for value in vars(cls).values():
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            found.extend(f for f in (value.fget, value.fset, value.fdel) if f is not None)
        elif inspect.isfunction(value):
            found.append(value)
    return found


def package_dirs(assignment):
    """The kit's folders no notebook code comes from: the student package's and the assignments'."""
    return tuple(os.path.abspath(path) for path in (os.path.dirname(attnkit.__file__), assignment.folder.parent))


@functools.lru_cache(maxsize=None)
def _reference_fingerprints(assignment):
    """{fingerprint: 'module.qualname'} for every sizeable code object of the assignment's reference."""
    table = {}
    module = assignment.reference
    for name, value in vars(module).items():
        if getattr(value, "__module__", None) != module.__name__:
            continue
        functions = _functions_in_class(value) if inspect.isclass(value) else (
            [value] if inspect.isfunction(value) else [])
        for function in functions:
            for code in _code_objects(function.__code__):
                if len(code.co_code) >= MIN_FINGERPRINT_BYTES:
                    table[fingerprint(code)] = f"{module.__name__}.{_qualname(code)}"
    return table


def _from_solutions(module_name):
    return isinstance(module_name, str) and (module_name == SOLUTIONS or module_name.startswith(SOLUTIONS + "."))


def _inside_package(filename, folders):
    path = os.path.abspath(filename) if os.path.isabs(filename) else filename
    return any(path.startswith(folder + os.sep) for folder in folders)


def _names_solutions(code, namespace):
    """True if ``code`` spells out the assignments' package: by name or in a string constant."""
    if any(isinstance(c, str) and SOLUTIONS in c for c in code.co_consts):
        return True
    return SOLUTIONS in code.co_names


def _inside_solutions(value, folders):
    path = str(value) if isinstance(value, (str, os.PathLike)) else None
    return path is not None and os.path.isabs(path) and any(
        os.path.abspath(path).startswith(folder + os.sep) for folder in folders[1:])


def _holds_solutions(namespace, folders):
    """True if the notebook's namespace keeps a handle on the reference solutions: a module or module spec
    of theirs, or a path or file inside their folder (what loading their code leaves behind)."""
    for value in list(namespace.values()):
        names = [getattr(value, attribute, None) for attribute in ("__name__", "name")]
        names = [n for n in names if not (isinstance(n, str) and n.endswith(".hidden"))]   # the test cells' own
        if isinstance(value, (types.ModuleType, importlib.machinery.ModuleSpec)) and \
                any(_from_solutions(n) for n in names):
            return True
        if any(_inside_solutions(v, folders) for v in (value, getattr(value, "name", None),
                                                       getattr(value, "origin", None))):
            return True
    return False


def copied(reason):
    """True for a ``problem`` that is only a copy of the reference's code, written out in the notebook:
    flagged for the instructor, never scored 0 (the sandboxed grader cannot tell a copy either)."""
    return reason is not None and "is a copy of the reference solution's code" in reason


def problem(obj, name, assignment):
    """None if ``obj`` looks written in the notebook, else a sentence (English) saying why it is not graded by
    ``assignment`` (its manifest: whose reference is compared)."""
    reason = why_not_graded(obj, name, assignment)
    return None if reason is None else str(reason)


def why_not_graded(obj, name, assignment):
    """:func:`problem`'s sentence as a Text, which the notebook shows in the student's language."""
    if not (inspect.isclass(obj) or inspect.isfunction(obj)):
        return None            # not ours to judge: the functional checks will report what is wrong
    references = _reference_fingerprints(assignment)
    folders = package_dirs(assignment)
    pending, seen = [(obj, name)], set()
    while pending:
        item, label = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        module = getattr(item, "__module__", None)
        if _from_solutions(module):
            return Text(SAYS["solutions"], what=label, module=module)
        if module != "__main__":
            if item is obj:
                return Text(SAYS["elsewhere"], what=label, module=module)
            continue           # a library function or class the notebook uses (torch, attnkit): fine
        functions = []
        if inspect.isclass(item):
            for klass in item.__mro__:
                if _from_solutions(klass.__module__):
                    return Text(SAYS["built_on"], what=label, klass=f"{klass.__module__}.{klass.__qualname__}")
                if klass.__module__ == "__main__":
                    functions.extend(_functions_in_class(klass))
        else:
            functions.append(item)
        for function in functions:
            for code in _code_objects(function.__code__):
                where = f"{label} ({_qualname(code)})"
                if _inside_package(code.co_filename, folders):
                    return Text(SAYS["compiled"], what=where, path=code.co_filename)
                if _names_solutions(code, function.__globals__):
                    return Text(SAYS["refers"], what=where, solutions=SOLUTIONS)
                copied = references.get(fingerprint(code))
                if copied is not None:
                    if _holds_solutions(function.__globals__, folders):
                        return Text(SAYS["loaded"], what=where)
                    return Text(SAYS["copied"], what=where, copied=copied)
                for global_name in code.co_names:
                    target = function.__globals__.get(global_name)
                    if isinstance(target, types.ModuleType):
                        if _from_solutions(target.__name__):
                            return Text(SAYS["module"], what=where, module=target.__name__)
                    elif inspect.isclass(target) or inspect.isfunction(target):
                        pending.append((target, global_name))
            for cell in function.__closure__ or ():
                try:
                    content = cell.cell_contents
                except ValueError:      # an empty cell
                    continue
                if inspect.isclass(content) or inspect.isfunction(content):
                    pending.append((content, f"{label} (closure)"))
    return None


def check(checks, obj, name, assignment):
    """Disqualify the cell (score 0, with the reason) when ``obj`` comes from the reference solutions; flag
    it (score unchanged) when it is a copy of their code written out in the notebook. True: grade it."""
    reason = why_not_graded(obj, name, assignment)
    if reason is None:
        return True
    if copied(str(reason)):
        checks.flag(Text(SAYS["flagged"], reason=reason))
        return True
    checks.disqualify(Text(SAYS["scores_0"], reason=reason))
    return False

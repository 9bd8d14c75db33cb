"""`solution NAME`: the learner's file with minigrad's own code written in.

The text is the skeleton that `start NAME` hands out, with each thing the learner writes replaced
by the engine's own: an op's `backward` (a method of the learner's subclass, as in the skeleton),
or a function. Saved as the learner's file, it passes `check NAME`.

What the engine's code calls is written out in the file too, so that it reads as numpy: the
helpers an exercise `shows` (catalogue.Part), and in place of a kernel call such as
`kernels.softmax_backward(...)`, the kernel's numpy twin, `softmax_backward_numpy(...)`, which the
tests prove equal to the compiled kernel. Any other name the code uses is imported from where it
lives in minigrad. A comment above each piece says where the code lives in the library.
"""
import ast
import builtins
import dis
import importlib
import inspect
import re
import textwrap
import types
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds demos/ and minigrad/


def solution_text(exercise):
    """The learner's file for `exercise`, solved with minigrad's own code."""
    skeleton = exercise.skeleton.read_text(encoding="utf-8")
    tree = ast.parse(skeleton)
    helpers = _helpers(exercise)
    twins = {f"kernels.{fn.__name__[:-len('_numpy')]}": fn.__name__ for fn in helpers
             if fn.__module__.startswith("minigrad.kernels.") and fn.__name__.endswith("_numpy")}
    replaced_by = {}  # the skeleton's line range -> new text
    used = list(helpers)  # the functions whose global names the file must provide
    for part in exercise.parts:
        if part.is_op:
            node = _backward_of(tree, part.name)
            function = part.reference.__dict__["backward"]
            function = getattr(function, "__func__", function)
            label = f"{part.reference.__name__}.backward"
        else:
            node = _function(tree, part.name)
            function = part.reference if part.show_reference else _first_function(part.shows)
            label = function.__name__
        used.append(function)
        code = _source(function, rename=None if function.__name__ == part.name or part.is_op else part.name)
        code = f"# minigrad's own: {_where(function)}, {label}\n" + code
        start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
        replaced_by[(start, node.end_lineno)] = textwrap.indent(code, " " * node.col_offset)
    defined = {f.__name__ for f in helpers}
    for node in tree.body:  # a helper the skeleton leaves to the learner: the engine's helper of that name
        if isinstance(node, ast.FunctionDef) and _raises_not_implemented(node) \
                and not any(p.name == node.name for p in exercise.parts) and f"_{node.name}" in defined:
            last = node.body[-1]
            arguments = ", ".join(a.arg for a in node.args.args)
            replaced_by[(last.lineno, last.end_lineno)] = \
                f"{' ' * last.col_offset}return _{node.name}({arguments})  # minigrad's own, written out above\n"
    lines = skeleton.splitlines(keepends=True)
    for (start, end), text in sorted(replaced_by.items(), reverse=True):
        lines[start - 1:end] = [_kernels_as_twins(text, twins)]
    imports_end = max(n.end_lineno for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)))
    head, tail = "".join(lines[:imports_end]), "".join(lines[imports_end:])
    written = "".join(f"\n\n# minigrad's own: {_where(fn)}, {fn.__name__}\n"
                      + _kernels_as_twins(_source(fn), twins) for fn in helpers)
    body = head + "{imports}" + written + tail
    imports = _imports(used, body)
    files = sorted({_where(f).split(" line ")[0] for f in used})
    header = textwrap.fill(
        f"The solution of the exercise {exercise.name}: minigrad's own code, from {', '.join(files)}, written "
        f"into the file that `python -m demos.exercises start {exercise.name}` hands out. Saved in its place, it "
        f"passes `python -m demos.exercises check {exercise.name}`.", width=98, initial_indent="# ",
        subsequent_indent="# ", break_on_hyphens=False, break_long_words=False) + "\n"
    return header + body.replace("{imports}", "".join(f"{line}\n" for line in imports), 1)


# ============================================================================ the pieces
def _helpers(exercise):
    """The functions the exercise's parts `show`, in order, once each (a name the module lacks is
    left out, as catalogue.Part says)."""
    found = []
    for part in exercise.parts:
        if not part.show_reference and not part.is_op:
            shows = part.shows[1:]  # the first one is the function itself (see solution_text)
        else:
            shows = part.shows
        for obj in shows:
            obj = _resolve(obj)
            if obj is not None and obj not in found:
                found.append(obj)
    return found


def _resolve(obj):
    if isinstance(obj, str):  # "module:name"
        module, name = obj.split(":")
        return getattr(importlib.import_module(module), name, None)
    return obj


def _first_function(shows):
    return next(f for f in map(_resolve, shows) if f is not None)


def _where(fn):
    """'minigrad/ops.py, line 78'."""
    path = Path(inspect.getsourcefile(fn)).resolve()
    path = path.relative_to(_ROOT) if _ROOT in path.parents else path
    return f"{path.as_posix()} line {inspect.getsourcelines(fn)[1]}"


def _source(fn, rename=None):
    code = textwrap.dedent(inspect.getsource(fn))
    if rename:
        code = re.sub(rf"^def {fn.__name__}\(", f"def {rename}(", code, count=1, flags=re.M)
    return code


def _kernels_as_twins(code, twins):
    for call, twin in twins.items():
        code = re.sub(rf"\b{re.escape(call)}\b", twin, code)
    return code


def _backward_of(tree, class_name):
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
    return next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "backward")


def _function(tree, name):
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)


def _raises_not_implemented(node):
    last = node.body[-1]
    return isinstance(last, ast.Raise) and "NotImplementedError" in ast.unparse(last)


# ============================================================================ the imports the code needs
def _global_names(code):
    """The global names a code object (and the functions and comprehensions inside it) reads."""
    names = {i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _imports(functions, text):
    """Import lines for every global name of `functions` that the file's code reads and does not
    define, grouped by module."""
    tree = ast.parse(text.replace("{imports}", ""))
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    defined = set(dir(builtins))
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined |= {(a.asname or a.name).split(".")[0] for a in node.names}
    modules, names_from = [], {}
    for fn in functions:
        for name in sorted((_global_names(fn.__code__) & read) - defined):
            value = fn.__globals__.get(name)
            if value is None:
                continue
            defined.add(name)
            if isinstance(value, types.ModuleType):
                package, _, leaf = value.__name__.rpartition(".")
                modules.append(f"from {package} import {leaf}" if leaf == name and package else
                               f"import {value.__name__}" + ("" if value.__name__ == name else f" as {name}"))
            else:
                names_from.setdefault(fn.__module__, []).append(name)
    lines = sorted(modules)
    for module, names in names_from.items():
        line = f"from {module} import {', '.join(names)}"
        if len(line) > 100:
            line = f"from {module} import (\n" + "".join(f"    {n},\n" for n in names) + ")"
        lines.append(line)
    return lines

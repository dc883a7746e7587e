"""The layers of the ftslide package (docs/architecture.md, "The Python package, in layers").

Every module imports only from its own part of the package or from the layers below it; an
import of a higher layer, or of another part of the same layer (simulation and jobmgr), fails
the test with the file and line. Imports inside functions count as well.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ftslide"

# Bottom first; parts on one line are one layer and may not import each other. "" is the
# package itself (its version).
LAYERS = [
    ("", "errors"),
    ("units", "ui"),
    ("toolchain",),
    ("sliding",),
    ("simulation", "jobmgr"),
    ("validate",),
    ("commands",),
    ("cli",),
    ("__main__",),
]
RANK = {part: rank for rank, parts in enumerate(LAYERS) for part in parts}


def part_of(module: str) -> str:
    """'ftslide.sliding.core' -> 'sliding', 'ftslide.errors' -> 'errors', 'ftslide' -> ''."""
    names = module.split(".")
    assert names[0] == "ftslide", module
    return names[1] if len(names) > 1 else ""


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    names = list(rel.parts)
    if names[-1] == "__init__":
        names.pop()
    return ".".join(names)


def is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, imported ftslide module) for every import in the source of ``module``, relative ones
    resolved."""
    tree = ast.parse(source)
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name.split(".")[0] == "ftslide"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "ftslide":
                continue
            # from x import y: y is a module of package x or a name defined in x
            found += [(node.lineno, f"{target}.{alias.name}" if is_module(f"{target}.{alias.name}") else target)
                      for alias in node.names]
    return found


def test_every_part_has_a_layer():
    parts = {part_of(module_name(p)) for p in PACKAGE.rglob("*.py")}
    assert parts <= set(RANK), f"parts of ftslide/ without a layer here: {sorted(parts - set(RANK))}"


def test_imports_go_down_the_layers():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        here = part_of(module_name(path))
        for line, target in imports(path.read_text(), module_name(path), path.name == "__init__.py"):
            there = part_of(target)
            if there != here and RANK[there] >= RANK[here]:
                how = "up" if RANK[there] > RANK[here] else "sideways"
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {target} ({how}: "
                             f"{here or 'ftslide'} is layer {RANK[here]}, {there or 'ftslide'} layer {RANK[there]})")
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def test_the_checker_resolves_relative_imports():
    source = "from ..simulation import sweep\nfrom . import notify\nfrom ..errors import FtslideError\n"
    assert imports(source, "ftslide.jobmgr.cluster") == [
        (1, "ftslide.simulation.sweep"), (2, "ftslide.jobmgr.notify"), (3, "ftslide.errors")]
    assert imports("from .core import Layout\n", "ftslide.sliding", is_package=True) == [
        (1, "ftslide.sliding.core")]


def test_public_modules_declare_their_api():
    """Every module below the commands says what it offers (``__all__``, NetworkX's way) and documents
    each function and class of it; the commands offer the CLI's NAME, HELP, add_arguments and run."""
    import importlib
    import inspect

    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        if path.name in ("__init__.py", "__main__.py", "cli.py"):
            continue
        module = importlib.import_module(name)
        if not module.__doc__:
            missing.append(f"{name}: no docstring")
        exported = getattr(module, "__all__", None)
        if exported is None:
            missing.append(f"{name}: no __all__")
            continue
        if part_of(name) == "commands":  # the protocol that ftslide/cli.py documents
            assert {"NAME", "HELP", "add_arguments", "run"} <= set(exported), name
            continue
        for attr in exported:
            value = getattr(module, attr, None)
            if value is None:
                missing.append(f"{name}.{attr}: in __all__ but not defined")
            elif (inspect.isfunction(value) or inspect.isclass(value)) and not inspect.getdoc(value):
                missing.append(f"{name}.{attr}: no docstring")
    assert not missing, "\n".join(missing)

"""Module boundaries, read from the source with `ast`: no module reaches into another module's private
names, and the engine's modules import each other without cycles.

A private name (`_name`, not a dunder such as `__version__`) is the owning module's to change: a
module that imports it, or reads it as `module._name`, breaks when the owner renames it. A
package-private module (`kopycat.converters._jsoncodec`) is shared by the modules of its own package
only. An import cycle makes the import order decide which module sees a half-initialised other.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
# Where each top-level package lives (pyproject.toml's [tool.setuptools.packages.find]).
SOURCE_DIRS = {"kopycat": ROOT / "runtime", "kopycat_airflow": ROOT / "provider", "kopycat_plugin": ROOT / "plugins"}


class Module(NamedTuple):
    name: str
    path: Path
    is_package: bool

    @property
    def package(self) -> str:
        """The package whose namespace this module's relative imports start from."""
        return self.name if self.is_package else self.name.rpartition(".")[0]


def modules(*tops: str) -> dict[str, Module]:
    """Every module of the given top-level packages, by dotted name."""
    found: dict[str, Module] = {}
    for top in tops:
        base = SOURCE_DIRS[top]
        for path in sorted((base / top).rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            found[".".join(parts)] = Module(".".join(parts), path, is_package)
    return found


ALL_MODULES = modules(*SOURCE_DIRS)


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def is_ours(dotted: str) -> bool:
    return dotted.split(".")[0] in SOURCE_DIRS


def absolute(module: Module, node: ast.ImportFrom) -> str:
    """The dotted module an ImportFrom names, relative imports resolved against module's package."""
    if not node.level:
        return node.module or ""
    base = module.package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def private_module_outside(importer: str, dotted: str) -> bool:
    """True when dotted passes through a package-private module and importer is outside its package."""
    parts = dotted.split(".")
    for index, part in enumerate(parts):
        if is_private(part):
            owner = ".".join(parts[:index])
            return not importer.startswith(owner + ".")
    return False


def dotted_name(node: ast.expr) -> str | None:
    """`a.b.c` for an attribute chain on a plain name, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted_name(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


def crossings(module: Module) -> Iterator[tuple[int, str]]:
    """(line, dotted private name) for each private name of another module that module uses."""
    tree = ast.parse(module.path.read_text(), str(module.path))
    aliases: dict[str, str] = {}  # local name -> module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not is_ours(alias.name):
                    continue
                if private_module_outside(module.name, alias.name):
                    yield node.lineno, alias.name
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    aliases[top] = top
        elif isinstance(node, ast.ImportFrom):
            source = absolute(module, node)
            if not is_ours(source):
                continue
            if private_module_outside(module.name, source):
                yield node.lineno, source
                continue
            for alias in node.names:
                target = f"{source}.{alias.name}"
                if target in ALL_MODULES:
                    if private_module_outside(module.name, target):
                        yield node.lineno, target
                    aliases[alias.asname or alias.name] = target
                elif is_private(alias.name) and source != module.name:
                    yield node.lineno, target
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            chain = dotted_name(node.value)
            if chain is None:
                continue
            head, _, rest = chain.partition(".")
            if head not in aliases:
                continue
            target = ".".join(filter(None, [aliases[head], rest]))
            if target in ALL_MODULES and target != module.name:
                yield node.lineno, f"{target}.{node.attr}"


def test_no_module_uses_another_modules_private_names() -> None:
    found = []
    for module in ALL_MODULES.values():
        for line, name in crossings(module):
            found.append(f"{module.path.relative_to(ROOT)}:{line}: uses {name}")
    for offence in found:
        print(offence)
    assert found == [], "private names of another module (give them a public home):\n" + "\n".join(found)


def type_checking_only(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and dotted_name(node.test) in {"TYPE_CHECKING", "typing.TYPE_CHECKING"}


def module_level_imports(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports that run when the module is imported: not in functions or classes, nor under
    `if TYPE_CHECKING:`; those in a module-level if/try do run, so they count."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and not type_checking_only(node):
            yield from module_level_imports(node.body)
            yield from module_level_imports(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from module_level_imports(block)


def import_graph(graph_modules: dict[str, Module]) -> dict[str, dict[str, int]]:
    """module -> {module it imports at import time: line}. An import names one module: the package
    __init__ modules Python also runs on the way are not edges (they are re-entrant by design)."""
    graph: dict[str, dict[str, int]] = {}
    for module in graph_modules.values():
        edges = graph.setdefault(module.name, {})
        tree = ast.parse(module.path.read_text(), str(module.path))
        for node in module_level_imports(tree.body):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                source = absolute(module, node)
                targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in graph_modules else source
                           for a in node.names]
            for target in targets:
                if target in graph_modules and target != module.name:
                    edges.setdefault(target, node.lineno)
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_engine_modules_import_each_other_without_cycles() -> None:
    engine = modules("kopycat")
    graph = import_graph(engine)
    found = []
    for component in cycles(graph):
        members = set(component)
        for name in component:
            for target, line in graph[name].items():
                if target in members:
                    found.append(f"{engine[name].path.relative_to(ROOT)}:{line}: imports {target}")
    for offence in found:
        print(offence)
    assert found == [], "import cycles between engine modules:\n" + "\n".join(found)


def test_the_checks_see_a_crossing_and_a_cycle(tmp_path: Path) -> None:
    """The detectors themselves: a private import and a two-module cycle are reported."""
    package = tmp_path / "kopycat" / "demo"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from kopycat.demo.b import _hidden\nimport kopycat.demo.b as b\nb._other\n")
    (package / "b.py").write_text("from kopycat.demo import a\n_hidden = _other = 1\n")
    (package / "_inner.py").write_text("")
    outside = tmp_path / "kopycat" / "elsewhere.py"
    outside.write_text("from kopycat.demo._inner import x\nfrom kopycat.demo import _inner\n")
    found = {}
    for name in ("kopycat.demo.a", "kopycat.demo.b", "kopycat.demo._inner", "kopycat.elsewhere"):
        path = tmp_path / (name.replace(".", "/") + ".py")
        found[name] = Module(name, path, False)
    ALL_MODULES.update(found)
    try:
        assert sorted(crossings(found["kopycat.demo.a"])) == [
            (1, "kopycat.demo.b._hidden"), (3, "kopycat.demo.b._other")]
        assert sorted(crossings(found["kopycat.elsewhere"])) == [
            (1, "kopycat.demo._inner"), (2, "kopycat.demo._inner")]
        assert list(crossings(found["kopycat.demo.b"])) == []
    finally:
        for name in found:
            del ALL_MODULES[name]
    assert cycles(import_graph(found)) == [["kopycat.demo.a", "kopycat.demo.b"]]

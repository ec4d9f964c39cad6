"""The layout is the pipeline: checked from the code itself (docs/architecture.md).

Imports only go down the pipeline (a step may use an earlier one, never a later
one), there is no import circle, and modules and functions stay small enough to
read. Every rule here fails on a real violation: each check is also run on a
small tree that breaks it.
"""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "dpsql"

LAYERS = ["errors", "privacy", "metadata", "frontend", "mechanisms", "plan", "engines",
          "release", "api", "server", "cli", "__init__", "__main__"]
"""Top-level parts of dpsql in pipeline order: each may import only those before it
(and itself). ``privacy`` (parameters, costs, the accountant) is used by every step."""

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def modules(root: Path) -> dict:
    found = {}
    for path in sorted(root.rglob("*.py")):
        name = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def imports(root: Path) -> dict:
    """Module -> the package modules it imports (relative and absolute imports)."""
    mods = modules(root)
    top = root.name
    graph = {m: set() for m in mods}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and (node.module == top or node.module.startswith(top + ".")):
                target = node.module
            else:
                continue
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in mods]
            graph[name].update(subs or ([target] if target in mods else []))
            graph[name].discard(name)
    return graph


def circles(graph: dict) -> list:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.index(parts[1] if len(parts) > 1 else "__init__")


def upward(graph: dict) -> list:
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                  if layer(b) > layer(a))


def long_functions(root: Path, limit: int) -> list:
    out = []
    for name, path in modules(root).items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = node.end_lineno - node.lineno + 1
                if size > limit:
                    out.append(f"{name}.{node.name}: {size} lines")
    return out


DRIVERS = ("duckdb", "psycopg", "psycopg2", "pyspark")
"""Engine drivers: imported only under ``engines/`` (and by the server's catalog, which
runs on its own DuckDB connection), so that an engine plugs in at engines/registry.py."""

DRIVER_IMPORTERS = ("engines", "server.catalog")


def driver_imports(root: Path) -> list:
    """Modules outside the engines that import an engine's driver."""
    out = []
    for name, path in modules(root).items():
        inner = name.split(".", 1)[1] if "." in name else ""
        if inner.startswith(DRIVER_IMPORTERS):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            found = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            out += [f"{name}: {m}" for m in found if m.split(".")[0] in DRIVERS]
    return sorted(out)


def long_modules(root: Path, limit: int) -> list:
    return [f"{name}: {n}" for name, path in modules(root).items()
            if (n := len(path.read_text().splitlines())) > limit]


def test_every_top_level_part_has_a_layer():
    for name in modules(PACKAGE):
        layer(name)


def test_no_import_circle():
    assert circles(imports(PACKAGE)) == []


def test_imports_only_go_down_the_pipeline():
    assert upward(imports(PACKAGE)) == []


def test_engine_drivers_are_imported_only_by_the_engines():
    assert driver_imports(PACKAGE) == []


def test_no_module_over_500_lines():
    assert long_modules(PACKAGE, MAX_MODULE_LINES) == []


def test_no_function_over_80_lines():
    assert long_functions(PACKAGE, MAX_FUNCTION_LINES) == []


@pytest.fixture
def broken(tmp_path) -> Path:
    """A package that breaks every rule once."""
    root = tmp_path / "dpsql"
    for part in ("plan", "frontend"):
        (root / part).mkdir(parents=True)
        (root / part / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "frontend" / "parse.py").write_text("from ..plan import build\nimport duckdb\n")
    (root / "plan" / "build.py").write_text(
        "from dpsql.frontend.parse import x\n\ndef f():\n" + "    pass\n" * 90)
    (root / "plan" / "big.py").write_text("x = 1\n" * 501)
    return root


def test_the_checks_find_what_they_look_for(broken):
    graph = imports(broken)
    assert circles(graph) == [["dpsql.frontend.parse", "dpsql.plan.build"]]
    assert upward(graph) == ["dpsql.frontend.parse -> dpsql.plan.build"]
    assert long_functions(broken, MAX_FUNCTION_LINES) == ["dpsql.plan.build.f: 91 lines"]
    assert long_modules(broken, MAX_MODULE_LINES) == ["dpsql.plan.big: 501"]
    assert driver_imports(broken) == ["dpsql.frontend.parse: duckdb"]


def test_every_package_is_installed():
    """pyproject.toml lists the packages explicitly: a new folder left out would be missing
    from an installed dpsql (as dpsql.engines.postgres once was, found by CI)."""
    tomllib = pytest.importorskip("tomllib")         # Python 3.11+
    listed = set(tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())
                 ["tool"]["setuptools"]["packages"])
    present = {".".join(p.parent.relative_to(PACKAGE.parent).parts)
               for p in PACKAGE.rglob("__init__.py")}
    assert present - listed == set()

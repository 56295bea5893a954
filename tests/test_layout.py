"""The package's layering (docs/index.md, "Layers") holds for every import in
ksbind/: lazy (function-level) and TYPE_CHECKING imports included. A module
imports only from its own layer or those below, and no import cycle exists."""
from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "ksbind"


def layers() -> list[list[str]]:
    """The docs' layers block, bottom layer first; each a list of module prefixes."""
    text = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    m = re.search(r"```layers\n(.*?)```", text, re.DOTALL)
    assert m, "docs/index.md has no ```layers block"
    rows = [line.split()[1:] for line in m.group(1).splitlines() if line.strip()]
    return rows[::-1]


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """(imported ksbind module, line) for every import statement anywhere in the file."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # `from package import submodule` imports the submodule
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module for a in node.names]
        else:
            continue
        for target in targets:
            if target == "ksbind" or target.startswith("ksbind."):
                while target not in known:
                    target = target.rsplit(".", 1)[0]
                if target != name:
                    yield target, node.lineno


def matches(module: str, pattern: str) -> bool:
    """A pattern names a module and everything under it; ``*`` stands for one name (a target's
    package: ``ksbind.targets.*.runtime``)."""
    parts, names = pattern.split("."), module.split(".")
    return len(names) >= len(parts) and all(p in ("*", n) for p, n in zip(parts, names))


def layer_of(module: str, rows: list[list[str]]) -> int | None:
    """The layer of the most specific pattern naming the module (``ksbind.targets`` is the
    base layer, ``ksbind.targets.*.target`` codegen's)."""
    found = [(len(p.split(".")), i) for i, row in enumerate(rows) for p in row if matches(module, p)]
    return max(found)[1] if found else None


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: {t for t, _ in imports(name, path, known)} for name, path in known.items()}


def test_every_module_has_a_layer() -> None:
    rows = layers()
    unplaced = sorted(m for m in modules() if layer_of(m, rows) is None)
    assert not unplaced, f"place these in docs/index.md's layers block: {unplaced}"


def test_no_import_goes_up_a_layer() -> None:
    rows, known = layers(), modules()
    upward = []
    for name, path in sorted(known.items()):
        own = layer_of(name, rows)
        for target, line in imports(name, path, known):
            theirs = layer_of(target, rows)
            if own is not None and theirs is not None and theirs > own:
                upward.append(f"{path.relative_to(REPO)}:{line}: {name} ({rows[own][0]}...) imports {target}")
    assert not upward, "imports up the layers:\n" + "\n".join(upward)


def test_no_import_cycle() -> None:
    edges = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


@pytest.mark.parametrize("source, expected", [
    ("from ksbind.lang.types import KsType", {"ksbind.lang.types"}),
    ("from ksbind import log", {"ksbind.log"}),
    ("def f():\n    from ksbind.backend import pch", {"ksbind.backend.pch"}),
    ("if TYPE_CHECKING:\n    from ksbind.spec import ModuleSpec", {"ksbind.spec"}),
    ("import ksbind.cli", {"ksbind.cli"}),
    ("from ksbind import build", {"ksbind"}),
])
def test_the_scan_sees_every_kind_of_import(tmp_path: Path, source: str, expected: set[str]) -> None:
    """The checks above are only as good as this reader: lazy and TYPE_CHECKING imports count."""
    path = tmp_path / "probe.py"
    path.write_text(source)
    assert {t for t, _ in imports("ksbind.lang.probe", path, modules())} == expected


def test_a_lower_module_importing_a_higher_one_would_be_caught() -> None:
    rows = layers()
    # A target's package spans layers: its runtime below everything, its record in codegen's,
    # its build kind in the backend's.
    assert layer_of("ksbind.targets.torch.runtime.calls", rows) == 0
    assert layer_of("ksbind.targets.jax.runtime", rows) == 0
    assert layer_of("ksbind.targets.torch.target", rows) == layer_of("ksbind.codegen.render", rows)
    assert layer_of("ksbind.targets.jax.build", rows) == layer_of("ksbind.backend.compile", rows)
    assert layer_of("ksbind.lang.types", rows) < layer_of("ksbind.codegen.render", rows)  # type: ignore[operator]
    assert layer_of("ksbind.backend.compile", rows) > layer_of("ksbind.cache.objects", rows)  # type: ignore[operator]
    assert layer_of("ksbind", rows) == len(rows) - 1


def test_cpp_hidden_is_defined_once() -> None:
    """KSBIND_HIDDEN (a module's own globals) has one definition, in ksbind/entry_points.h, which every
    header using it includes."""
    headers = sorted((PACKAGE / "include" / "ksbind").glob("*.h"))
    defining = [h.name for h in headers if re.search(r"^\s*#\s*define\s+KSBIND_HIDDEN\b", h.read_text(), re.M)]
    assert defining == ["entry_points.h"]
    for h in headers:
        text = h.read_text()
        if "KSBIND_HIDDEN" in text and h.name != "entry_points.h":
            assert "#include <ksbind/entry_points.h>" in text, h.name


def test_cpp_types_are_defined_once() -> None:
    """Each C++ struct or class (a primary definition, not a specialization or a forward
    declaration) is defined in one of ksbind's headers: the others include that one (a trait
    such as is_tensor, an arena type, each in one place)."""
    definition = re.compile(r"^\s*(?:template\s*<[^>]*>\s*)?(?:struct|class)\s+(\w+)\s*(?:final\s*)?[:{]", re.M)
    where: dict[str, list[str]] = {}
    for h in sorted((PACKAGE / "include" / "ksbind").glob("*.h")):
        for name in dict.fromkeys(definition.findall(h.read_text())):
            where.setdefault(name, []).append(h.name)
    twice = {n: hs for n, hs in where.items() if len(hs) > 1}
    assert twice == {}
    assert where["is_tensor"] == ["entry_points.h"]
    assert where["SizedArena"] == ["call_arena.h"]


def test_a_target_package_is_imported_only_through_the_registry() -> None:
    """Outside ksbind/targets/, no module imports one target's package: the registry lists them
    and the rest asks a record (a build kind is imported by the name its record gives)."""
    known = modules()
    found = [f"{path.relative_to(REPO)}:{line}: {target}" for name, path in sorted(known.items())
             if not name.startswith("ksbind.targets.")
             for target, line in imports(name, path, known)
             if target.startswith("ksbind.targets.") and target != "ksbind.targets.registry"]
    assert not found, "ask the target's record (ksbind/targets/registry.py's get_target):\n" + "\n".join(found)

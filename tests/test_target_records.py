"""Each target is one typed, frozen record, and only codegen/targets/ and backend/ know target names."""
from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import jinja2
import jinja2.nodes
import pytest

from ksbind.codegen.authoring import builtin_files
from ksbind.codegen.targets.record import BUILD_KINDS, IMPORTED_BUILD_KIND
from ksbind.errors import ConfigError
from ksbind.spec import ModuleOptions
from ksbind.targets.registry import TARGETS, Target, get_target

PACKAGE = Path(__file__).resolve().parent.parent / "ksbind"
#: The only places that may decide anything by a target's name.
#: Where target names may be compared: the target packages themselves (and their registry).
KNOWS_NAMES = (PACKAGE / "targets",)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_target_record_is_frozen(name: str) -> None:
    target = get_target(name)
    assert target is TARGETS[name]
    assert isinstance(target, Target) and target.name == name
    assert dataclasses.is_dataclass(target) and type(target).__dataclass_params__.frozen  # type: ignore[attr-defined]
    for f in dataclasses.fields(target):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(target, f.name, getattr(target, f.name))
    for plan in (target.files, target.single_file):
        with pytest.raises(TypeError):
            plan["extra.cpp"] = "x.j2"  # type: ignore[index]
    assert target.build in BUILD_KINDS or IMPORTED_BUILD_KIND.match(target.build)
    assert target.file_plan("split") == target.files and target.file_plan("single") == target.single_file
    assert hash(target) == hash(get_target(name))
    assert isinstance(target.extra_context([], ModuleOptions(name="m", target=name)), dict)


def test_target_facts() -> None:
    """The facts that code outside the targets used to decide by name."""
    ks, python, torch = (get_target(n) for n in ("ks", "python", "torch"))
    assert [t.build for t in (ks, python, torch)] == ["pybind11", "python-capi", "ksbind.targets.torch.build:TORCH"]
    assert [t.arena_per_call for t in (ks, python, torch)] == [False, True, True]
    assert [t.release_gil_always for t in (ks, python, torch)] == [False, False, True]
    assert [t.tensor_classes for t in (ks, python, torch)] == [True, False, False]
    assert [t.torch_library for t in (ks, python, torch)] == [False, False, True]
    assert [t.stub_imports for t in (ks, python, torch)] == [(), (), ("import torch",)]
    assert [t.entry_headers for t in (ks, python, torch)] == [(), ("ksbind/python.h",), ()]
    assert [t.compiled_name("m") for t in (ks, python, torch)] == ["m", "m", "m_torchops"]
    runtime = sorted(p.name for p in (PACKAGE / "targets" / "torch" / "runtime").glob("*.py"))
    assert [t.beside("m") for t in (ks, python, torch)] == [["m.pyi"], ["m.pyi"],
                                                            ["m.pyi", "m.py", *(f"m_ksbind_runtime/{f}" for f in runtime)]]
    assert ks.extra_context([], ModuleOptions(name="m")) == {}


def test_jax_target_facts() -> None:
    jax = get_target("jax")
    assert (jax.build, jax.compiled_name("m"), jax.result_shapes) == ("ksbind.targets.jax.build:JAX", "m_jaxffi", True)
    assert jax.beside("m") == ["m.pyi", "m.py", *(f"m_ksbind_jax_runtime/{f}" for f in ("__init__.py", "contract.py", "ffi.py"))]


@pytest.mark.parametrize("name", sorted(n for n in TARGETS if TARGETS[n].runtime_source is not None))
def test_a_runtime_a_wheel_copies_imports_nothing_of_ksbind(name: str) -> None:
    """A standalone build copies the record's runtime_source beside the module, which
    must then run with no ksbind installed: a runtime package's modules import only each other."""
    files = get_target(name).runtime_files()
    assert files
    for _, source in files:
        tree = ast.parse((PACKAGE / source).read_text())
        imported = {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
        imported |= {"." * node.level + (node.module or "") for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom)}
        package = len(files) > 1
        assert not [m for m in imported if m.split(".")[0] == "ksbind" or (m.startswith(".") and not package)
                    or m.startswith("..")], (source, imported)


def test_runtime_copy_and_source_go_together() -> None:
    with pytest.raises(ValueError, match="runtime_copy and runtime_source go together"):
        dataclasses.replace(get_target("torch"), runtime_source=None)


def test_unknown_target() -> None:
    with pytest.raises(ConfigError, match=r"unknown target 'pytorch' \(did you mean 'torch'\?\)"):
        get_target("pytorch")


def _names_target(node: ast.expr) -> bool:
    """``target``, ``spec.target``, ``target_name``...: an expression whose last name says target."""
    if isinstance(node, ast.Name):
        return "target" in node.id.lower()
    if isinstance(node, ast.Attribute):
        return "target" in node.attr.lower()
    return False


def _is_target_name(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value in TARGETS


def _is_target_names(node: ast.expr) -> bool:
    """``TARGETS`` (or any name saying targets), or a literal collection holding a target's name."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_target_name(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return any(k is not None and _is_target_name(k) for k in node.keys)
    return _names_target(node)


def _is_constant_like(node: ast.expr) -> bool:
    """A string literal, or a CONSTANT (which may hold a target's name)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return bool(name) and name.isupper()


def name_comparisons(source: str, filename: str = "<string>") -> list[str]:
    """Each place ``source`` decides by a target's name: ``== "torch"`` (any operand),
    ``target == CONSTANT``, ``target in TARGETS`` or ``in ("ks", ...)``, and
    ``match target: case "torch"``. (A gdef's target, a structured name, is
    compared with names, not constants: ksc/planner.py.)"""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for op, a, b in zip(node.ops, operands, operands[1:]):
                if isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
                    hit = (_is_target_name(a) or _is_target_name(b)
                           or (_names_target(a) and _is_constant_like(b))
                           or (_names_target(b) and _is_constant_like(a)))
                elif isinstance(op, (ast.In, ast.NotIn)):
                    hit = _names_target(a) and _is_target_names(b)
                else:
                    hit = False
                if hit:
                    found.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Match) and _names_target(node.subject):
            found += [f"{filename}:{c.pattern.lineno}: case {ast.unparse(c.pattern)}" for c in node.cases
                      if any(_is_target_name(v.value) for v in ast.walk(c.pattern) if isinstance(v, ast.MatchValue))]
    return found


def test_scan_finds_name_comparisons() -> None:
    """The scan below is not vacuous: each form it forbids is found."""
    forms = ['spec.target == "torch"', '"ks" != options.target', 'target in ("ks", "python")',
             'target not in TARGETS', 'x.kind == "python"', 'spec.target == TORCH']
    for form in forms:
        assert name_comparisons(f"if {form}:\n    pass\n"), form
    assert name_comparisons('match spec.target:\n    case "torch":\n        pass\n')
    # A ks gdef's target (a structured name) compared with another is no target name.
    assert not name_comparisons("if g.target != target or target in self.defs:\n    pass\n")


def test_only_targets_and_backend_compare_target_names() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if any(path.is_relative_to(d) for d in KNOWS_NAMES):
            continue
        found += name_comparisons(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE.parent)))
    assert not found, "ask the target record (ksbind/codegen/targets/record.py) instead:\n" + "\n".join(found)


# ------------------------------------------------------------ templates

#: Every built-in template: the shared ones (codegen/templates/) and each target package's.
BUILTINS = sorted(builtin_files().values())
#: Templates allowed to decide by a target's name, each with the reason: none now.
TEMPLATES_EXEMPT: dict[str, str] = {}


def _jinja_names_target(node: jinja2.nodes.Node) -> bool:
    """``target``, ``module.target``...: a Jinja2 expression whose last name says target."""
    if isinstance(node, jinja2.nodes.Name):
        return "target" in node.name.lower()
    if isinstance(node, jinja2.nodes.Getattr):
        return "target" in node.attr.lower()
    return False


def _jinja_target_const(node: jinja2.nodes.Node) -> bool:
    """A literal that is a target's name, or a literal list/tuple holding one."""
    if isinstance(node, jinja2.nodes.Const):
        return node.value in TARGETS
    if isinstance(node, (jinja2.nodes.List, jinja2.nodes.Tuple)):
        return any(_jinja_target_const(x) for x in node.items)
    return False


def template_name_comparisons(source: str, filename: str = "<template>") -> list[str]:
    """Each place a Jinja2 template decides by a target's name: a comparison (``==``, ``!=``,
    ``in``) with a target's name or of ``target`` with any string, a test (``is equalto "torch"``,
    ``is sameas``) or a filter's argument (``selectattr("target", "equalto", "torch")``) naming one."""
    found = []
    for node in jinja2.Environment().parse(source).find_all((jinja2.nodes.Compare, jinja2.nodes.Test,
                                                             jinja2.nodes.Filter)):
        if isinstance(node, jinja2.nodes.Compare):
            operands = [node.expr, *(o.expr for o in node.ops)]
            hit = any(_jinja_target_const(x) for x in operands) or (
                any(_jinja_names_target(x) for x in operands)
                and any(isinstance(x, jinja2.nodes.Const) and isinstance(x.value, str) for x in operands))
        else:
            args = node.args if isinstance(node, (jinja2.nodes.Call, jinja2.nodes.Filter, jinja2.nodes.Test)) else []
            hit = any(_jinja_target_const(a) for a in args) or (
                isinstance(node, jinja2.nodes.Test) and _jinja_names_target(node.node))
        if hit:
            found.append(f"{filename}:{node.lineno}: {node}")
    return found


def test_template_scan_finds_name_comparisons() -> None:
    """The template scan is not vacuous: each form it forbids is found, and a mode is no target."""
    forms = ['{% if target == "python" %}x{% endif %}', '{% if "torch" != module.target %}x{% endif %}',
             '{% if target in ("ks", "python") %}x{% endif %}', '{% if module.target == "jaxx" %}x{% endif %}',
             '{% if target is equalto "ks" %}x{% endif %}',
             '{% for b in bindings | selectattr("target", "equalto", "torch") %}x{% endfor %}']
    for form in forms:
        assert template_name_comparisons(form), form
    assert not template_name_comparisons('{% if e.kind == "elementwise" and e.mode != "plain" %}x{% endif %}'
                                         '{{ target }}{% for h in entry_headers %}{{ h }}{% endfor %}')


def test_no_template_compares_target_names() -> None:
    """Templates print; the target records decide (ksbind/targets/NAME/target.py)."""
    found = []
    for path in BUILTINS:
        if path.name not in TEMPLATES_EXEMPT:
            found += template_name_comparisons(path.read_text(encoding="utf-8"), path.name)
    assert not found, "ask the target record (ksbind/codegen/targets/record.py) and hand the template a " \
                      "value instead:\n" + "\n".join(found)
    assert set(TEMPLATES_EXEMPT) <= {p.name for p in BUILTINS}
    # Every template a target renders is among those scanned (and so are the ones they extend or include).
    assert {t for target in TARGETS.values() for plan in (target.files, target.single_file)
            for t in plan.values()} <= {p.name for p in BUILTINS} - set(TEMPLATES_EXEMPT)


#: The most lines of fixed text a built-in template may hold in a row: longer fixed C++ belongs in a
#: header under an include/ksbind/ folder (ksbind's or a target package's), where it is compiled, read and tested as C++ (templates print
#: what the target records decide; headers hold what never changes).
MAX_FIXED_LINES = 8


def longest_fixed_run(text: str) -> tuple[int, int]:
    """The longest run of fixed lines (no Jinja2 expression or statement) in a template's text, and
    the line it starts on. Comments are dropped first (they are no C++, and do not break a run);
    blank lines neither count nor break one."""
    text = re.sub(r"\{#.*?#\}", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    best, best_start, run, start = 0, 0, 0, 0
    for number, line in enumerate(text.splitlines(), 1):
        if "{{" in line or "{%" in line:
            run = 0
        elif line.strip():
            start = number if run == 0 else start
            run += 1
            if run > best:
                best, best_start = run, start
    return best, best_start


def test_fixed_run_scan_counts_fixed_lines() -> None:
    """The scan is not vacuous: fixed lines count, Jinja2 lines break a run, comments and blanks do not."""
    assert longest_fixed_run("a\nb\n\nc\n{{ x }}\nd\n") == (3, 1)
    assert longest_fixed_run("{% if x %}\na\n{# a\ncomment #}\nb\n{% endif %}\n") == (2, 2)
    assert longest_fixed_run("{{ x }}\n") == (0, 0)


def test_no_template_holds_a_long_run_of_fixed_cpp() -> None:
    """Fixed C++ lives in headers; templates print values between short fixed lines."""
    found = []
    for path in BUILTINS:
        run, start = longest_fixed_run(path.read_text(encoding="utf-8"))
        if run > MAX_FIXED_LINES:
            found.append(f"{path.name}:{start}: {run} fixed lines in a row")
    assert not found, f"more than {MAX_FIXED_LINES} fixed lines in a row: move them into a header under " \
                      "an include/ksbind/ folder (or compute them in the target record):\n" + "\n".join(found)


def test_each_target_package_holds_its_own_templates_and_headers() -> None:
    """ksbind's own targets are packages (ksbind/targets/NAME/): the templates a target renders that
    no other target renders, and the headers only its templates include, live in its package; a
    template's name is one across every built-in folder, so `builtin/NAME` and overrides find one."""
    from ksbind.codegen.render import BUILTIN_FOLDERS

    names = [p.name for d in BUILTIN_FOLDERS for p in d.glob("*.j2")]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    for name, target in TARGETS.items():
        assert target.templates == PACKAGE / "targets" / name / "templates"
        assert target.include_dirs == (PACKAGE / "targets" / name / "include",)
        mine = {t for plan in (target.files, target.single_file) for t in plan.values()}
        others = {t for other in TARGETS.values() if other is not target
                  for plan in (other.files, other.single_file) for t in plan.values()}
        for template in mine - others:
            assert (target.templates / template).is_file(), f"{template} belongs in {target.templates}"
        # Its headers are included by its own templates and headers only: not by another target's,
        # nor by the shared ones (ksbind/include/ksbind/).
        for header in target.include_dirs[0].glob("ksbind/*.h"):
            line = f"#include <ksbind/{header.name}>"
            strangers = [p for p in (*(q for d in BUILTIN_FOLDERS for q in d.glob("*.j2")),
                                     *(PACKAGE / "include" / "ksbind").glob("*"),
                                     *(q for t in TARGETS.values() if t is not target
                                       for q in t.include_dirs[0].glob("ksbind/*")))
                         if p.parent not in (target.templates,) and line in p.read_text(encoding="utf-8")]
            assert not strangers, f"{header.name} is {name}'s, but {strangers} include it"

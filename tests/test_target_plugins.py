"""Targets that live outside ksbind: a distribution registers a ``Target`` under the
``ksbind.targets`` entry point group, and a config's ``target:`` finds it (ksbind/targets/registry.py).

The example package is examples/hello_target (docs/templates.md, "Adding a target"): the python
target's crossing with its own module template, C++ header and config key. The in-process tests
stand a fake entry point in for an installed distribution; the last test installs the package
with pip into a fresh venv and builds and calls a module of its target there.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import pytest

import ksbind
import ksbind.targets.registry as targets
from ksbind.codegen.targets.record import Target, TargetOption
from ksbind.config import load_config_text
from ksbind.errors import ConfigError
from tests.test_ksc import KSC, needs_ksc

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "examples" / "hello_target"


def _example_target() -> Target:
    """The example package's record, imported from its folder (not installed here)."""
    spec = importlib.util.spec_from_file_location("ksbind_hello_target", PACKAGE / "ksbind_hello_target" / "__init__.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return cast(Target, module.TARGET)


HELLO = _example_target()

DECLS = "(edef twice Float (Float))"


@dataclass
class FakeEntryPoint:
    """What importlib.metadata gives for an installed distribution's entry point."""

    name: str
    value: str
    loaded: Any
    dist: Any = None

    def load(self) -> Any:
        if isinstance(self.loaded, Exception):
            raise self.loaded
        return self.loaded


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[FakeEntryPoint]]:
    """The entry points ``ksbind.targets`` finds: append to the list to install one."""
    points: list[FakeEntryPoint] = []

    class Metadata:
        @staticmethod
        def entry_points(group: str) -> list[FakeEntryPoint]:
            return list(points) if group == targets.ENTRY_POINT_GROUP else []

    monkeypatch.setattr(targets, "metadata", Metadata)
    targets._registered.cache_clear()
    yield points
    targets._registered.cache_clear()


def test_a_registered_target_is_found_by_its_name(registered: list[FakeEntryPoint]) -> None:
    with pytest.raises(ConfigError, match=r"unknown target 'hello'; expected one of ks, python, torch, jax$"):
        targets.get_target("hello")
    targets._registered.cache_clear()
    registered.append(FakeEntryPoint("hello", "ksbind_hello_target:TARGET", HELLO))
    assert targets.get_target("hello") is HELLO
    assert targets.registered_names() == ["hello"]
    with pytest.raises(ConfigError, match=r"unknown target 'helo' \(did you mean 'hello'\?\); expected one of ks, "
                                          r"python, torch, jax, hello"):
        targets.get_target("helo")


def test_a_registered_name_of_ksbinds_own_target_is_ksbinds(registered: list[FakeEntryPoint]) -> None:
    registered.append(FakeEntryPoint("python", "elsewhere:TARGET", replace(HELLO, name="python")))
    assert targets.get_target("python") is targets.TARGETS["python"]
    assert targets.registered_names() == []


@pytest.mark.parametrize("loaded, message", [
    (ImportError("No module named 'hello_deps'"), r"failed to load: ImportError: No module named 'hello_deps'"),
    ({"name": "hello"}, r"is a dict, not a ksbind\.codegen\.targets\.record\.Target"),
    (replace(HELLO, name="hi"), r"is a Target named 'hi': the entry point's name and the record's must agree"),
])
def test_a_broken_registration_is_an_error_naming_its_entry_point(registered: list[FakeEntryPoint], loaded: Any,
                                                                   message: str) -> None:
    registered.append(FakeEntryPoint("hello", "ksbind_hello_target:TARGET", loaded))
    with pytest.raises(ConfigError, match=r"target 'hello' \(ksbind\.targets entry point "
                                          r"'ksbind_hello_target:TARGET' of an installed distribution\) " + message):
        targets.get_target("hello")


def test_two_registrations_of_one_name_are_an_error(registered: list[FakeEntryPoint]) -> None:
    registered += [FakeEntryPoint("hello", "a:TARGET", HELLO), FakeEntryPoint("hello", "b:TARGET", HELLO)]
    with pytest.raises(ConfigError, match="registered by several installed distributions .*'a:TARGET'.*'b:TARGET'"):
        targets.get_target("hello")


def test_a_registered_target_renders_with_its_own_templates_and_options(registered: list[FakeEntryPoint]) -> None:
    registered.append(FakeEntryPoint("hello", "ksbind_hello_target:TARGET", HELLO))
    decls = ksbind.parse_ks(DECLS)
    default = ksbind.render_module(decls, "hello_demo", "hello")
    module = default.files["module.cpp"]
    templates = (PACKAGE / "ksbind_hello_target" / "templates").as_posix()
    assert f"template hello_module.cpp.j2 from {templates}/" in module.splitlines()[0]
    assert '#include <hello/greeting.h>' in module and 'hello::greeting("hello")' in module  # its default
    assert default.context["target_options"] == {"greeting": "hello"}
    # The rest is the python target's, which its template extends.
    python = ksbind.render_module(decls, "hello_demo", "python").files
    assert default.files["entry_points.cpp"].splitlines()[1:] == python["entry_points.cpp"].splitlines()[1:]
    assert "ksbind_methods[]" in module and "ksbind_methods[]" in python["module.cpp"]
    given = ksbind.render_module(decls, "hello_demo", "hello", target_options={"greeting": 'say "hi"'})
    assert r'hello::greeting("say \"hi\"")' in given.files["module.cpp"]
    single = ksbind.render_module(decls, "hello_demo", "hello", layout="single", target_options={"greeting": "x"})
    assert 'hello::greeting("x")' in single.files["module.cpp"]
    with pytest.raises(ConfigError, match=r"target 'hello' has no option 'greting' \(did you mean 'greeting'\?\); "
                                          "its options: greeting"):
        ksbind.render_module(decls, "hello_demo", "hello", target_options={"greting": "hi"})
    with pytest.raises(ConfigError, match=r"target option 'greeting' must be a text value .* found 3"):
        ksbind.render_module(decls, "hello_demo", "hello", target_options={"greeting": 3})
    with pytest.raises(ConfigError, match="target 'python' has no option 'greeting'; its options: none"):
        ksbind.render_module(decls, "hello_demo", "python", target_options={"greeting": "hi"})


def test_a_registered_target_builds_with_its_build_kinds_toolchain(registered: list[FakeEntryPoint],
                                                                    tmp_path: Path) -> None:
    """The native build picks the module glue by the target's build kind, not its name: the hello
    target (python-capi) compiles as the python target does, the ks target with pybind11."""
    from ksbind.backend.native import CompilePlan, plan_toolchain
    registered.append(FakeEntryPoint("hello", "ksbind_hello_target:TARGET", HELLO))

    def glue(target: str) -> str:
        plan = CompilePlan("m", (), (tmp_path,), (), ("g++",), tmp_path, target=target)
        return plan_toolchain(plan).name

    assert [glue(t) for t in ("hello", "python", "ks")] == ["python-capi", "python-capi", "pybind11"]


def test_a_target_may_name_a_build_kind_of_its_own_package() -> None:
    with pytest.raises(ValueError, match=r"unknown build kind 'cmake'; expected one of pybind11, python-capi, "
                                         r"or a build kind of its own as 'package.module:NAME'"):
        replace(HELLO, build="cmake")
    assert replace(HELLO, build="tests.plugin_kinds:RECORDING").build == "tests.plugin_kinds:RECORDING"


@pytest.mark.parametrize("where, message", [
    ("tests.no_such_module:KIND", r"failed to load: ModuleNotFoundError: No module named 'tests.no_such_module'"),
    ("tests.plugin_kinds:NOT_A_KIND", r"is no BuildKind \(ksbind/backend/kind\.py\): it has no prepare, build, "
                                      r"loads, standalone_units, schedule"),
])
def test_a_build_kind_that_does_not_load_is_an_error_naming_the_target(registered: list[FakeEntryPoint],
                                                                       tmp_path: Path, where: str,
                                                                       message: str) -> None:
    from ksbind.backend.build import schedule
    registered.append(FakeEntryPoint("counted", "x:T", replace(targets.TARGETS["ks"], name="counted", build=where)))
    [spec] = _config(tmp_path, target="counted")
    with pytest.raises(ConfigError, match=rf"target 'counted': its build kind '{where}' {message}"):
        schedule(spec)


@pytest.mark.slow
@needs_ksc
def test_a_registered_target_with_its_own_build_kind_builds_through_it(registered: list[FakeEntryPoint],
                                                                       tmp_path: Path) -> None:
    """The backend asks the target's own build kind for each step (here the native build under
    another name) and the module it builds works."""
    from ksbind.pipeline import build_spec
    from tests import plugin_kinds
    registered.append(FakeEntryPoint("counted", "tests.plugin_kinds:TARGET", replace(
        targets.TARGETS["ks"], name="counted", build="tests.plugin_kinds:RECORDING")))
    (tmp_path / "twice.ks").write_text("(def twice Float (x : Float) (mul 2.0 x))\n")
    config = tmp_path / "counted.yaml"
    config.write_text(f"name: counted_demo\ntarget: counted\nks: twice.ks\nksc: {{path: {KSC}}}\n")
    plugin_kinds.RECORDING.steps.clear()
    module = build_spec(ksbind.load_config(config)[0], cache_dir=tmp_path / "cache", quiet=True)
    assert module.twice(2.5) == 5.0
    assert plugin_kinds.RECORDING.steps[:3] == ["schedule", "prepare", "build"]


CONFIG = """\
name: hello_demo
target: {target}
declarations: |
  {decls}
{options}"""


def _config(tmp_path: Path, target: str = "hello", options: str = "") -> list[ksbind.ModuleSpec]:
    text = CONFIG.format(target=target, decls=DECLS, options=options)
    return load_config_text(text, tmp_path / "hello.yaml")


def test_a_config_checks_a_registered_targets_own_keys_at_their_lines(registered: list[FakeEntryPoint],
                                                                      tmp_path: Path) -> None:
    registered.append(FakeEntryPoint("hello", "ksbind_hello_target:TARGET", HELLO))
    [spec] = _config(tmp_path, options="target_options:\n  greeting: hi there\n")
    assert spec.target == "hello" and spec.target_options == (("greeting", "hi there"),)
    with pytest.raises(ConfigError, match=r"hello\.yaml:6:3: target 'hello' has no option 'greting' \(did you mean "
                                          r"'greeting'\?\)"):
        _config(tmp_path, options="target_options:\n  greting: hi\n")
    with pytest.raises(ConfigError, match=r"hello\.yaml:6:13: target option 'greeting' must be a string \(the text "
                                          r"the module's greeting\(\) returns\), found a boolean True"):
        _config(tmp_path, options="target_options:\n  greeting: true\n")
    with pytest.raises(ConfigError, match=r"hello\.yaml:2:9: unknown target 'helo' \(did you mean 'hello'\?\)"):
        _config(tmp_path, target="helo")
    with pytest.raises(ConfigError, match=r"hello\.yaml:6:3: target 'python' has no option 'greeting'; its "
                                          r"options: none: remove 'target_options'"):
        _config(tmp_path, target="python", options="target_options:\n  greeting: hi\n")


def test_target_option_records_check_their_own_defaults() -> None:
    assert TargetOption("count", 3, "n").holds(4) and not TargetOption("count", 3, "n").holds(True)
    assert TargetOption("flag", False, "f").holds(True) and not TargetOption("flag", False, "f").holds(1)
    with pytest.raises(ValueError, match="default 'x' is not a count value"):
        TargetOption("count", "x", "n")


# ------------------------------------------------------------ installed with pip, in a venv


@pytest.fixture(scope="module")
def hello_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv that sees this one's packages (ksbind, its dependencies) through a .pth
    file, with examples/hello_target installed into it by pip (from a copy: a build writes
    beside its sources)."""
    root = tmp_path_factory.mktemp("hello-venv")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "_ksbind_parent.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    source = root / "hello_target"
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-index", "--target", str(site), str(source)], check=True, capture_output=True, text=True)
    return python


BUILD_AND_CALL = """\
import json, sys
from importlib import metadata
import ksbind
[point] = metadata.entry_points(group="ksbind.targets")
m = ksbind.build(sys.argv[1], cache_dir=sys.argv[2], quiet=True)
print(json.dumps({"entry_point": [point.name, point.value, point.dist.metadata["Name"]],
                  "twice": m.twice(3.5), "greeting": m.greeting(), "file": ksbind.__file__}))
"""


@pytest.mark.slow
@needs_ksc
def test_an_installed_target_builds_and_calls_a_module(hello_venv: Path, tmp_path: Path) -> None:
    """pip installs the example package into a venv; there, a config naming its target builds a
    module with its template, its header and its option, and the module computes (ksc compiled
    the function)."""
    (tmp_path / "twice.ks").write_text("(def twice Float (x : Float) (mul 2.0 x))\n")
    config = tmp_path / "hello.yaml"
    config.write_text(textwrap.dedent(f"""\
        name: hello_demo
        target: hello
        ks: twice.ks
        ksc: {{path: {KSC}}}
        target_options:
          greeting: hi from an installed target
        """))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([str(hello_venv), "-c", BUILD_AND_CALL, str(config), str(tmp_path / "cache")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.splitlines()[-1])
    assert got["entry_point"] == ["hello", "ksbind_hello_target:TARGET", "ksbind-hello-target"]
    assert got["twice"] == 7.0 and got["greeting"] == "hi from an installed target"
    assert Path(got["file"]).resolve() == Path(ksbind.__file__).resolve()  # this checkout's ksbind
    # An unknown option is an error at its line, from the installed target's declaration.
    config.write_text(config.read_text().replace("greeting: hi", "greting: hi"))
    done = subprocess.run([str(hello_venv), "-c", BUILD_AND_CALL, str(config), str(tmp_path / "cache")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode != 0
    assert "hello.yaml:6:3: target 'hello' has no option 'greting' (did you mean 'greeting'?)" in done.stderr

"""The import face: ``import ksbind``, a generated torch wrapper's
``from ksbind.targets.torch import runtime as torch_runtime`` and ``ksbind --help`` load only what they
use (no jinja2, no yaml); every public name still resolves, on first use.
(The time it takes is a benchmark row: benchmarks/import_time.py.)"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

import ksbind

PROBE = """
import json, sys
before = set(sys.modules)
{code}
loaded = sorted(set(sys.modules) - before)
print(json.dumps(loaded))
"""


def loaded_by(code: str) -> list[str]:
    r = subprocess.run([sys.executable, "-c", PROBE.format(code=code)], capture_output=True, text=True, check=True)
    return json.loads(r.stdout.splitlines()[-1])


def test_import_ksbind_loads_only_the_face() -> None:
    loaded = loaded_by("import ksbind")
    assert [m for m in loaded if m.startswith("ksbind")] == ["ksbind", "ksbind._version"]
    assert not {"jinja2", "yaml", "pybind11", "torch", "logging"} & set(loaded)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_the_torch_wrappers_runtime_import_loads_no_generator() -> None:
    # The package alone loads its records only (codegen reads them without torch); a wrapper's
    # first call into it loads the rest.
    bare = loaded_by("from ksbind.targets.torch import runtime as torch_runtime")
    assert [m for m in bare if m.startswith("ksbind.targets.torch.runtime")] == [
        "ksbind.targets.torch.runtime", "ksbind.targets.torch.runtime.contract"]
    assert "torch" not in bare
    loaded = loaded_by("from ksbind.targets.torch import runtime as torch_runtime\ntorch_runtime.install_stable")
    runtime = [m for m in loaded if m.startswith("ksbind.targets.torch.runtime")]
    # The target's package and its parent are bare: they import nothing (ksbind/targets/__init__.py).
    assert [m for m in loaded if m.startswith("ksbind")] == ["ksbind", "ksbind._version", "ksbind.targets",
                                                            "ksbind.targets.torch", *runtime]
    assert sorted(runtime) == ["ksbind.targets.torch.runtime",
                               *(f"ksbind.targets.torch.runtime.{m}" for m in
                                 ("autograd", "calls", "contract", "loading", "packing", "support", "trees", "vmap"))]
    assert not {"jinja2", "yaml"} & set(loaded)


@pytest.mark.parametrize("package", ["ksbind.targets.torch.runtime", "ksbind.targets.jax.runtime"])
def test_a_runtime_packages_lazy_names_agree(package: str) -> None:
    """A runtime package names what it loads on first use in its TYPE_CHECKING imports (for mypy),
    in ``__all__`` and, for torch, in ``_LAZY`` (the module each comes from): the lists agree, so a
    name added to one and not the others fails here, not in a wrapper's first call or mypy's view."""
    import ast
    from pathlib import Path

    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    checked: dict[str, str] = {}  # name -> the module the TYPE_CHECKING block imports it from
    eager: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            checked.update({(a.asname or a.name): str(i.module) for i in node.body if isinstance(i, ast.ImportFrom)
                            for a in i.names})
        elif isinstance(node, ast.ImportFrom) and node.module == "contract":
            eager.update(a.asname or a.name for a in node.names)
    module = importlib.import_module(package)
    lazy = getattr(module, "_LAZY", None)
    if lazy is not None:
        assert lazy == checked, "_LAZY and the TYPE_CHECKING imports differ"
    assert set(module.__all__) == eager | {n for n in checked if not n.startswith("_")}
    for name in module.__all__:  # each resolves (torch and jax are installed here) from the module named
        value = getattr(module, name)
        if name in checked:
            assert value is getattr(importlib.import_module(f"{package}.{checked[name]}"), name), name


def test_cli_help_loads_no_generator() -> None:
    loaded = loaded_by("import ksbind.cli\ntry:\n    ksbind.cli.main(['--help'])\nexcept SystemExit:\n    pass")
    assert not {"jinja2", "yaml"} & set(loaded)


def test_each_public_name_resolves_on_first_use_and_is_kept() -> None:
    code = "import ksbind\n" + "".join(f"getattr(ksbind, {n!r})\n" for n in ksbind.__all__)
    assert {"ksbind.pipeline", "ksbind.codegen.render", "ksbind.load", "jinja2", "yaml"} <= set(loaded_by(code))
    for name in ksbind.__all__:
        value = getattr(ksbind, name)
        assert getattr(ksbind, name) is value
        assert name in dir(ksbind)
    assert ksbind.parse_type("(Vec Float)").mangled == "T1f"


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        ksbind.nope  # noqa: B018
    assert not hasattr(ksbind, "buildcache")


def test_readme_load_ks_example_shows_the_target_and_its_default() -> None:
    """The README's load_ks example passes target= and says which is the default, the one
    load_ks really has (a torch user is otherwise surprised by plain Python values)."""
    import inspect
    import re
    from pathlib import Path

    import ksbind

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    example = next(block for block in readme.split("```python")[1:] if "load_ks(" in block.split("```")[0])
    example = example.split("```")[0]
    default = inspect.signature(ksbind.load_ks).parameters["target"].default
    assert re.search(rf'target="{default}"\)?\s*# the default', example), example
    assert f"`target=` defaults to `{default}`" in readme


def test_load_ks_keywords_are_its_options_record() -> None:
    """load_ks's options are one record (LoadOptions): every keyword argument is a field with its
    default (help() lists them), ``options=`` takes the record, keywords override it, and a wrong
    keyword is a TypeError before anything is written."""
    import dataclasses
    import inspect
    import typing

    import pytest

    import ksbind
    from ksbind.load import LoadKeywords, LoadOptions, with_load_keywords
    from ksbind.settings import settings_of, with_options
    from ksbind.spec import ModuleSpec

    fields = dataclasses.fields(LoadOptions)
    assert typing.get_type_hints(LoadKeywords) == typing.get_type_hints(LoadOptions)
    source = inspect.getsource(sys.modules["ksbind.load"])
    assert with_load_keywords(source) == source, "LoadKeywords differs from LoadOptions: run " \
                                                 "python scripts/generate_settings.py"
    assert with_load_keywords(source.replace("    quiet: bool\n", "    quiet: int\n", 1)) == source
    # The module keys load_ks takes restate the config's: the same type and default, but where
    # load_ks takes its own form (paths as text, a module named by its text's digest, the python target).
    model = {s.field: s for s in settings_of(ModuleSpec)}
    hints = typing.get_type_hints(LoadOptions)
    own_form = {f.name for f in fields if f.name in model and (hints[f.name], f.default) !=
                (model[f.name].type, model[f.name].default)}
    assert own_form == {"target", "name", "ksc", "cpp", "stubs"}
    assert {f.name for f in fields if f.name in model} - own_form == {"arena_bytes", "torch_library", "fast_math",
                                                                        "debug"}
    params = inspect.signature(ksbind.load_ks).parameters
    assert [(n, p.default) for n, p in params.items() if n not in ("ks_text", "bindings", "options")] == \
        [(f.name, f.default) for f in fields]
    assert [f.name for f in fields] == ["target", "name", "ksc", "ksc_runtime", "cpp", "arena_bytes", "torch_library",
                                        "fast_math", "cache_dir", "stubs", "quiet", "debug"]
    base = LoadOptions(target="ks", name="m", arena_bytes=4096)
    assert with_options(LoadOptions, base, {"arena_bytes": 8192, "quiet": True}, "load_ks") == \
        LoadOptions(target="ks", name="m", arena_bytes=8192, quiet=True)
    assert with_options(LoadOptions, None, {"debug": True}, "load_ks") == LoadOptions(debug=True)
    with pytest.raises(TypeError, match=r"load_ks\(\) got an unexpected keyword argument 'fastmath' "
                                        r"\(did you mean 'fast_math'\?\)"):
        ksbind.load_ks("(def f Float ((x : Float)) x)", fastmath=True)  # type: ignore[call-arg]

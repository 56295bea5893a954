"""The torch target at generation time (no compiler): crossing rules, mode and
torch_library checks (BindingError before anything is written), and what the
rendered files include."""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

import ksbind
from ksbind.codegen.targets import torch as torch_target
from ksbind.errors import BindingError, ConfigError
from ksbind.lang.types import parse_type
from ksbind.spec import BindingSpec

REPO = Path(__file__).resolve().parents[1]

DECLS = ksbind.parse_ks("""
(edef relu3 Float (Float))
(edef mulsin Float (Float Float))
(edef vrelu3 (Vec Float) ((Vec Float)))
(edef sumsq Float ((Vec Float)))
(edef scale (Vec Float) ((Vec Float) Float))
(edef norm Float (Float))
(edef count Integer (Integer))
(edef nested (Vec (Vec Float)) ((Vec (Vec Float))))
(edef pair (Tuple Float (Vec Float)) ((Vec Float)))
(edef texts (Vec String) (String))
(edef pairarg Float ((Tuple (Vec Float) Float)))
(edef grid (Tensor 2 (Vec Float)) ((Tensor 2 (Vec Float))))
(edef tuparg Float ((Tuple (Vec Float) Float) Integer))
(edef stats (Tuple Float Integer (Vec Float)) ((Vec Float)))
(edef [sufrev stats] (Vec Float) ((Vec Float) (Tuple Float (Tuple) (Vec Float))))
(edef [sufrev nested] (Vec (Vec Float)) ((Vec (Vec Float)) (Vec (Vec Float))))
""", "decls.ks")


def render(*specs: BindingSpec, torch_library: str | None = None) -> ksbind.RenderedModule:
    return ksbind.render_module(DECLS, "m", "torch", bindings=list(specs), torch_library=torch_library)


TT = "ksbind::torch_target::"


@pytest.mark.parametrize("text, entry, result_entry", [
    ("(Vec Float)", "at::Tensor", "at::Tensor"),
    ("(Tensor 3 Integer)", "at::Tensor", "at::Tensor"),
    # Numbers in: a Python number or a 0-dim tensor; numbers out: 0-dim tensors.
    ("Float", f"{TT}ScalarArg<ks::Float>", "at::Tensor"),
    ("(Tuple Integer Bool)", f"std::tuple<{TT}ScalarArg<ks::Integer>, {TT}ScalarArg<ks::Bool>>",
     "std::tuple<at::Tensor, at::Tensor>"),
    ("(Tuple (Vec Bool) Float)", f"std::tuple<at::Tensor, {TT}ScalarArg<ks::Float>>",
     "std::tuple<at::Tensor, at::Tensor>"),
    # Tensors of tensors: stacked or a list; tensors of tuples: lists.
    ("(Vec (Vec Float))", f"{TT}Nested<at::Tensor>", f"{TT}Nested<at::Tensor>"),
    ("(Vec (Vec (Tensor 2 Integer)))", f"{TT}Nested<{TT}Nested<at::Tensor>>", f"{TT}Nested<{TT}Nested<at::Tensor>>"),
    ("(Vec (Tuple (Vec Float) Float))", f"std::vector<std::tuple<at::Tensor, {TT}ScalarArg<ks::Float>>>",
     "std::vector<std::tuple<at::Tensor, at::Tensor>>"),
    # Tangents of discrete values hold nothing: ().
    ("(Vec (Tuple))", "std::tuple<>", "std::tuple<>"),
    ("(Tuple Float (Tuple))", f"std::tuple<{TT}ScalarArg<ks::Float>, std::tuple<>>", "std::tuple<at::Tensor, std::tuple<>>"),
])
def test_crossing_rules(text: str, entry: str, result_entry: str) -> None:
    t = parse_type(text)
    c = torch_target.crossing(t, "param")
    assert (c.entry_type, c.converter) == (entry, f"{TT}from_torch<{t.cpp}>")
    out = torch_target.crossing(t, "result")
    assert (out.entry_type, out.converter) == (result_entry, f"{TT}to_torch")


def test_strings_cross_as_python_strings() -> None:
    for role in ("param", "result"):
        c = torch_target.crossing(parse_type("(Tuple String String)"), role)
        assert (c.entry_type, c.converter, c.py_type) == ("ks::Tuple<ks::String,ks::String>", "", "tuple[str, str]")


@pytest.mark.parametrize("text, param, result", [
    ("Float", "float | torch.Tensor", "torch.Tensor"),
    ("(Vec (Vec Float))", "torch.Tensor | Sequence[torch.Tensor]", "torch.Tensor | list[torch.Tensor]"),
    ("(Vec (Tuple Integer (Vec Float)))", "Sequence[tuple[int | torch.Tensor, torch.Tensor]]",
     "list[tuple[torch.Tensor, torch.Tensor]]"),
    ("(Tuple)", "tuple[()]", "tuple[()]"),
])
def test_stub_types(text: str, param: str, result: str) -> None:
    t = parse_type(text)
    assert torch_target.py_type(t, "param") == param
    assert torch_target.py_type(t, "result") == result


def test_plain_files_include_torch_headers_only_where_needed() -> None:
    files = render(BindingSpec("vrelu3", "vrelu3", "vrelu3_vjp")).files
    assert set(files) >= {"entry_points.h", "entry_points.cpp", "module.cpp", "m.py", "m.pyi"}
    # The entry points see ATen's core headers (through ksbind/torch.h), not torch/extension.h.
    assert '#include <ksbind/torch.h>' in files["entry_points.h"]
    assert "torch/" not in files["entry_points.h"] + files["entry_points.cpp"]
    assert "#include <torch/csrc/utils/pybind.h>" in files["module.cpp"]
    assert "torch/extension.h" not in files["module.cpp"]
    cpp = files["entry_points.cpp"]
    assert 'from_torch<ks::tensor<1, ks::Float>>(&g_alloc, arg0, "arg0")' in cpp or "from_torch<ks::tensor<1, ks::Float>>" in cpp
    assert "ksbind::CallArena arena;" in cpp and "to_torch(ret)" in cpp
    # Autograd is routed from C++ only when grad mode is on and the tensor requires grad.
    assert "c10::GradMode::is_enabled() && (ksbind::torch_target::requires_grad(arg0))" in files["module.cpp"]
    assert "'autograd': True" in files["m.py"] and "torch_library=None" in files["m.py"]


def test_elementwise_and_vmap_render_loops() -> None:
    files = render(BindingSpec("relu3", "relu3", "relu3_vjp", "elementwise"),
                   BindingSpec("mulsin", "mulsin", "mulsin_vjp", "elementwise"),
                   BindingSpec("rows", "sumsq", "rows_vjp", "vmap")).files
    cpp = files["entry_points.cpp"]
    assert "tt::elementwise(bc, std::array<float*, 1>" in cpp and "tt::broadcast<2>" in cpp
    # (the lambda's parameters are the ks values: arg0 or arg0_ks, as the entry names them)
    assert re.search(r"ks::sufrev\$mulsin\$aff\(alloc, ks::make_Tuple\(arg0(_ks)?, arg1(_ks)?\), arg2(_ks)?\)", cpp)
    assert "tt::elementwise(bc, std::array<float*, 2>" in cpp  # two gradients per element
    assert "tt::Stacker<ks::Float> out(batch);" in cpp and "tt::parallel_steps(batch" in cpp
    assert "at::Tensor rows_vjp(at::Tensor arg0, at::Tensor arg1)" in files["entry_points.h"]
    # The stub shows what Python passes in these modes: tensors.
    stub = files["m.pyi"]
    assert "def relu3(arg0: torch.Tensor) -> torch.Tensor:" in stub
    assert ("def mulsin_vjp(arg0: torch.Tensor, arg1: torch.Tensor, dret: torch.Tensor) "
            "-> tuple[torch.Tensor, torch.Tensor]:") in stub
    assert "def rows(arg0: torch.Tensor) -> torch.Tensor:" in stub


@pytest.mark.parametrize("spec, words", [
    (BindingSpec("v", "vrelu3", None, "elementwise"), ["elementwise", "Float -> Float"]),
    (BindingSpec("c", "count", None, "elementwise"), ["elementwise"]),
    (BindingSpec("n", "norm", None, "vmap"), ["vmap", "takes no tensor"]),
    (BindingSpec("s", "scale", "s_vjp", "vmap"), ["vmap with a vjp", "shared"]),
    (BindingSpec("p", "pair", "p_vjp", "vmap"), ["vmap", "(Tuple Float (Tensor 1 Float))"]),
    (BindingSpec("g", "grid"), ["(Tensor 2 (Tensor 1 Float))", "rank-2", "python target"]),
    (BindingSpec("t", "texts"), ["(Tensor 1 String)"]),
])
def test_signatures_that_do_not_fit_raise_binding_error(spec: BindingSpec, words: list[str]) -> None:
    with pytest.raises(BindingError) as info:
        render(spec)
    for w in words:
        assert w in str(info.value)


def test_torch_library_warns_for_and_keeps_what_it_cannot_express() -> None:
    """A binding torch.library cannot express is named in a warning and bound as
    a plain function; the module's other bindings still become ops."""
    with pytest.warns(ksbind.KsbindWarning, match=r"binding 'pa' \(.*tuparg.*\) is not a torch.library op") as got:
        files = render(BindingSpec("pa", "tuparg"), BindingSpec("s", "sumsq"), BindingSpec("pr", "pair"),
                       BindingSpec("st", "stats", "st_vjp"), BindingSpec("n", "nested", "n_vjp"),
                       torch_library="ns").files
    assert len(got) == 1
    py = files["m.py"]
    assert "'name': 'pa'," in py and "'op': False" in py
    # Numbers come back as 0-dim tensors: scalar and tuple-of-scalar results are ops.
    assert "'schema': '(Tensor arg0) -> Tensor'" in py
    assert "'schema': '(Tensor arg0) -> (Tensor, Tensor)'" in py
    assert "'schema': '(Tensor arg0) -> (Tensor, Tensor, Tensor)'" in py
    # A tuple result's gradient reaches the vjp op as a list of tensors.
    assert "'vjp_schema': '(Tensor arg0, Tensor[] dret) -> Tensor'" in py
    # A tensor of tensors is one stacked tensor for an op.
    assert "'vjp_schema': '(Tensor arg0, Tensor dret) -> Tensor'" in py
    # Only the binding that is not an op routes to a Python Function (pa has no vjp: for
    # torch.func's tensors alone); the ops carry their own autograd and batching rules.
    assert "static PyObject* ksbind_autograd[1]" in files["module.cpp"]
    assert 'if (name == "pa") slot = 0;' in files["module.cpp"]
    assert "(c10::GradMode::is_enabled()" not in files["module.cpp"]


def test_torch_library_schemas() -> None:
    files = render(BindingSpec("vrelu3", "vrelu3", "vrelu3_vjp"),
                   BindingSpec("mulsin", "mulsin", "mulsin_vjp", "elementwise"),
                   BindingSpec("rows", "vrelu3", "rows_vjp", "vmap"), torch_library="my_ops").files
    py = files["m.py"]
    assert "'schema': '(Tensor t) -> Tensor'" in py or "'schema': '(Tensor arg0) -> Tensor'" in py
    assert "(Tensor arg0, Tensor arg1, Tensor dret) -> (Tensor, Tensor)" in py
    assert "torch_library='my_ops'" in py
    # With torch.library the ops carry autograd: no C++ routing to a Python Function.
    assert "_set_autograd" not in files["module.cpp"]


def test_bad_binding_writes_nothing(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(f"""name: bad
target: torch
declarations: |
  (edef vrelu3 (Vec Float) ((Vec Float)))
bindings:
  - {{name: v, function: vrelu3, mode: elementwise}}
output: {tmp_path / 'out'}
""")
    with pytest.raises(BindingError) as info:
        ksbind.generate(config)
    assert info.value.location is not None and info.value.location.file == str(config)
    assert not (tmp_path / "out").exists()


def test_torch_library_needs_torch_target(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("name: c\ntarget: python\ntorch_library: ns\ndeclarations: '(edef f Float (Float))'\n")
    with pytest.raises(ConfigError, match="torch_library"):
        ksbind.load_config(config)


def test_shipped_torch_configs_render() -> None:
    for config in sorted((REPO / "configs").glob("*torch*.yaml")):
        for spec in ksbind.load_config(config):
            assert spec.target in ("torch", "torch_stable")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert ksbind.pipeline.prepare(config)
        # The one module of packed bindings says so, once per binding; nothing else warns.
        said = [str(w.message) for w in caught]
        assert all("a plain function over an op of packed tensors" in m for m in said), said
        assert len(said) == (3 if config.name == "torch_stable.yaml" else 0), said


def test_single_file_layout_holds_everything() -> None:
    files = ksbind.render_module(DECLS, "m", "torch", bindings=[BindingSpec("relu3", "relu3", "relu3_vjp",
                                                                            "elementwise")], layout="single").files
    assert set(files) == {"module.cpp", "m.py", "m.pyi"}
    cpp = files["module.cpp"]
    assert '#include "entry_points.h"' not in cpp
    assert cpp.index('#include <ksbind/torch.h>') < cpp.index("at::Tensor relu3(at::Tensor arg0) {") \
        < cpp.index("PYBIND11_MODULE")


def test_unit_includes_ks_sources_then_entry_points(tmp_path: Path) -> None:
    from ksbind.backend.torch_build import unit_text

    spec = ksbind.load_config(REPO / "configs" / "relu3_torch.yaml")[0]
    text = unit_text(spec, tmp_path / "entry_points.cpp")
    lines = [ln for ln in text.splitlines() if ln.startswith("#include")]
    assert lines == [f'#include "{(REPO / "examples" / "relu3" / "relu3.cpp").resolve()}"',
                     f'#include "{(tmp_path / "entry_points.cpp").resolve()}"']




# ------------------------------------------------------------ which torch a module runs on

def test_an_older_torch_is_refused_naming_both_versions() -> None:
    from ksbind import torch_runtime

    with pytest.raises(ImportError, match=r"m_ext was built against torch 2\.13\.0 and cannot run on an older "
                                          r"torch; this process has torch 2\.12\.1\+cpu"):
        torch_runtime.check_torch("m_ext", "2.13.0", running="2.12.1+cpu")
    with pytest.raises(ImportError, match=r"built against torch 2\.13\.0 .* this process has torch 2\.9\.1"):
        torch_runtime.check_torch("m_ext", "2.13.0", running="2.9.1")  # 9 < 13 as numbers, not as text
    for running in ("2.13.0", "2.13.0+cu130", "2.14.1", "2.100.0"):  # the same torch, or a newer one: loaded
        torch_runtime.check_torch("m_ext", "2.13.0", running=running)
    torch_runtime.check_torch("m_ext", None, running="1.0")  # no record (not a ksbind extension): no check


def test_an_extension_that_does_not_load_names_the_torch_it_needs(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """An extension file that the loader refuses (here: not a shared library at all, as an undefined
    torch symbol would be refused) is an ImportError naming the torch it was built against, read
    from its bytes, and the running one."""
    import importlib.machinery

    import torch

    from ksbind import torch_runtime

    name = "ksbind_fake_torch_ext"
    (tmp_path / (name + importlib.machinery.EXTENSION_SUFFIXES[0])).write_bytes(
        b"not an ELF file\0ksbind-torch-built=2.99.0;\0")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError) as raised:
        torch_runtime.extension(name)
    text = str(raised.value)
    assert text.startswith(f"{name}: the compiled extension did not load under torch {torch.__version__} "
                           f"(it was built against torch 2.99.0; "), text
    assert raised.value.__cause__ is not None and str(raised.value.__cause__) in text

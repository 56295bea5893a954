"""The torch target at generation time (no compiler): crossing rules, mode and
torch_library checks (BindingError before anything is written), and what the
rendered files include."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import ksbind
from ksbind.binding import BindingSpec
from ksbind.errors import BindingError, ConfigError
from ksbind.targets import torch as torch_target
from ksbind.types import parse_type

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
""", "decls.ks")


def render(*specs: BindingSpec, torch_library: str | None = None) -> ksbind.RenderedModule:
    return ksbind.render_module(DECLS, "m", "torch", bindings=list(specs), torch_library=torch_library)


@pytest.mark.parametrize("text, entry, converter", [
    ("(Vec Float)", "at::Tensor", "ksbind::torch_target::from_torch<ks::tensor<1, ks::Float>>"),
    ("(Tensor 3 Integer)", "at::Tensor", "ksbind::torch_target::from_torch<ks::tensor<3, ks::Integer>>"),
    ("Float", "ks::Float", ""),
    ("(Tuple Integer Bool)", "ks::Tuple<ks::Integer,ks::Bool>", ""),
    ("(Tuple (Vec Bool) Float)", "std::tuple<at::Tensor, ks::Float>",
     "ksbind::torch_target::from_torch<ks::Tuple<ks::tensor<1, ks::Bool>,ks::Float>>"),
])
def test_crossing_rules(text: str, entry: str, converter: str) -> None:
    c = torch_target.crossing(parse_type(text), "param")
    assert (c.entry_type, c.converter) == (entry, converter)
    out = torch_target.crossing(parse_type(text), "result")
    assert out.entry_type == entry
    assert out.converter == ("ksbind::torch_target::to_torch" if converter else "")


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
    assert "ksbind::ArenaScope" in cpp and "to_torch(ret)" in cpp
    # Autograd is routed from C++ only when grad mode is on and the tensor requires grad.
    assert "c10::GradMode::is_enabled() && (arg0.requires_grad())" in files["module.cpp"]
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
    (BindingSpec("x", "nested"), ["(Tensor 1 (Tensor 1 Float))", "python target"]),
    (BindingSpec("t", "texts"), ["(Tensor 1 String)"]),
])
def test_signatures_that_do_not_fit_raise_binding_error(spec: BindingSpec, words: list[str]) -> None:
    with pytest.raises(BindingError) as info:
        render(spec)
    for w in words:
        assert w in str(info.value)


@pytest.mark.parametrize("spec, words", [
    (BindingSpec("s", "sumsq"), ["torch_library", "Float"]),
    (BindingSpec("pa", "pairarg"), ["torch_library", "tuple"]),
    (BindingSpec("pr", "pair"), ["torch_library"]),
])
def test_torch_library_signature_checks(spec: BindingSpec, words: list[str]) -> None:
    with pytest.raises(BindingError) as info:
        render(spec, torch_library="ns")
    for w in words:
        assert w in str(info.value)


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
            assert spec.target == "torch"
        assert ksbind.pipeline.prepare(config)


def test_single_file_layout_holds_everything() -> None:
    files = ksbind.render_module(DECLS, "m", "torch", bindings=[BindingSpec("relu3", "relu3", "relu3_vjp",
                                                                            "elementwise")], layout="single").files
    assert set(files) == {"module.cpp", "m.py", "m.pyi"}
    cpp = files["module.cpp"]
    assert '#include "entry_points.h"' not in cpp
    assert cpp.index('#include <ksbind/torch.h>') < cpp.index("at::Tensor relu3(at::Tensor arg0) {") \
        < cpp.index("PYBIND11_MODULE")


def test_unit_includes_ks_sources_then_entry_points(tmp_path: Path) -> None:
    from ksbind.build_torch import unit_text

    spec = ksbind.load_config(REPO / "configs" / "relu3_torch.yaml")[0]
    text = unit_text(spec, tmp_path / "entry_points.cpp")
    lines = [ln for ln in text.splitlines() if ln.startswith("#include")]
    assert lines == [f'#include "{(REPO / "examples" / "relu3" / "relu3.cpp").resolve()}"',
                     f'#include "{(tmp_path / "entry_points.cpp").resolve()}"']


def test_build_error_reports_the_compilers_first_error(tmp_path: Path) -> None:
    import dataclasses

    from ksbind.build_torch import _build_error

    spec = dataclasses.replace(ksbind.load_config(REPO / "configs" / "relu3_torch.yaml")[0], output=tmp_path)
    output = ("Error building extension 'x_ext': [1/3] c++ -MMD ... -c /b/module.cpp -o module.o\n"
              "FAILED: module.o\n/b/relu3.cpp:7:5: error: 'foo' was not declared in this scope\n"
              "/b/relu3.cpp:9:1: error: expected ';'\n")
    err = _build_error(spec, tmp_path / "entry_points.cpp", output)
    assert "/b/relu3.cpp:7:5: error: 'foo' was not declared in this scope" in str(err)
    assert "expected ';'" not in str(err)
    assert (tmp_path / "torch_build.log").read_text() == output

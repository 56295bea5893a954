"""The python target's module on Python's C API (ksbind/python_module.h): arguments by
position or keyword, a TypeError naming the signature on a bad call, docstrings with the
signature line, exceptions raised by Python code inside a conversion passed through, and
no pybind11 in its generated code.

Uses the session-built examples modules (no build of its own)."""
from __future__ import annotations

import ast
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import pytest

import ksbind
from ksbind.spec import BindingSpec

M = [[1.0, 2.0], [3.0, 4.0]]
V = [0.5, -1.0]


def test_keywords_and_positions_give_the_same_values(py_examples: ModuleType) -> None:
    p = py_examples
    expected = p.matvec(M, V)
    assert expected == [-1.5, -2.5]
    assert p.matvec(m=M, v=V) == expected
    assert p.matvec(v=V, m=M) == expected
    assert p.matvec(M, v=V) == expected
    assert p.matvec_vjp(M, V, dret=[1.0, 1.0]) == p.matvec_vjp(M, V, [1.0, 1.0])
    assert p.allocator_top() == 0


@pytest.mark.parametrize("call, problem", [
    (lambda p: p.matvec(M), "missing argument 'v'"),
    (lambda p: p.matvec(M, V, V), "takes 2 arguments, got 3"),
    (lambda p: p.matvec(M, V, w=1), "unexpected keyword argument 'w'"),
    (lambda p: p.matvec(M, m=M), "multiple values for argument 'm'"),
    (lambda p: p.relu3(), "missing argument 'x'"),
    (lambda p: p.relu3(1.0, 2.0), "takes 1 argument, got 2"),
    (lambda p: p.shout(arg0="a", arg2=1), "unexpected keyword argument 'arg2'"),
])
def test_a_bad_call_names_the_problem_and_the_signature(py_examples: ModuleType, call: Any, problem: str) -> None:
    with pytest.raises(TypeError) as info:
        call(py_examples)
    text = str(info.value)
    assert "incompatible function arguments" in text and problem in text, text
    name = text.split("(")[0]
    assert f"Expected {getattr(py_examples, name).__doc__.splitlines()[0]}" in text
    assert py_examples.allocator_top() == 0


def test_support_functions_check_their_arguments(py_examples: ModuleType) -> None:
    p = py_examples
    with pytest.raises(TypeError, match="argument 'on': expected a bool, got int"):
        p.logging(1)
    with pytest.raises(TypeError, match="argument 'bytes': expected an int, got str"):
        p.set_arena_bytes("big")
    with pytest.raises(ValueError, match="argument 'bytes': expected a non-negative int"):
        p.set_arena_bytes(-1)
    with pytest.raises(ValueError, match="arena_bytes must be positive"):
        p.set_arena_bytes(0)
    with pytest.raises(TypeError, match="incompatible function arguments: takes 0 arguments, got 1"):
        p.allocator_top(1)
    assert isinstance(p.arena_bytes(), int) and p.arena_bytes() > 0
    assert p.allocator_top() == 0 and p.reset_allocator() is None


def _names_in(signature: str) -> list[str]:
    """Parameter names of a signature line ``f(a: T, b: list[tuple[A, B]]) -> R``."""
    inside = signature[signature.index("(") + 1:signature.rindex(") ->")]
    names, depth, start = [], 0, 0
    for i, ch in enumerate(inside + ","):  # split at the commas outside brackets
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            if inside[start:i].strip():
                names.append(inside[start:i].split(":")[0].strip())
            start = i + 1
    return names


def test_docstrings_start_with_the_stub_signature(py_examples: ModuleType) -> None:
    """The first docstring line of every function is its stub's signature (what pybind11 writes),
    then the ks signature."""
    assert py_examples.__file__ is not None
    stub_path = f"{py_examples.__file__.rsplit('/', 1)[0]}/{py_examples.__name__}.pyi"
    with open(stub_path) as f:
        stub = ast.parse(f.read())
    defs = {n.name: n for n in stub.body if isinstance(n, ast.FunctionDef)}
    assert {"relu3", "matvec", "mix", "set_arena_bytes"} <= set(defs)
    for name, node in defs.items():
        fn = getattr(py_examples, name)
        assert fn.__module__ == py_examples.__name__ and fn.__name__ == name
        first = fn.__doc__.splitlines()[0]
        assert node.returns is not None, name
        assert first.startswith(f"{name}(") and first.endswith(f"-> {ast.unparse(node.returns)}"), first
        assert _names_in(first) == [a.arg for a in node.args.posonlyargs + node.args.args], first
    assert "[relu3 Float]" in py_examples.relu3.__doc__


class Exploding(Sequence):
    """A sequence whose items raise: the exception reaches the caller unchanged."""

    def __len__(self) -> int:
        return 2

    def __getitem__(self, i: Any) -> Any:
        raise KeyError("boom")


def test_an_exception_raised_inside_a_conversion_passes_through(py_examples: ModuleType) -> None:
    with pytest.raises(KeyError, match="boom"):
        py_examples.matvec(Exploding(), V)  # the shape is read from m[0]
    assert py_examples.allocator_top() == 0
    assert py_examples.matvec(M, V) == [-1.5, -2.5]  # and the module still works


def test_the_generated_code_has_no_pybind11() -> None:
    decls = ksbind.parse_ks("(edef [f (Tuple Float Integer)] Float (Float Integer))\n")
    for layout in ("split", "single"):
        files = ksbind.render_module(decls, "m", "python", layout=layout, bindings=[BindingSpec("f")]).files
        cpp = {k: v for k, v in files.items() if k.endswith((".cpp", ".h"))}
        assert cpp and not any("pybind11" in text for text in cpp.values()), layout
        assert "#include <ksbind/python_module.h>" in files["module.cpp"]
        assert "PyModuleDef_Init" in files["module.cpp"]

"""Rendering without building, for the tests of generated files (tests/test_render.py,
tests/test_templates.py, tests/test_stubs.py): the declarations and bindings they
share, and one call that renders a module of them."""
from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Any

import ksbind
from ksbind.codegen.render import RenderedModule
from ksbind.lang.model import FunctionDecl
from ksbind.spec import BindingSpec, TargetName

#: Three edefs: a tensor function, a tuple one and a tensor-to-scalar one.
EDEFS = """
(edef [vrelu3 (Tensor 1 Float)] (Tensor 1 Float) ((Tensor 1 Float)))
(edef [f (Tuple Float Integer)] (Tuple Float Float) (Float Integer))
(edef [g (Tensor 2 Float)] Float ((Tensor 2 Float)))
"""
#: Their bindings: vrelu3 and g with a vjp each.
BINDINGS = (BindingSpec("vrelu3", None, "vrelu3_vjp"), BindingSpec("f"), BindingSpec("g", None, "g_vjp"))


def render(target: TargetName = "ks", templates: Sequence[str | os.PathLike[str]] = (), *, source: str = EDEFS,
           bindings: Sequence[BindingSpec] = BINDINGS, name: str = "m", **options: Any) -> RenderedModule:
    """render_module of a ks source's declarations, with these bindings and render_module's other options."""
    if templates:  # only when given: render_module takes options= or the settings, not both
        options["templates"] = templates
    return ksbind.render_module(_decls(source), name, target, bindings=list(bindings), **options)


@functools.cache
def _decls(source: str) -> tuple[FunctionDecl, ...]:
    return tuple(ksbind.parse_ks(source))

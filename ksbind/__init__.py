"""ksbind: C++ entry points and Python/PyTorch bindings for Knossos-compiled functions.

The public face (``__all__``, documented in docs/api.md) is resolved lazily: ``import ksbind``
loads only this file and ``_version``, so a generated torch wrapper's
``from ksbind.targets.torch import runtime as torch_runtime`` and ``ksbind --help`` pay for nothing
else (no jinja2, no yaml). Each name is imported on first use and then kept
here. The functions are wrapped by ``_public_call``: a KsbindError they
raise carries a traceback that ends at the user's call (docs/errors.md).
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from ksbind._version import __version__

if TYPE_CHECKING:
    from ksbind.build_api import build
    from ksbind.codegen.render import RenderedModule, render_module
    from ksbind.compile_api import compile
    from ksbind.config import load_config
    from ksbind.errors import KsbindError, KsbindWarning, Location
    from ksbind.lang.model import FunctionDecl, StructuredName
    from ksbind.lang.reader import parse_ks, read_ks
    from ksbind.lang.types import KsType, parse_type
    from ksbind.load import load_ks
    from ksbind.pipeline import generate
    from ksbind.spec import ModuleSpec

#: name -> (module, attribute, wrapped by _public_call)
_FACE: dict[str, tuple[str, str, bool]] = {
    "KsbindError": ("ksbind.errors", "KsbindError", False),
    "KsbindWarning": ("ksbind.errors", "KsbindWarning", False),
    "Location": ("ksbind.errors", "Location", False),
    "KsType": ("ksbind.lang.types", "KsType", False),
    "parse_type": ("ksbind.lang.types", "parse_type", True),
    "FunctionDecl": ("ksbind.lang.model", "FunctionDecl", False),
    "StructuredName": ("ksbind.lang.model", "StructuredName", False),
    "parse_ks": ("ksbind.lang.reader", "parse_ks", True),
    "read_ks": ("ksbind.lang.reader", "read_ks", True),
    "ModuleSpec": ("ksbind.spec", "ModuleSpec", False),
    "load_config": ("ksbind.config", "load_config", True),
    "RenderedModule": ("ksbind.codegen.render", "RenderedModule", False),
    "render_module": ("ksbind.codegen.render", "render_module", True),
    "generate": ("ksbind.pipeline", "generate", True),
    "build": ("ksbind.build_api", "build", True),  # a no-op build checks its record before importing the pipeline
    "load_ks": ("ksbind.load", "load_ks", True),
    "compile": ("ksbind.compile_api", "compile", True),
}

__all__ = [
    "__version__", "KsbindError", "KsbindWarning", "Location", "KsType", "parse_type", "FunctionDecl",
    "StructuredName", "parse_ks", "read_ks", "ModuleSpec", "load_config", "RenderedModule", "render_module",
    "generate", "build", "load_ks", "compile",
]
assert __all__[1:] == list(_FACE), "the face's names and __all__ must agree"


def _public_call(fn: Any) -> Any:
    """``fn`` as the face exports it: a KsbindError it raises keeps its message,
    location and type but not ksbind's own frames, so the traceback a user sees
    ends at this call (their line, then this wrapper). KSBIND_VERBOSE=2 keeps
    every frame (for reporting a bug in ksbind). ksbind.errors is imported only
    when something is raised: a no-op build (ksbind/build_api.py) never needs it."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as error:
            from ksbind.errors import KsbindError  # loaded already by whatever raised one

            if not isinstance(error, KsbindError):
                raise
            from ksbind.log import debug_enabled

            if debug_enabled():
                raise
            raise error.with_traceback(None)  # noqa: B904 - the same error, less ksbind's frames

    return call


def __getattr__(name: str) -> Any:
    try:
        module_name, attribute, wrapped = _FACE[name]
    except KeyError:
        raise AttributeError(f"module 'ksbind' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module_name), attribute)
    if wrapped:
        value = _public_call(value)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

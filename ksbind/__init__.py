"""ksbind: C++ entry points and Python/PyTorch bindings for Knossos-compiled functions.

The functions below are wrapped by ``errors.public_call``: a KsbindError they
raise carries a traceback that ends at the user's call (docs/errors.md).
"""
from ._version import __version__
from .build import build as _build
from .config import ModuleSpec, load_config as _load_config
from .errors import KsbindError, KsbindWarning, Location, public_call as _public_call
from .load import load_ks as _load_ks
from .model import FunctionDecl, StructuredName
from .pipeline import generate as _generate
from .reader import parse_ks as _parse_ks, read_ks as _read_ks
from .render import RenderedModule, render_module as _render_module
from .types import KsType, parse_type as _parse_type

build = _public_call(_build)
load_config = _public_call(_load_config)
load_ks = _public_call(_load_ks)
generate = _public_call(_generate)
parse_ks = _public_call(_parse_ks)
read_ks = _public_call(_read_ks)
render_module = _public_call(_render_module)
parse_type = _public_call(_parse_type)

__all__ = [
    "__version__", "KsbindError", "KsbindWarning", "Location", "load_ks", "KsType", "parse_type", "FunctionDecl", "StructuredName",
    "parse_ks", "read_ks", "render_module", "RenderedModule", "ModuleSpec", "load_config", "generate", "build",
]

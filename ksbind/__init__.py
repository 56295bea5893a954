"""ksbind: C++ entry points and Python/PyTorch bindings for Knossos-compiled functions."""
from ._version import __version__
from .build import build
from .config import ModuleSpec, load_config
from .errors import KsbindError, KsbindWarning, Location
from .load import load_ks
from .model import FunctionDecl, StructuredName
from .pipeline import generate
from .reader import parse_ks, read_ks
from .render import RenderedModule, render_module
from .types import KsType, parse_type

__all__ = [
    "__version__", "KsbindError", "KsbindWarning", "Location", "load_ks", "KsType", "parse_type", "FunctionDecl", "StructuredName",
    "parse_ks", "read_ks", "render_module", "RenderedModule", "ModuleSpec", "load_config", "generate", "build",
]

"""The plain records every stage hands the next: what a config says about a
module (ModuleSpec and its parts), a binding before and after selection, and
the options a renderer needs (ModuleOptions), with the constants that bound
their fields. Frozen dataclasses only: no logic, no I/O, nothing above
``ksbind.lang`` imported."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ksbind.errors import Location
from ksbind.lang.model import FunctionDecl

# -- from ksbind.binding
MODES = ("plain", "elementwise", "vmap")


#: Where a binding's vjp comes from: [sufrev F] when declared, else [rev F] ("auto"), or one of them.
VJP_SOURCES = ("auto", "sufrev", "rev")


#: When a binding's ks call runs with the GIL released (docs/config.md): "auto" when the call is
#: worth it (enough tensor data, or the binding is marked ``long``; every call on the torch target).
GIL_POLICIES = ("auto", "always", "never")


#: Names every generated module defines itself.
RESERVED_NAMES = frozenset({"reset_allocator", "allocator_top", "allocator_peak", "logging",
                            "set_arena_bytes", "arena_bytes"})


@dataclass(frozen=True)
class BindingSpec:
    """One entry of a config's ``bindings:`` list, not yet resolved."""

    name: str
    function: str | None = None
    vjp: str | None = None
    mode: str = "plain"
    location: Location | None = field(default=None, compare=False)
    vjp_from: str = "auto"
    release_gil: str = "auto"
    long_call: bool = False
    #: A Python expression for the result's shape where it depends on values (jax target; docs/jax.md).
    result_shape: str | None = None


@dataclass(frozen=True)
class Binding:
    name: str
    decl: FunctionDecl
    vjp_name: str | None = None
    vjp_decl: FunctionDecl | None = None
    mode: str = "plain"
    location: Location | None = field(default=None, compare=False)
    release_gil: str = "auto"
    long_call: bool = False
    result_shape: str | None = None

# -- from ksbind.ksc.driver
DEFAULT_TIMEOUT = 300.0


@dataclass(frozen=True)
class KscSpec:
    """A config's ``ksc:`` mapping (None fields: $KSC / $KSC_RUNTIME, then ``ksc`` on PATH)."""

    path: Path | None = None
    runtime: Path | None = None
    timeout: float = DEFAULT_TIMEOUT
    location: Location | None = field(default=None, compare=False)
    #: Who chose these settings, for the "not found" hint: "config" (``ksc:``), "load_ks" (its
    #: arguments) or "cli" (``ksbind decls --ksc``).
    set_by: str = field(default="config", compare=False)

# -- from ksbind.codegen.context
DEFAULT_ARENA_BYTES = 100_000_000


LAYOUTS = ("split", "single")


@dataclass(frozen=True)
class ModuleOptions:
    """Everything about a module except its bindings."""

    name: str = "m"
    target: str = "ks"
    tensor_types: tuple[tuple[int, str], ...] = ()
    logging: bool = False
    arena_bytes: int = DEFAULT_ARENA_BYTES
    layout: str = "split"
    torch_library: str | None = None
    config: str | None = None
    templates: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    #: Built into a wheel (ksbind.setuptools) rather than ksbind's cache: the
    #: generated Python imports nothing from ksbind. ``package``: the package the
    #: module is installed in (None: top level).
    standalone: bool = False
    package: str | None = None

# -- from ksbind.config
TENSOR_ELEMENTS = ("Float", "Integer", "Bool")


@dataclass(frozen=True)
class RuntimeSpec:
    """``bundled`` (ksbind's own runtime) or a folder of ksc's runtime."""

    bundled: bool = True
    include_dirs: tuple[Path, ...] = ()
    sources: tuple[Path, ...] = ()
    #: Not named in the config, which names ksc: ksc's runtime, filled in by the ksc step.
    from_ksc: bool = False


@dataclass(frozen=True)
class InlineDeclarations:
    text: str  # padded so line numbers match the config file
    location: Location


@dataclass(frozen=True)
class ModuleSpec:
    name: str
    config_path: Path
    target: str = "ks"
    ks_files: tuple[Path, ...] = ()
    declarations: InlineDeclarations | None = None
    cpp: tuple[Path, ...] = ()
    runtime: RuntimeSpec = RuntimeSpec()
    bindings: tuple[BindingSpec, ...] | None = None
    tensor_types: tuple[tuple[int, str], ...] = ()
    logging: bool = False
    templates: tuple[Path, ...] = ()
    torch_library: str | None = None
    arena_bytes: int = DEFAULT_ARENA_BYTES
    output: Path = Path("build")
    layout: str = "split"
    filters: str | None = None
    #: Run ksc on the .ks sources (None: .ks files are read as declarations).
    ksc: KscSpec | None = None
    #: Files whose functions are not bound by default (None: the runtime's prelude.ks, if any).
    prelude: tuple[Path, ...] | None = None
    #: Compile the module's ks code with FAST_MATH_FLAGS (backend/toolchain.py): floats reassociated, no NaN/inf.
    fast_math: bool = False
    #: A debug build (backend/toolchain.py, DEBUG_FLAGS): the runtime's bounds checks on, -O0 -g.
    debug: bool = False
    #: A folder that ``generate``/``build`` also write the module's stub NAME.pyi into (for type checkers).
    stubs: Path | None = None
    location: Location | None = field(default=None, compare=False)

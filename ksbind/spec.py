"""The plain records every stage hands the next: what a config says about a
module (ModuleSpec and its parts), a binding before and after selection, and
the options a renderer needs (ModuleOptions), with the choices that bound
their fields. Frozen dataclasses only: no logic, no I/O, nothing above
``ksbind.lang`` imported.

The config records are the settings model (ksbind/settings.py): each config key
is one field, ``Annotated`` with its ``Key`` (how a config spells it, its doc).
The reader (config.py), the JSON Schema and docs/config.md's key tables
(schema.py) all come from these fields.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal, get_args

from ksbind import support
from ksbind.errors import Location
from ksbind.lang.model import FunctionDecl
from ksbind.lang.types import KsType
from ksbind.settings import Key

#: ksbind's own targets' names. Only the type is written here; what a target does is its
#: record's (ksbind/codegen/targets/), and tests/test_settings.py checks the two name the same targets
#: (``torch_stable``: another name of ``torch``, the codegen package's ALIASES).
BuiltinTargetName = Literal["ks", "python", "torch", "torch_stable", "jax"]
#: A config's ``target:``: one of BuiltinTargetName, or a name another installed distribution
#: registers a target under (the ``ksbind.targets`` entry points: docs/templates.md). Checked
#: where it is read, by the codegen package's ``get_target``.
TargetName = str

#: How a torch- or jax-target binding maps its function over tensors.
Mode = Literal["plain", "elementwise", "vmap"]
MODES: tuple[Mode, ...] = get_args(Mode)

#: The derivations a vjp can be.
VjpKind = Literal["sufrev", "rev"]
VJP_KINDS: tuple[VjpKind, ...] = get_args(VjpKind)

#: Where a binding's vjp comes from: [sufrev F] when declared, else [rev F] ("auto"), or one of them.
VjpFrom = Literal["auto", VjpKind]
VJP_SOURCES: tuple[VjpFrom, ...] = get_args(VjpFrom)

#: When a binding's ks call runs with the GIL released (docs/config.md): "auto" when the call is
#: worth it (enough tensor data, or the binding is marked ``long``; every call on the torch target).
GilPolicy = Literal["auto", "always", "never"]
GIL_POLICIES: tuple[GilPolicy, ...] = get_args(GilPolicy)

#: The generated files: declarations, definitions and the module apart, or one module.cpp.
Layout = Literal["split", "single"]
LAYOUTS: tuple[Layout, ...] = get_args(Layout)

#: The elements a tensor that crosses as a buffer may hold: a ks-target module's declared
#: tensor classes, and a torch tensor (targets/torch/target.py).
TensorElement = Literal["Float", "Integer", "Bool"]
TENSOR_ELEMENTS: tuple[TensorElement, ...] = get_args(TensorElement)

#: Who chose a KscSpec's settings, for the "not found" hint.
KscSetBy = Literal["config", "load_ks", "cli", "compile"]

#: Names every generated module defines itself (its support functions: ksbind/support.py).
RESERVED_NAMES = support.RESERVED_NAMES
_RESERVED_LIST = ", ".join(f"`{f.name}`" for f in support.SUPPORT_FUNCTIONS if f.name in RESERVED_NAMES)

DEFAULT_TIMEOUT = 300.0
DEFAULT_ARENA_BYTES = 100_000_000


@dataclass(frozen=True)
class BindingSpec:
    """One entry of a config's ``bindings:`` list, not yet resolved."""

    name: Annotated[str, Key(
        "text", "Python and C++ name of the binding. Checked: an identifier, not a C++ keyword, not a Python "
        "keyword (soft keywords such as `match` included), no `__`, not a name the module defines itself "
        f"({_RESERVED_LIST}, `Tensor_*`), unique in the module (vjp names included).",
        type_doc="identifier", required="its Python name", what="a binding's 'name'", expected="a string",
        binding_name=True)]
    function: Annotated[str | None, Key(
        "text", "The ks function. A structured name (`\"[f (Tuple Float Float)]\"`, `\"[sufrev [f Float]]\"`; "
        "quote it in YAML) names exactly one declaration; a plain name must be declared at one type only, "
        "otherwise the error lists the candidates.",
        type_doc="structured name or plain name", default_doc="`name`", expected="a function name")] = None
    vjp: Annotated[str | None, Key(
        "text", "Also bind the function's vjp under this name. Called as `name_vjp(a, b, ..., dret)`, it returns "
        "the gradient of each argument. It is `[sufrev F]` or `[rev F]` (same calling form, same result), as "
        "`vjp_from` says. Taken from the declarations when stated there (a `.kso`, or a `gdef`), else derived "
        "from F's signature (and, with `ksc:`, asked of ksc).",
        type_doc="identifier", expected="a name for the vjp binding", binding_name=True)] = None
    mode: Annotated[Mode, Key(
        "choice", "torch and jax targets ([jax.md](jax.md#modes)): `elementwise` applies a `Float -> Float` (or "
        "`(Float, Float) -> Float`) function to every element; `vmap` maps over the leading dimension of tensor "
        "arguments.")] = "plain"
    location: Location | None = field(default=None, compare=False)
    vjp_from: Annotated[VjpFrom, Key(
        "choice", "Which derivation the vjp is. `auto`: `[sufrev F]` when declared, else `[rev F]` when "
        "declared; with `ksc:`, sufrev where ksc can build it, else rev (ksc's SUF-AD cannot differentiate "
        "recursive functions or folds). Needs `vjp:`.")] = "auto"
    release_gil: Annotated[GilPolicy, Key(
        "choice", "Whether the ks call (never the conversions) runs with the GIL released, so other Python "
        "threads run meanwhile and calls from several threads run in parallel (python and torch targets: see "
        "[targets.md](targets.md#calls-threads-and-python-code-inside-conversions)). `auto`: when the call's "
        "tensor arguments hold at least 2048 elements (`KSBIND_GIL_RELEASE_ELEMENTS`) or the binding is "
        "`long: true`, and on every torch-target call; releasing costs about 100-150 ns, more than a small "
        "scalar call. The vjp follows its binding.")] = "auto"
    long_call: Annotated[bool, Key(
        "flag", "The function runs long whatever its arguments' size (a loop in ks code): under "
        "`release_gil: auto`, every call releases the GIL.", key="long")] = False
    #: A Python expression for the result's shape where it depends on values (jax target; docs/jax.md).
    result_shape: Annotated[str | None, Key(
        "text", "jax target only (elsewhere a BindingError): the result's shape where it depends on argument "
        "values, evaluated at trace time with each argument's name bound to its shape (a scalar's, to its value "
        "when known): `\"(v[0] * k,)\"`. See [jax.md](jax.md#result-shapes).",
        type_doc="a Python expression",
        expected="a Python expression over the arguments (docs/jax.md)")] = None
    mutates: Annotated[tuple[str, ...], Key(
        "names", "torch target only (elsewhere a BindingError): the tensor arguments the binding's C++ writes "
        "into, by name (a def's parameter names; an edef's are `arg0`, `arg1`...). Their schema type is "
        "`Tensor(a!)`, so `torch.compile` keeps the writes and their order; each must be a contiguous tensor (a "
        "copy would take the write), and an eager call bumps its version counter. Plain mode, no vjp. A write "
        "not declared is undefined under `torch.compile`: see [torch.md](torch.md#arguments-written-in-place).",
        default_doc="none", expected="an argument's name")] = ()
    jvp: Annotated[str | None, Key(
        "text", "Also bind the function's forward derivative `[fwd F]` under this name, and give the binding "
        "forward-mode AD on the torch and jax targets (docs/torch.md and docs/jax.md, \"Forward mode\"). "
        "Called as `name_jvp(a, b, ..., da, db, ...)`, it returns the result's tangent: the arguments, then "
        "one tangent per argument (`()` for an Integer, Bool or String argument), each named `d` + the argument's "
        "name (more `d`s where an argument already has that name: `x, dx` take `ddx, dddx`). Taken from the "
        "declarations "
        "when stated there, else derived from F's signature (and, with `ksc:`, asked of ksc).",
        type_doc="identifier", expected="a name for the jvp binding", binding_name=True)] = None


@dataclass(frozen=True)
class Binding:
    name: str
    decl: FunctionDecl
    vjp_name: str | None = None
    vjp_decl: FunctionDecl | None = None
    mode: Mode = "plain"
    location: Location | None = field(default=None, compare=False)
    release_gil: GilPolicy = "auto"
    long_call: bool = False
    result_shape: str | None = None
    mutates: tuple[str, ...] = ()  # tensor arguments its C++ writes into (torch target)
    jvp_name: str | None = None
    jvp_decl: FunctionDecl | None = None  # [fwd F]: (Tuple S dS) -> dT

    @property
    def decls(self) -> tuple[FunctionDecl, ...]:
        """The functions the binding calls: its own, then its vjp's and jvp's when it has them."""
        return (self.decl, *(d for d in (self.vjp_decl, self.jvp_decl) if d is not None))


@dataclass(frozen=True)
class KscSpec:
    """A config's ``ksc:`` mapping (None fields: $KSC / $KSC_RUNTIME, then ``ksc`` on PATH)."""

    path: Annotated[Path | None, Key(
        "path", "The ksc binary. **It is executed**: treat a config with `ksc:` like a script.",
        default_doc="`$KSC`, then `ksc` on `PATH`")] = None
    runtime: Annotated[Path | None, Key(
        "path", "ksc's runtime folder (the one holding `knossos.h`).", must_exist="dir",
        default_doc="`$KSC_RUNTIME`, then `runtime/` beside ksc's `bin/`")] = None
    timeout: Annotated[float, Key(
        "count", "Seconds one run of ksc may take.", maximum=86400, type_doc="whole number of seconds, 1..86400",
        default_doc="`300`")] = DEFAULT_TIMEOUT
    location: Location | None = field(default=None, compare=False)
    #: Who chose these settings, for the "not found" hint: "config" (``ksc:``), "load_ks" (its
    #: arguments) or "cli" (``ksbind decls --ksc``).
    set_by: KscSetBy = field(default="config", compare=False)


@dataclass(frozen=True)
class RuntimeSpec:
    """``bundled`` (ksbind's own runtime) or a folder of ksc's runtime."""

    bundled: bool = True
    include_dirs: Annotated[tuple[Path, ...], Key(
        "paths", "The folder holding ksc's `knossos.h` (or several folders).", must_exist="dir",
        type_doc="directory or list", required="the folder holding knossos.h")] = ()
    sources: Annotated[tuple[Path, ...], Key(
        "paths", "C++ files of the runtime to compile with the module (hand-written C++ lists ksc's "
        "`knossos.cpp` here; ksc's own output includes it itself).", must_exist="file")] = ()
    #: Not named in the config, which names ksc: ksc's runtime, filled in by the ksc step.
    from_ksc: bool = False


@dataclass(frozen=True)
class InlineDeclarations:
    text: str  # padded so line numbers match the config file
    location: Location


@dataclass(frozen=True)
class PythonRef:
    """Where a ``python:`` entry's function is: a file (``path/to/file.py:NAME``, relative to the
    config) or an importable module (``package.module:NAME``), and its name there."""

    text: str  # as the config wrote it
    attribute: str
    file: Path | None = None
    module: str | None = None


@dataclass(frozen=True)
class PythonFunctionSpec:
    """One entry of a config's ``python:`` list: a Python function compiled through ksc (docs/frontend.md)."""

    function: Annotated[PythonRef, Key(
        "python_function", "The Python function: `path/to/file.py:NAME` (relative to the config; the file is run "
        "as a script's would be, its folder first on `sys.path`) or `package.module:NAME` (imported). **Its "
        "module is run at build time**: treat a config with `python:` like a Python file.",
        required="the Python function, file.py:NAME or package.module:NAME")]
    args: Annotated[tuple[KsType, ...] | None, Key(
        "ks_types", "The ks type of each parameter: the signature it is compiled for, e.g. "
        "`[(Tensor 2 Float), Float]`. For `mode: vmap`, one step's types (a tensor without its leading axis: "
        "`Float` for a 1-d tensor). Required but for `mode: elementwise`, whose parameters are `Float`.",
        type_doc="list of ks types", default_doc="`mode: elementwise`: `Float` per parameter",
        expected="a list of ks types")] = None
    mode: Annotated[Mode, Key(
        "choice", "As `ksbind.compile`'s ([frontend.md](frontend.md#modes-and-targets)): `plain` (one call), "
        "`elementwise` (a function of one or two floats applied to every element, broadcast), `vmap` (mapped "
        "over the leading axis of its tensor arguments).")] = "plain"
    name: Annotated[str | None, Key(
        "text", "The binding's name (checked as `bindings:` names are).", type_doc="identifier",
        default_doc="the function's name in its module", expected="a name for the binding", binding_name=True)] = None
    vjp: Annotated[str | Literal[False] | None, Key(
        "optional_name", "The vjp's binding name, called as a `bindings:` vjp is; `false`: no vjp. Bound only "
        "when the function takes and returns a Float (a tensor of them included): naming one for another "
        "function is an error.", type_doc="identifier or `false`",
        default_doc="`NAME_vjp` when the function has one", expected="a name for the vjp binding, or false")] = None
    jvp: Annotated[str | None, Key(
        "text", "Also bind the function's forward derivative (ksc's `[fwd F]`) under this name, called as a "
        "`bindings:` jvp is, and give the binding forward mode (as `ksbind.compile(..., jvp=True)`). Only for a "
        "function that takes and returns a Float, as `vjp`.", type_doc="identifier", default_doc="none",
        expected="a name for the jvp binding", binding_name=True)] = None
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True, kw_only=True)
class ModuleSettings:
    """The settings of a module that reach its generated code, declared once: the config's keys
    (ModuleSpec is a ModuleSettings), what render reads (ModuleOptions is one too) and
    ``render_module``'s keyword arguments all come from these fields, so a setting added here is
    all three with no other line."""

    name: Annotated[str, Key(
        "identifier", "The Python module name. Letters, digits and `_`, not starting with a digit, not a C++ or "
        "Python keyword, no `__`.", required="the Python module name", label="module name", expected="a string")]
    target: Annotated[TargetName, Key("target", "How values cross into Python (below). `torch_stable`: another "
                                      "name of `torch` (its name as a preview). Another installed distribution "
                                      "may add a target ([templates.md](templates.md#adding-a-target)).",
                                      type_doc="`ks` | `python` | `torch` | `jax` | a registered target")] = "ks"
    target_options: Annotated[tuple[tuple[str, str | bool | int], ...], Key(
        "target_options", "The target's own keys, for a target that declares some (ksbind's own declare none): "
        "each checked against the target's declaration and handed to its templates as `target_options`.",
        type_doc="mapping", default_doc="none (each key its declared default)")] = ()
    tensor_types: Annotated[tuple[tuple[int, TensorElement], ...], Key(
        "tensor_types", "ks target only (elsewhere a ConfigError: python-target tensors are nested lists, "
        "torch-target ones `torch.Tensor`): tensor classes to declare (`Tensor_RANK_ELEMENT`) in addition to "
        "every tensor type a binding uses. RANK 1..64; ELEMENT `Float`, `Integer` or `Bool`.")] = ()
    logging: Annotated[bool, Key(
        "flag", "Initial state of the module's logging switch: when on, each call prints its arguments and "
        "result to stderr. Changeable at run time with `module.logging(True)`.")] = False
    torch_library: Annotated[str | None, Key(
        "identifier", "torch target only: the namespace of the bindings' ops, `torch.ops.NAME.*` (default: the "
        "module's name; in a wheel its full import name with `_` for `.`).",
        expected="an identifier")] = None
    arena_bytes: Annotated[int, Key(
        "count", "Size of the allocator arena ks functions allocate from. The environment variable "
        "`KSBIND_ARENA_BYTES` overrides it when the module loads.", maximum=2**40,
        type_doc="whole number, 1..2^40")] = DEFAULT_ARENA_BYTES
    layout: Annotated[Layout, Key(
        "choice", "`split`: `entry_points.h`, `entry_points.cpp` and `module.cpp` (declarations, definitions, "
        "the module: pybind11 on the ks target, Python's C API on the python target). `single`: everything in "
        "one `module.cpp`.")] = "split"
    #: Not a config key: a build loaded under a versioned name (ksbind/backend/loader.py's
    #: ``versioned_spec``) keeps the name it was versioned from here; the jax target names its FFI
    #: targets by it (docs/jax.md, "jax.export"). None for every other build.
    versioned_from: str | None = None


@dataclass(frozen=True, kw_only=True)
class ModuleOptions(ModuleSettings):
    """Everything about a module render reads but its bindings: its settings (as the config or
    ``render_module``'s keywords gave them) and what the caller adds."""

    #: The config's path as stamps show it (None: the Python API).
    config: str | None = None
    #: Template override folders, searched in order before the target's and the built-ins: the
    #: command line's, then the config's.
    templates: tuple[str, ...] = ()
    #: Built into a wheel (ksbind.setuptools) rather than ksbind's cache: the
    #: generated Python imports nothing from ksbind. ``package``: the package the
    #: module is installed in (None: top level).
    standalone: bool = False
    package: str | None = None


@dataclass(frozen=True, kw_only=True)
class ModuleSpec(ModuleSettings):
    """One module of a config: its settings (ModuleSettings, first in docs/config.md's table), then
    where its code comes from and how it is built."""

    config_path: Path
    ks_files: Annotated[tuple[Path, ...], Key(
        "paths", "`.ks` or `.kso` files to read declarations from. Each must be a regular UTF-8 file. With "
        "`ksc:`, the `.ks` files are compiled by ksc instead (see [ksc.md](ksc.md)).", key="ks",
        must_exist="file")] = ()
    declarations: Annotated[InlineDeclarations | None, Key(
        "ks_text", "ks text given inline (a YAML block scalar `|` is handy). Errors in it are reported at the "
        "config's own line and column.", type_doc="string", expected="ks text")] = None
    python: Annotated[tuple[PythonFunctionSpec, ...], Key(
        "records", "Python functions to compile through ksc, each a binding (and its vjp): the entries' keys "
        "below ([frontend.md](frontend.md#in-a-config)). Needs `ksc:`.", record=PythonFunctionSpec,
        type_doc="list of Python functions")] = ()
    cpp: Annotated[tuple[Path, ...], Key(
        "paths", "C++ files defining the ks functions (ksc's output, or hand-written as in `examples/`). "
        "Compiled by `ksbind build`.", must_exist="file")] = ()
    runtime: Annotated[RuntimeSpec, Key(
        "runtime", "`bundled` uses ksbind's own minimal Knossos runtime. A mapping `{include_dirs: [DIR...], "
        "sources: [FILE...]}` uses ksc's real runtime instead (the keys below); `include_dirs` (the folder "
        "holding `knossos.h`) is required.", record=RuntimeSpec,
        default_doc="`bundled`; with `ksc:`, ksc's runtime")] = RuntimeSpec()
    bindings: Annotated[tuple[BindingSpec, ...] | None, Key(
        "records", "What to bind (below): each a mapping, or a bare name (`- cube` is `- {name: cube}`, as "
        "`load_ks` takes it). Omitted: the defaults. An empty list binds nothing.",
        record=BindingSpec, type_doc="list of bindings", default_doc="every base function")] = None
    templates: Annotated[tuple[Path, ...], Key(
        "paths", "Template override directories, searched before the built-ins (see "
        "[templates.md](templates.md)). Each must exist.", must_exist="dir", type_doc="directory or list")] = ()
    output: Annotated[Path, Key(
        "path", "Folder the generated files go to. `ksbind generate -o DIR` writes to `DIR/NAME` instead. Two "
        "modules of one run may not share a folder.", default_doc="`build/NAME` next to the config")] = Path("build")
    filters: Annotated[str | None, Key(
        "module_name", "A module next to the config defining `FILTERS = {name: function}`, added to the "
        "templates' filters. **It is imported, so it runs code**: treat a config with `filters:` like a Python "
        "file.")] = None
    #: Run ksc on the .ks sources (None: .ks files are read as declarations).
    ksc: Annotated[KscSpec | None, Key(
        "record", "Run the Knossos compiler on the `.ks` sources (every key optional, `ksc: {}` takes the "
        "defaults; the keys below). **`path` is executed**: treat a config with `ksc:` like a script. See "
        "[ksc.md](ksc.md).", record=KscSpec)] = None
    #: Files whose functions are not bound by default (None: the runtime's prelude.ks and
    #: prelude-aten.ks, those there are).
    prelude: Annotated[tuple[Path, ...] | None, Key(
        "paths", "Files whose functions are not bound by default (for a `.kso` given directly, which restates "
        "ksc's prelude). `prelude: []` binds everything. With `ksc:`, ksbind knows which functions are the "
        "user's and ignores this.", must_exist="file",
        default_doc="the runtime folders' `prelude.ks` and `prelude-aten.ks`")] = None
    #: Compile the module's ks code with FAST_MATH_FLAGS (backend/toolchain.py): floats reassociated, no NaN/inf.
    fast_math: Annotated[bool, Key(
        "flag", "Compile the user's C++ (`cpp:`, ksc's output; on the torch target, the unit where the "
        "elementwise/vmap kernels inline it) with `-fassociative-math -fno-signed-zeros -ffinite-math-only`: "
        "g++ may reorder float sums and products and assume no NaN or infinity, which lets it vectorise "
        "reductions (a `sum`, a max `fold`) as inductor does. Results then differ in the last bits from the "
        "strict build and between CPU capabilities, and NaN/inf inputs give unspecified results. pybind11's and "
        "ksbind's conversion code never gets these flags. Part of the build's key.")] = False
    #: A debug build (backend/toolchain.py, DEBUG_FLAGS): the runtime's bounds checks on, -O0 -g.
    debug: Annotated[bool, Key(
        "flag", "A debug build of the module: the runtime's bounds checks on (`KS_BOUNDS_CHECK`, off in ksc's "
        "`knossos.h`), `-O0 -g`, assertions; a failed check is a `RuntimeError` naming the binding instead of "
        "reading past a tensor ([errors.md](errors.md#failures-inside-ks-code)). Slower calls "
        "(benchmarks/run.py, \"debug build\"). Part of the build's key: debug and default builds are cached side "
        "by side. `load_ks(..., debug=True)` is the same.")] = False
    #: A folder that ``generate``/``build`` also write the module's stub NAME.pyi into (for type checkers).
    stubs: Annotated[Path | None, Key(
        "path", "A folder (relative to the config) that `ksbind generate` and `ksbind build` (and "
        "`ksbind.build()`) also write the module's stub `NAME.pyi` into, only when it changed: put the folder on "
        "`MYPYPATH` (or in pyright's `stubPath`) and type checkers and IDEs resolve `import NAME`. `ksbind stubs "
        "CONFIG -o DIR` does the same on demand; `load_ks(..., name=NAME, stubs=DIR)` too.",
        expected="a folder")] = None
    location: Location | None = field(default=None, compare=False)

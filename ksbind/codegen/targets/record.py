"""The target record: every fact about a binding target, in one frozen value.

Each target package (ksbind/targets/NAME/target.py, or another distribution's) defines its
``TARGET``; ``ksbind.targets.registry.get_target(name)`` looks one up. Code outside a target's
package asks the record and never compares a target's name.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from ksbind.codegen.targets.common import CrossingRule, EntryPoint, release_gil_cpp
from ksbind.inputs import PACKAGE_DIR
from ksbind.lang.model import FunctionDecl
from ksbind.spec import Binding, Layout, ModuleOptions, TargetName

#: Values a target adds to the template context (and may replace ``entry_points`` with).
ExtraContext = Callable[[Sequence[Binding], ModuleOptions], dict[str, Any]]

#: The backend's own build kinds (ksbind/backend/native.py): pybind11 modules and modules on
#: Python's C API.
BUILD_KINDS = ("pybind11", "python-capi")
#: Or a target package's own build kind, named by where it is: ``package.module:NAME``, a
#: ``BuildKind`` (ksbind/backend/kind.py) that the backend imports when it builds such a module
#: (the torch target's ``ksbind.targets.torch.build:TORCH``, an out-of-tree target's own).
IMPORTED_BUILD_KIND = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def no_extra_context(bindings: Sequence[Binding], options: ModuleOptions) -> dict[str, Any]:
    """A target whose templates need nothing beyond the common context."""
    return {}


#: Why a function's values cannot cross on a target, or None.
CrossingProblem = Callable[[FunctionDecl], str | None]


def crosses_always(decl: FunctionDecl) -> str | None:
    """A target on which every bindable function's values cross."""
    return None


def same_name(module_name: str) -> str:
    """The compiled module is the module itself."""
    return module_name


def _frozen(files: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(files))


#: What a target's own config key holds: a string, true/false, or a whole number.
OptionKind = Literal["text", "flag", "count"]
OPTION_TYPES: Mapping[OptionKind, type] = MappingProxyType({"text": str, "flag": bool, "count": int})


@dataclass(frozen=True)
class TargetOption:
    """One of a target's own config keys, given under a module's ``target_options:``.

    kind: what it holds (OptionKind); default: its value when the config leaves it out;
    doc: one line, for messages and the target's own docs.
    """

    kind: OptionKind
    default: str | bool | int
    doc: str

    def __post_init__(self) -> None:
        if self.kind not in OPTION_TYPES:
            raise ValueError(f"unknown option kind {self.kind!r}; expected one of {', '.join(OPTION_TYPES)}")
        if not _holds(self.kind, self.default):
            raise ValueError(f"default {self.default!r} is not a {self.kind} value")

    def holds(self, value: object) -> bool:
        """Whether ``value`` is one of this option's values."""
        return _holds(self.kind, value)


def _holds(kind: OptionKind, value: object) -> bool:
    # By exact type: bool is an int in Python, and a count must not take true, nor a flag 1.
    return type(value) is OPTION_TYPES[kind]


@dataclass(frozen=True)
class Target:
    """One binding target.

    name: the config's ``target:`` value.
    files, single_file: output file -> template, for the split and the single-file
    layout; ``{module}`` in a file name is replaced by the module's name.
    crossing: how each ks type crosses between Python and the ks function (common.Crossing).
    extra_context: the target's own template values (``entry_points``, when present,
    replaces the common entry points: the bindings and the stub follow it).
    build: the backend's build kind (BUILD_KINDS), or ``package.module:NAME`` naming a
    ``BuildKind`` of the target's own package (IMPORTED_BUILD_KIND).
    arena_per_call: each call gets its own arena (mark/reset); false: calls allocate
    in the module's arena, whose results stay valid until ``reset_allocator()``.
    release_gil_always: every call releases the GIL, not only calls with enough data.
    tensor_classes: the module defines a class per tensor type, which the config's
    ``tensor_types`` adds to and the stub declares; when false, ``tensor_types`` is
    an error and a tensor is ``tensors`` in Python.
    tensors: what a tensor is in Python (for messages).
    templates: the target's own template folder (its package's ``templates/``; an out-of-tree
    target's: docs/templates.md), searched after a module's override folders and before
    ksbind's shared templates, which its templates may extend or include. None: the shared
    templates only. ksbind's own targets' templates are built-ins (``builtin/NAME``).
    include_dirs: folders of the target's own C++ headers (its package's ``include/``), on the
    include path of its modules' compiles (after the runtime's and ksbind's shared ones);
    every header under them is in the cache key.
    written_ahead: the files of the target's own package that are generated from ksbind's
    tables (its support functions' registrations and wrappers: ksbind/codegen/support_wiring.py),
    path -> the text each should have; scripts/generate_settings.py writes them and a test fails
    while one differs. None: it has none.
    options: the target's own config keys (name -> TargetOption), given under a module's
    ``target_options:``, checked against these and handed to the templates as
    ``target_options`` (each key with its value or default).
    stub_imports: import lines the stub's annotations need besides the common ones.
    torch_library: the config's ``torch_library`` (register torch.ops) applies.
    compiled_name: the compiled extension's module name, from the module's name.
    runtime_copy: a standalone build (a wheel) puts a copy of ``runtime_source`` beside the
    module under this name (``{module}`` replaced), which its wrapper imports instead of
    ksbind's; None: no copy.
    runtime_source: that runtime, relative to the ksbind package: a file (``runtime.py``) or a
    package folder (``targets/torch/runtime``, ``targets/jax/runtime``: copied with its ``.py``
    files); it must import nothing of ksbind. Given exactly when ``runtime_copy`` is.
    result_shapes: bindings may name their ``result_shape`` (elsewhere it is a BindingError).
    crossing_problem: why a function's values cannot cross on this target, or None: default
    bindings skip such a function with a warning (as they skip any function that cannot be
    bound); an explicit binding of it stays an error (the target's own check says why).
    entry_headers: ksbind's headers (``<ksbind/...>``) the entry points' header includes besides
    ``ksbind/entry_points.h``: the converters its entry points call.
    cpu_kernels: the module has loops compiled per CPU capability, and so the support
    functions that say which runs (``kernels_only`` in ksbind/support.py).
    limited_api: the oldest CPython, as (3, minor), whose stable ABI the compiled module keeps
    to: it is compiled with ``Py_LIMITED_API`` for that version and named ``NAME.abi3.so``, so
    one build imports on that CPython and every later one; a wheel whose modules all have it is
    tagged ``cp3X-abi3`` (docs/packaging.md). None: the full C API, one build per CPython version.
    """

    name: TargetName
    files: Mapping[str, str] = field(hash=False)
    single_file: Mapping[str, str] = field(hash=False)
    crossing: CrossingRule
    build: str
    tensors: str
    extra_context: ExtraContext = no_extra_context
    arena_per_call: bool = True
    release_gil_always: bool = False
    tensor_classes: bool = False
    stub_imports: tuple[str, ...] = ()
    torch_library: bool = False
    compiled_name: Callable[[str], str] = same_name
    runtime_copy: str | None = None
    runtime_source: str | None = None
    result_shapes: bool = False
    crossing_problem: CrossingProblem = crosses_always
    entry_headers: tuple[str, ...] = ()
    cpu_kernels: bool = False
    limited_api: tuple[int, int] | None = None
    templates: Path | None = None
    include_dirs: tuple[Path, ...] = ()
    written_ahead: Callable[[], Mapping[Path, str]] | None = None
    options: Mapping[str, TargetOption] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if self.build not in BUILD_KINDS and not IMPORTED_BUILD_KIND.match(self.build):
            raise ValueError(f"target {self.name!r}: unknown build kind {self.build!r}; expected one of "
                             f"{', '.join(BUILD_KINDS)}, or a build kind of its own as 'package.module:NAME'")
        if self.limited_api is not None and (self.limited_api[0] != 3 or self.limited_api < (3, 2)):
            raise ValueError(f"target {self.name!r}: limited_api {self.limited_api} is no CPython 3 stable ABI")
        if (self.runtime_copy is None) != (self.runtime_source is None):
            raise ValueError(f"target {self.name!r}: runtime_copy and runtime_source go together")
        object.__setattr__(self, "files", _frozen(self.files))
        object.__setattr__(self, "single_file", _frozen(self.single_file))
        object.__setattr__(self, "options", _frozen(self.options))

    def decided(self, e: EntryPoint) -> EntryPoint:
        """The entry point with what this target decides for it: whether its call releases the GIL."""
        return replace(e, release_gil_cpp=release_gil_cpp(e, self.release_gil_always))

    def file_plan(self, layout: Layout) -> Mapping[str, str]:
        """Output file -> template for a layout ("split" or "single")."""
        return self.single_file if layout == "single" else self.files

    def beside(self, module_name: str) -> list[str]:
        """The files a standalone build puts beside the compiled module: the
        rendered Python files (the stub; torch and jax: the wrapper too) and the runtime copy."""
        names = [f for f in ("{module}.pyi", "{module}.py") if f in self.files]
        names += [copy for copy, _ in self.runtime_files()]
        return [n.replace("{module}", module_name) for n in names]

    def runtime_files(self) -> list[tuple[str, str]]:
        """(name beside the module, with ``{module}``; source relative to the ksbind package) of
        each file of the runtime copy: the one file, or each ``.py`` file of the package folder."""
        if self.runtime_copy is None or self.runtime_source is None:
            return []
        if self.runtime_source.endswith(".py"):
            return [(self.runtime_copy, self.runtime_source)]
        folder = PACKAGE_DIR / self.runtime_source
        return [(f"{self.runtime_copy}/{p.name}", f"{self.runtime_source}/{p.name}")
                for p in sorted(folder.glob("*.py"))]


__all__ = ["Target", "TargetOption", "OptionKind", "OPTION_TYPES", "ExtraContext", "CrossingProblem", "BUILD_KINDS",
           "IMPORTED_BUILD_KIND", "no_extra_context", "crosses_always", "same_name"]

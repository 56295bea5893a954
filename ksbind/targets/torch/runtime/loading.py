"""Loading a module's op library (once per process, refusing a torch older than it needs) and installing
its bindings and support functions into the generated wrapper's namespace (install_stable).

Part of ksbind/targets/torch/runtime/ (its __init__ says what the package is); imports torch and nothing of
ksbind's but this package, so that a wheel can carry a copy.
"""
from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import re
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.torch_version import TorchVersion

from .calls import _stable_function, _stable_jvp_function, _stable_vjp_function, read_type_errors
from .contract import BindingRecord
from .packing import _RAGGED_PREFIX, _packed_calls, _packed_functions
from .support import support_functions


def _marked(path: str, marker: re.Pattern[bytes]) -> str | None:
    """The version a compiled file's bytes hold after ``marker`` (None: no mark, or no file)."""
    try:
        with open(path, "rb") as f:
            found = marker.search(f.read())
    except OSError:
        return None
    return found.group(1).decode() if found else None


# ------------------------------------------------------------ loading the op library; the bindings


_MIN_MARKER = re.compile(rb"ksbind-torch-min=([0-9][0-9.]*);")
#: Per process, by nature (torch's op registry is): each op library's namespace and the file that
#: registered it.
_libraries: dict[str, str] = {}


def torch_needed(path: str) -> str | None:
    """The lowest torch a stable-ABI op library runs on, read from its bytes (None: no mark)."""
    return _marked(path, _MIN_MARKER)


def load_library(path: str, namespace: str, running: str | None = None) -> Any:
    """Load an op library (once per process) and return its ``torch.ops`` namespace. A torch
    older than the library needs, a library that does not load, and a namespace another
    library registered are ImportErrors that say so."""
    running = running or str(torch.__version__)
    name = os.path.basename(path)
    if _libraries.get(namespace) == path:
        return getattr(torch.ops, namespace)
    if namespace in _libraries:
        raise ImportError(f"{name}: torch.ops.{namespace} is already registered in this process by "
                          f"{_libraries[namespace]}; give this module another name or torch_library namespace")
    needed = torch_needed(path)
    if needed is not None and TorchVersion(running) < needed:
        raise ImportError(f"{name} needs torch {needed} or newer (its ops are built on the stable ABI of torch "
                          f"{needed}); this process has torch {running}", name=name)
    load: Callable[[str], None] = torch.ops.load_library  # torch leaves it untyped
    try:
        load(path)
    except OSError as e:
        raise ImportError(f"{name}: the op library did not load under torch {running} (it needs torch "
                          f"{needed or '2.10'} or newer): {e}", name=name, path=path) from e
    read_type_errors(path)
    _libraries[namespace] = path
    return getattr(torch.ops, namespace)


def install_stable(namespace: dict[str, Any], lib: str, library: str, bindings: Sequence[BindingRecord],
                   arena_bytes: int, logging: bool, extension_suffix: bool = False) -> None:
    """Define a torch module's names in ``namespace`` (its wrapper's globals): load
    its op library ``lib`` (beside the wrapper), configure it, and make each binding a
    function over its ops ``torch.ops.LIBRARY.NAME`` (fake kernel, autograd from the vjp,
    batching rule) and ``_direct_NAME`` (the same kernel, for calls that need none of those).
    ``extension_suffix``: the library is named as an extension module (a wheel's: ``.abi3.so``)."""
    ops = load_library(_library_file(namespace, lib, extension_suffix), library)
    support = support_functions(ops)
    try:
        support.pop("_configure")(arena_bytes, logging)
        message = support.pop("_configure_cpu")()
    except (RuntimeError, ValueError) as e:  # a bad KSBIND_CPU_CAPABILITY: the import fails, as documented
        raise ImportError(f"{namespace.get('__name__', lib)}: {e}") from None
    if message:
        warnings.warn(message, RuntimeWarning, stacklevel=3)
    namespace.update(support)
    lazy: dict[str, Callable[[], None]] = {}
    for b in bindings:
        if b.get("packed"):
            make = _lazy_packed(namespace, ops, b, lazy)
            lazy[b["name"]] = make
            if b["vjp"]:
                lazy[b["vjp"]] = make
            continue
        ragged, ragged_vjp = _packed_calls(ops, b, b["ragged"], _RAGGED_PREFIX) if b["ragged"] else (None, None)
        jvp = _stable_jvp_function(ops, b) if b.get("jvp") else None
        function = _stable_function(library, ops, b, ragged, jvp)
        function.__module__ = namespace["__name__"]
        namespace[b["name"]] = function
        if b["vjp"]:
            namespace[b["vjp"]] = _stable_vjp_function(ops, b, ragged_vjp)
            namespace[b["vjp"]].__module__ = namespace["__name__"]
        if jvp is not None:
            namespace[b["jvp"]] = jvp
            jvp.__module__ = namespace["__name__"]
    namespace["ops"] = ops
    if lazy:
        namespace["__getattr__"] = _module_getattr(namespace, lazy)
        namespace["__dir__"] = lambda: sorted({*namespace, *lazy})


def _lazy_packed(namespace: dict[str, Any], ops: Any, b: BindingRecord,
                 lazy: dict[str, Callable[[], None]]) -> Callable[[], None]:
    """Defines a packed binding's functions when the module's attribute is first read: they are
    ``torch.compiler.disable``d, which imports torch._dynamo (seconds), so importing the module
    does not."""
    def make() -> None:
        function, vjp = _packed_functions(ops, b)
        for name, f in ((b["name"], function), (b["vjp"], vjp)):
            if name and f is not None:
                f.__module__ = namespace["__name__"]
                namespace[name] = f
                lazy.pop(name, None)

    return make


def _module_getattr(namespace: dict[str, Any], lazy: dict[str, Callable[[], None]]) -> Callable[[str], Any]:
    """The wrapper module's ``__getattr__`` (PEP 562): a lazily defined binding on first use."""
    def __getattr__(name: str) -> Any:
        make = lazy.get(name)
        if make is None:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        make()
        return namespace[name]

    return __getattr__


def _library_file(namespace: dict[str, Any], lib: str, extension_suffix: bool) -> str:
    """The op library beside the wrapper: ``lib.so``, or (a wheel's) ``lib`` with one of this
    Python's extension suffixes, as setuptools and ksbind's build backend name it."""
    folder = os.path.dirname(os.path.abspath(namespace["__file__"]))
    names = [lib + s for s in importlib.machinery.EXTENSION_SUFFIXES] if extension_suffix else [lib + ".so"]
    for name in names:
        if os.path.isfile(os.path.join(folder, name)):
            return os.path.join(folder, name)
    raise ImportError(f"{namespace['__name__']}: its op library is missing: none of {', '.join(names)} is in "
                      f"{folder} (the wrapper and its library must be installed together)")



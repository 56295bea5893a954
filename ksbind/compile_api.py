"""``ksbind.compile``: a Python function to a compiled, differentiable function through ksc.

The way in for people who write PyTorch (or jax.numpy, or plain Python)
rather than ks, as Knossos's ``knossos.register`` was: on the first call for
a signature the function is read (``ksbind.frontend``), its ks text goes to
``load_ks`` with one binding (and its vjp) exactly as a user's own ks would,
and the call goes to the built binding. Each signature is built once per
process (kept here) and once per cache (load_ks's: a later process runs
neither ksc nor a compiler).
"""
from __future__ import annotations

import functools
import inspect
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, overload

from ksbind.cache.layout import cache_root
from ksbind.errors import ConfigError, KsbindError
from ksbind.frontend.program import Translation, translate_program
from ksbind.frontend.signature import COMPILE_MODES, CompileMode, Signature, signature_of
from ksbind.lang.types import TensorType
from ksbind.load import LoadOptions, _load
from ksbind.spec import BindingSpec, BuiltinTargetName, KscSpec, Mode
from ksbind.targets.registry import get_target

log = logging.getLogger("ksbind")

@dataclass(frozen=True)
class _Built:
    translation: Translation
    module: ModuleType
    binding: str
    vjp: str | None
    jvp: str | None = None


class CompiledFunction:
    """A Python function compiled through ksc on its first call for each signature.

    Calling it calls the built binding (a torch op with autograd on the torch
    target). ``.ks`` is the ks text of the last signature called, ``.__wrapped__``
    the Python function, ``.module_for(*args)`` the module built for those
    arguments' signature, ``.compile_for(*args)`` builds ahead of time.
    """

    __wrapped__: Callable[..., Any]

    def __init__(self, fn: Callable[..., Any], *, target: BuiltinTargetName = "torch", mode: CompileMode = "plain",
                 ksc: str | os.PathLike[str] | None = None, ksc_runtime: str | os.PathLike[str] | None = None,
                 cache_dir: str | os.PathLike[str] | None = None, quiet: bool = False, debug: bool = False,
                 fast_math: bool = False, jvp: bool = False) -> None:
        get_target(target)  # an unknown target is a ConfigError naming the known ones
        if mode not in COMPILE_MODES:
            raise ConfigError(f"ksbind.compile's mode must be one of {', '.join(COMPILE_MODES)}; found {mode!r}")
        functools.update_wrapper(self, fn)
        self.__name__: str = getattr(fn, "__name__", "function")
        self.__qualname__: str = getattr(fn, "__qualname__", self.__name__)
        self.__ksbind_python__ = fn
        self.target, self.mode = target, mode
        self._ksc = KscSpec(None if ksc is None else Path(ksc), None if ksc_runtime is None else Path(ksc_runtime),
                            set_by="compile")
        self._cache_dir, self._quiet, self._debug, self._fast_math = cache_dir, quiet, debug, fast_math
        self._jvp = jvp  # also ksc's [fwd F]: forward mode (off by default: it costs build time)
        self._names = _parameter_names(fn)
        self._builds: dict[Signature, _Built] = {}
        #: The binding to call, by the arguments' classes, dtypes and ranks: a call that has been made
        #: before skips working out its ks signature (a few microseconds of a small call).
        self._calls: dict[tuple[Any, ...], tuple[_Built, Callable[..., Any]]] = {}
        self._lock = threading.Lock()
        self._last: _Built | None = None

    # -- calling

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            args = self._positional(args, kwargs)
        key = _fast_key(args)
        known = self._calls.get(key) if key is not None else None
        if known is None:
            built = self._built(args)
            known = (built, getattr(built.module, built.binding))
            if key is not None:
                self._calls[key] = known
        self._last = known[0]
        return known[1](*args)

    def compile_for(self, *example_args: Any) -> CompiledFunction:
        """Build for the signature of ``example_args`` now (ahead of the first call); returns self."""
        self._built(example_args)
        return self

    def module_for(self, *args: Any) -> ModuleType:
        """The module built for these arguments' signature (built now if need be)."""
        return self._built(args).module

    def vjp(self, *args_and_dret: Any) -> Any:
        """The vjp binding: the primal's arguments, then the result's gradient; each argument's gradient."""
        args = args_and_dret[:-1]
        built = self._built(args)
        if built.vjp is None:
            raise KsbindError(f"{self.__name__}: this signature {built.translation.signature} has no vjp "
                              "(no Float argument or no Float result)")
        return getattr(built.module, built.vjp)(*args_and_dret)

    def jvp(self, *args_and_tangents: Any) -> Any:
        """The jvp binding (``ksbind.compile(..., jvp=True)``): the primal's arguments, then one tangent
        of each (``()`` for an int); the result's tangent."""
        if len(args_and_tangents) % 2:
            raise TypeError(f"{self.__name__}.jvp(): expected the arguments, then one tangent of each; got "
                            f"{len(args_and_tangents)} values")
        built = self._built(args_and_tangents[:len(args_and_tangents) // 2])
        if built.jvp is None:
            why = ("compile it with jvp=True" if not self._jvp
                   else "it has no Float argument or no Float result")
            raise KsbindError(f"{self.__name__}: this signature {built.translation.signature} has no jvp ({why})")
        return getattr(built.module, built.jvp)(*args_and_tangents)

    @property
    def ks(self) -> str | None:
        """The ks text compiled for the last signature called (None before the first call)."""
        return None if self._last is None else self._last.translation.ks_text

    def __repr__(self) -> str:
        return f"<ksbind.compile of {self.__qualname__}, target={self.target!r}, mode={self.mode!r}>"

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)

    # -- building

    def _options_key(self) -> str:
        root = Path(self._cache_dir) if self._cache_dir is not None else cache_root()
        jvp = "|jvp" if self._jvp else ""  # (a module without it keeps its name)
        return f"{root.resolve()}|debug={self._debug}|fast_math={self._fast_math}{jvp}"

    def _positional(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        try:
            bound = inspect.signature(self.__ksbind_python__).bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.__name__}(): {e}") from None
        return tuple(bound.args)

    def _built(self, args: Sequence[Any]) -> _Built:
        signature = signature_of(args, self._names, self.mode, self.__qualname__)
        built = self._builds.get(signature)
        if built is None:
            with self._lock:
                built = self._builds.get(signature)
                if built is None:
                    built = self._build(signature)
                    self._builds[signature] = built
        self._last = built
        return built

    def _build(self, signature: Signature) -> _Built:
        if not self._quiet:
            log.info("ksbind.compile: %s%s: translating to ks", self.__qualname__, signature)
        translation = translate_program(self.__ksbind_python__, signature)
        binding = translation.python_name
        vjp = f"{binding}_vjp" if translation.differentiable else None
        jvp = f"{binding}_jvp" if translation.differentiable and self._jvp else None
        spec = BindingSpec(binding, function=str(translation.entry), vjp=vjp, mode=_binding_mode(signature),
                           vjp_from="rev" if translation.folds and vjp else "auto", jvp=jvp)
        options = LoadOptions(target=self.target, ksc=self._ksc, cache_dir=self._cache_dir, quiet=self._quiet,
                              debug=self._debug, fast_math=self._fast_math,
                              name=_module_name(translation, spec.mode, self._options_key()))
        module = _load(translation.ks_text, [spec], options)
        return _Built(translation, module, binding, vjp, jvp)


def _fast_key(args: Sequence[Any]) -> tuple[Any, ...] | None:
    """What decides a call's ks signature, cheaply: each argument's class, and an array's dtype and
    rank; None for a list (its nesting decides its type: signature_of reads it every call)."""
    key: list[Any] = []
    for a in args:
        dtype = getattr(a, "dtype", None)
        if dtype is not None:
            key.append((type(a), dtype, getattr(a, "ndim", None)))
        elif isinstance(a, list | tuple):
            return None
        else:
            key.append(type(a))
    return tuple(key)


def _binding_mode(signature: Signature) -> Mode:
    if signature.mode == "vmap" and not any(isinstance(p, TensorType) for p in signature.params):
        return "elementwise"  # a scalar function mapped over a 1-d axis is applied to every element
    return signature.mode


def _module_name(t: Translation, mode: Mode, options: str) -> str:
    """A name per text, mode and build options (the cache folder among them): a torch op library's
    namespace is its module's name, and one process cannot load two libraries of one namespace
    (plain and vmap builds of one function, or one function built in two caches)."""
    import hashlib

    digest = hashlib.sha256(f"{mode}\n{options}\n{t.ks_text}".encode()).hexdigest()[:10]
    base = "".join(c if c.isalnum() else "_" for c in t.python_name)[:40]
    return f"ksc_{base}_{digest}"


def _parameter_names(fn: Callable[..., Any]) -> list[str]:
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return []


@overload
def compile(fn: Callable[..., Any], *, target: BuiltinTargetName = ..., mode: CompileMode = ...,
            example_args: Sequence[Any] | None = ..., **options: Any) -> CompiledFunction: ...


@overload
def compile(fn: None = ..., *, target: BuiltinTargetName = ..., mode: CompileMode = ...,
            example_args: Sequence[Any] | None = ...,
            **options: Any) -> Callable[[Callable[..., Any]], CompiledFunction]: ...


def compile(fn: Callable[..., Any] | None = None, *, target: BuiltinTargetName = "torch", mode: CompileMode = "plain",
            example_args: Sequence[Any] | None = None,
            **options: Any) -> CompiledFunction | Callable[[Callable[..., Any]], CompiledFunction]:
    """Compile a Python function through ksc: ``@ksbind.compile`` or ``ksbind.compile(fn, ...)``.

    ``target``: ``torch`` (the default: tensors in and out, autograd, torch.func,
    torch.compile), ``jax`` (jax.numpy code, jit/grad/vmap) or ``python`` (floats,
    ints and lists). ``mode``: ``plain``; ``elementwise`` (a function of one or two
    floats applied to every element of tensors of any shape, as knossos.elementwise);
    ``vmap`` (over the leading axis of tensor arguments, as knossos.vmap).
    ``example_args``: build for their signature now. ``jvp=True``: also ksc's forward
    derivative, for forward mode (torch.func.jvp, jacfwd, forward_ad; jax.jvp, jacfwd),
    and ``.jvp(*args, *tangents)``; off by default (it adds to each build). Other
    options as load_ks's: ``ksc``, ``ksc_runtime``, ``cache_dir``, ``quiet``, ``debug``,
    ``fast_math``.
    The function is read on its first call (docs/frontend.md lists what it may use).
    """
    def wrap(f: Callable[..., Any]) -> CompiledFunction:
        compiled = CompiledFunction(f, target=target, mode=mode, **options)
        if example_args is not None:
            compiled.compile_for(*example_args)
        return compiled

    return wrap if fn is None else wrap(fn)


__all__ = ["compile", "CompiledFunction"]

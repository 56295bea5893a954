"""Build ksbind modules into wheels with setuptools (PEP 517: ``pip wheel .``,
``python -m build``)::

    from setuptools import setup
    from ksbind.setuptools import BuildExt, KsbindExtension

    setup(ext_modules=[KsbindExtension("ksbind.yaml", module="_relu3", package="mypkg")],
          cmdclass={"build_ext": BuildExt})

``KsbindExtension(config, module=None, package=None)`` is one module of a
YAML config (``module`` picks it when the config holds several), installed as
``PACKAGE.NAME`` (top level when ``package`` is None). ``BuildExt`` builds it
with the pipeline of ``ksbind build`` (ksc when the config names it, generate,
compile with the same flags; the torch target with torch's include paths,
libraries and ABI) into setuptools' build folders instead of ksbind's cache
(ksbind/standalone.py), and puts the stub, ``py.typed`` and, for the torch
and jax targets, the Python wrapper and its runtime beside it. The wheel needs neither
ksbind, a compiler nor ksc at install or import time. Other extensions in the
same ``setup()`` are built by setuptools as usual. See docs/packaging.md.
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from setuptools import Extension
from setuptools.command.build_ext import build_ext

# setuptools' own copy of distutils' error classes (the stdlib has none from 3.12; setuptools >= 59).
from setuptools.errors import CompileError

from ksbind import log
from ksbind.backend.toolchain import stable_abi
from ksbind.config import select_module
from ksbind.errors import ConfigError, KsbindError, Location
from ksbind.lang.identifiers import identifier_problem
from ksbind.standalone import build_into, compiled_name, files_for
from ksbind.targets.registry import get_target


class KsbindExtension(Extension):
    """One module of a ksbind config, as a setuptools extension.

    Its ``name`` is the compiled module's full name: ``PACKAGE.NAME``, or
    ``PACKAGE.NAME_ext`` for the torch target (``PACKAGE.NAME_jaxffi``, a library
    of FFI handlers, for the jax target; ``PACKAGE.NAME_torchops``, a library of
    torch ops, for the torch target), whose ``PACKAGE.NAME`` is the
    generated Python wrapper around it (what users import).
    """

    def __init__(self, config: str | os.PathLike[str], module: str | None = None, package: str | None = None,
                 *, templates: Sequence[str | os.PathLike[str]] = ()) -> None:
        self.config = Path(config)
        self.spec = select_module(self.config, module, "say which with KsbindExtension(config, module=...)")
        if package is not None:
            for part in package.split("."):
                problem = identifier_problem(part)
                if problem:
                    raise ConfigError(f"package {package!r}: {problem}", Location(str(self.config)))
        self.package = package or None
        self.templates = tuple(os.fspath(t) for t in templates)
        prefix = f"{self.package}." if self.package else ""
        depends = [str(p) for p in (self.config, *self.spec.ks_files, *self.spec.cpp)]
        # py_limited_api: setuptools names the file NAME.abi3.so, as a stable-ABI module is (the
        # target's limited_api; the wheel's abi3 tag is bdist_wheel's py_limited_api, docs/packaging.md).
        super().__init__(prefix + compiled_name(self.spec), sources=[], depends=depends, language="c++",
                         py_limited_api=stable_abi(get_target(self.spec.target).limited_api) is not None)

    @property
    def module_name(self) -> str:
        """What users import: ``PACKAGE.NAME``."""
        return f"{self.package}.{self.spec.name}" if self.package else self.spec.name

    def extra_files(self) -> list[str]:
        """The files beside the compiled module (names in its folder)."""
        return files_for(self.spec, self.package)


class BuildExt(build_ext):
    """setuptools' build_ext, building KsbindExtensions with ksbind."""

    def build_extension(self, ext: Extension) -> None:
        if not isinstance(ext, KsbindExtension):
            super().build_extension(ext)
            return
        work = Path(self.build_temp) / "ksbind" / ext.module_name
        target = Path(self.get_ext_fullpath(ext.name))
        try:
            log.setup()
            build_into(ext.spec, target, work, package=ext.package, templates=ext.templates, label=ext.module_name)
        except KsbindError as e:
            # setuptools prints a DistutilsError as one "error: ..." line and exits 1.
            raise CompileError(f"ksbind: {e}") from None

    def _extra_pairs(self) -> Iterator[tuple[str, str]]:
        """(built file, in-place file) for every file ksbind puts beside a module."""
        build_py = self.get_finalized_command("build_py")
        for ext in self.extensions:
            if isinstance(ext, KsbindExtension):
                # setuptools' private helper (not in its stubs), as its own get_outputs uses it
                inplace, regular = self._get_inplace_equivalent(build_py, ext)  # type: ignore[attr-defined]
                for name in ext.extra_files():
                    yield (os.path.join(os.path.dirname(regular), name),
                           os.path.join(os.path.dirname(inplace), name))

    def get_outputs(self) -> list[str]:
        if self.inplace:
            return super().get_outputs()  # the mapping's keys, ours included
        return sorted({*super().get_outputs(), *(built for built, _ in self._extra_pairs())})

    # Overrides setuptools' private hook (not in its stubs): what `pip install -e` copies in place.
    def _get_output_mapping(self) -> Iterator[tuple[str, str]]:
        yield from super()._get_output_mapping()  # type: ignore[misc]
        if self.inplace:
            yield from self._extra_pairs()

    def copy_extensions_to_source(self) -> None:
        super().copy_extensions_to_source()
        for built, inplace in self._extra_pairs():
            self.mkpath(os.path.dirname(inplace))  # the runtime package's folder
            self.copy_file(built, inplace, level=self.verbose)


__all__ = ["KsbindExtension", "BuildExt"]

"""Build one module into a folder of the caller's choosing, for a wheel
(ksbind.setuptools): the same pipeline as ``ksbind.build`` (ksc when the config
names it, render, compile with the target's toolchain, link) with none of the
cache's parts: no cache entry, no versioned names, no object cache and no
precompiled header (a wheel build runs once, usually in a fresh folder), and
nothing imported: the module may be for another Python than the one building.

What lands beside the compiled module (``files_for``):

- every target: ``NAME.pyi`` (its stub), and ``py.typed`` in its package;
- torch target: ``NAME.py`` (the wrapper users import; the compiled part is
  ``NAME_ext``) and ``NAME_ksbind_runtime/``, a copy of the ksbind/targets/torch/runtime
  package the wrapper imports instead of ksbind's (it needs only torch);
- jax target: ``NAME.py`` (the wrapper; the compiled part is the handler library
  ``NAME_jaxffi``, named as an extension module, loaded by ctypes) and
  ``NAME_ksbind_jax_runtime/``, a copy of the ksbind/targets/jax/runtime package
  (it needs only jax and numpy).

Which runtime file or package is copied, and under which name, the target's record
says (``runtime_source``, ``runtime_copy``, ``Target.runtime_files``).
"""
from __future__ import annotations

import dataclasses
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ksbind.backend.build import standalone_units
from ksbind.backend.compile import compile_objects, link
from ksbind.backend.missing import explain_missing
from ksbind.backend.toolchain import module_suffix, stable_abi
from ksbind.codegen.output import write_generated
from ksbind.codegen.render import RenderedModule
from ksbind.errors import BuildError, Location
from ksbind.fileio import staged, write_atomic
from ksbind.inputs import PACKAGE_DIR
from ksbind.log import get_logger
from ksbind.spec import ModuleSpec
from ksbind.targets.registry import get_target

_log = get_logger("compile")


def compiled_name(spec: ModuleSpec) -> str:
    """The name of the compiled extension module: the module's own, or for the
    torch target NAME_ext and the jax target NAME_jaxffi (NAME is then its Python wrapper)."""
    return get_target(spec.target).compiled_name(spec.name)


def compiled_file(spec: ModuleSpec) -> str:
    """The compiled module's file name in a wheel: ``NAME.abi3.so`` for a target on
    the stable ABI (``Target.limited_api``: every later CPython imports it), else
    ``NAME`` and this interpreter's extension suffix."""
    return compiled_name(spec) + module_suffix(get_target(spec.target).limited_api)


def limited_api(specs: Sequence[ModuleSpec]) -> tuple[int, int] | None:
    """The stable ABI a wheel of these modules keeps to: the newest of their targets'
    ``limited_api`` when every one has it, else None (the wheel is for this CPython only)."""
    versions = [stable_abi(get_target(s.target).limited_api) for s in specs]
    if not versions or any(v is None for v in versions):
        return None
    return max(v for v in versions if v is not None)


def files_for(spec: ModuleSpec, package: str | None) -> list[str]:
    """What the build puts beside the compiled module, besides it (names in its folder)."""
    files = get_target(spec.target).beside(spec.name)
    if package:
        files.append("py.typed")
    return files


def build_into(spec: ModuleSpec, module_path: Path, work: Path, *, package: str | None = None,
               templates: Sequence[str] = (), label: str = "") -> list[Path]:
    """Build ``spec`` as the extension file ``module_path`` (named as the importing
    Python expects, e.g. by setuptools' get_ext_fullpath), its other files beside
    it; ``work`` holds the generated files, ksc's output and the objects. Returns
    every file written to ``module_path``'s folder. Nothing is left there when
    the build fails; a file already there is replaced whole. Progress is
    logged (ksbind/log.py), each line starting with ``label``."""
    from ksbind.pipeline import render_spec
    from ksbind.resolve import resolve_spec

    work = Path(work).resolve()
    spec = dataclasses.replace(spec, output=work / "generated")
    # The same resolve step as ``ksbind build``: with ``ksc:``, ksc runs (its output under ``work``) and the
    # resolved spec carries ksc's C++ (compiled before the config's ``cpp:``) and its runtime's include path.
    resolved = resolve_spec(spec, work)
    spec = resolved.spec
    try:
        rendered = render_spec(resolved, templates, standalone=True, package=package)
        generated = write_generated(spec.output, rendered)
        units, tc = standalone_units(spec, generated)
        objects = compile_objects(units, tc, objects=None, work=_fresh(work / "objects"), log_dir=spec.output,
                                  label=label)
        module_path = Path(module_path)
        module_path.parent.mkdir(parents=True, exist_ok=True)
        with staged(module_path, 0o755) as staged_path:
            link(objects, tc, staged_path, units[0].source, spec.output, label)
            missing = undefined_ks_symbols(staged_path)
            if missing:
                raise BuildError(f"undefined symbol: {missing[0]}", Location(str(spec.config_path)))
        written = [module_path, *_write_beside(spec, rendered, module_path.parent, package)]
        _log.info("%sbuilt %s", f"{label}: " if label else "", module_path)
        return written
    except BuildError as e:
        raise explain_missing(e, resolved.decls) from None


def _fresh(folder: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def _write_beside(spec: ModuleSpec, rendered: RenderedModule, folder: Path, package: str | None) -> list[Path]:
    texts: dict[str, str] = {}
    runtime = {copy.replace("{module}", spec.name): source for copy, source in get_target(spec.target).runtime_files()}
    for name in files_for(spec, package):
        if name == "py.typed":
            texts[name] = ""
        elif name in runtime:
            texts[name] = (PACKAGE_DIR / runtime[name]).read_text(encoding="utf-8")
        elif name in rendered.files:
            texts[name] = rendered.files[name]
    for name, text in texts.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)  # a runtime package's folder
        write_atomic(folder / name, text)
    return [folder / name for name in texts]


def undefined_ks_symbols(shared_object: Path) -> list[str]:
    """ks:: functions the module calls that nothing linked into it defines (a
    missing edef), read with nm: the cache build learns this by importing the
    module, which a wheel build must not do. Empty when nm is missing."""
    try:
        proc = subprocess.run(["nm", "-D", "--undefined-only", str(shared_object)], capture_output=True,
                              text=True, errors="replace", stdin=subprocess.DEVNULL, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    names = [line.split()[-1] for line in proc.stdout.splitlines() if line.strip()]
    return [n for n in names if n.startswith("_ZN2ks")]


__all__ = ["build_into", "compiled_name", "compiled_file", "limited_api", "files_for", "undefined_ks_symbols"]

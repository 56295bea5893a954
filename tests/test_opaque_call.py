"""A plain torch op's ``NAME_ks`` calls its ks function through ksbind::opaque
(ksbind/include/ksbind/opaque_call.h), so the compiler keeps one copy of the ks function
instead of inlining it into ``NAME_ks`` as well. Checked on the assembly the torch target's
own flags give, with g++ and (where installed) clang, against the direct call, which both
compilers inline."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import ksbind
from ksbind.backend.toolchain import INCLUDE_DIR, RUNTIME_DIR, compiler
from ksbind.codegen.output import write_generated
from ksbind.spec import BindingSpec
from ksbind.targets.torch.build import CFLAGS, ENTRIES

DECLS = ksbind.parse_ks("""
(edef relu3 Float (Float))
(edef [sufrev relu3] Float (Float Float))
""", "decls.ks")

#: Small enough that -O3 inlines a direct call: what ksc's one-line functions are.
USER_CPP = r"""
#include <knossos.h>
namespace ks {
ks::Float relu3$af(ks::allocator*, ks::Float x) { return x > 0 ? x * x * x : 0.0; }
ks::Float sufrev$relu3$af(ks::allocator*, ks::Float x, ks::Float d) { return x > 0 ? 3 * x * x * d : 0.0; }
}
"""

#: A float multiplication (ks::Float is float): the ks function's arithmetic.
MULTIPLY = re.compile(r"\bv?mulss\b")

COMPILERS = [pytest.param(compiler(), id="default")]
if clang := shutil.which("clang++") or shutil.which("clang++-14"):
    COMPILERS.append(pytest.param((clang,), id="clang"))


def _assembly(cxx: tuple[str, ...], folder: Path, variant: str, entries: str) -> str:
    """The assembly of the user unit (the user's C++, then ``entries``) compiled in ``folder``,
    beside the rendered torch_stable_entries.h."""
    (folder / f"{variant}_entries.cpp").write_text(entries)
    (folder / "user.cpp").write_text(USER_CPP)
    unit = folder / f"{variant}_unit.cpp"
    unit.write_text(f'#include "{folder / "user.cpp"}"\n#include "{folder / f"{variant}_entries.cpp"}"\n')
    out = folder / f"{variant}_unit.s"
    subprocess.run([*cxx, *CFLAGS, f"-I{INCLUDE_DIR}", f"-I{RUNTIME_DIR}", "-S", str(unit), "-o", str(out)],
                   check=True)
    return out.read_text()


def _body(assembly: str, function: str) -> str:
    """The instructions of the function whose mangled name contains ``function``."""
    match = re.search(rf"^(_Z\w*{function}\w*):[^\n]*\n(.*?)\.cfi_endproc", assembly, re.M | re.S)
    assert match, f"{function} is not in the assembly"
    return match.group(2)


@pytest.mark.slow
@pytest.mark.parametrize("cxx", COMPILERS)
def test_name_ks_calls_its_ks_function_instead_of_inlining_it(cxx: tuple[str, ...], tmp_path: Path) -> None:
    write_generated(tmp_path, ksbind.render_module(DECLS, "m", "torch",
                                                   bindings=[BindingSpec("relu3", "relu3", "relu3_vjp")]))
    entries = (tmp_path / ENTRIES).read_text()
    assert "ksbind::opaque<ks::Float(*)(ks::allocator*, ks::Float)>(&ks::relu3$af)(alloc, p0)" in entries
    opaque = _assembly(cxx, tmp_path, "opaque", entries)
    for wrapper, ks_function in (("8relu3_ks", "relu3$af"), ("12relu3_vjp_ks", "sufrev$relu3$af")):
        body = _body(opaque, wrapper)
        assert re.search(r"\b(jmp|call)q?\s+\*", body), f"{wrapper} does not call through a pointer:\n{body}"
        assert ks_function in body, f"{wrapper} does not take {ks_function}'s address:\n{body}"
        assert not MULTIPLY.search(body), f"{wrapper} holds the ks function's arithmetic:\n{body}"
    # The check can fail: called directly, the compiler inlines the ks function into the wrapper.
    direct = re.sub(r"ksbind::opaque<[^>]*\)>\(&(ks::[\w$]+)\)", r"\1", entries)
    assert direct != entries
    body = _body(_assembly(cxx, tmp_path, "direct", direct), "8relu3_ks")
    assert MULTIPLY.search(body) and "relu3$af" not in body

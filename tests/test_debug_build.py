"""A debug build (`debug: true`) on ksbind's bundled runtime: its bounds checks, as ksc's
runtime has them, are on, and a failed one names the binding (no ksc needed)."""
from __future__ import annotations

from pathlib import Path

import pytest

import ksbind
from tests.e2e_support import session_cache_dir

KS = "(edef at Float ((Tensor 1 Float) Integer))\n"
CPP = """\
#include "knossos.h"
namespace ks {
ks::Float at$aT1fi(ks::allocator *, ks::tensor<1, ks::Float> v, ks::Integer i) { return v[i]; }
}
"""


def test_a_bundled_debug_build_checks_indexing(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "at.ks").write_text(KS)
    (tmp_path / "at.cpp").write_text(CPP)
    (tmp_path / "at.yaml").write_text("name: debug_at\ntarget: python\nks: [at.ks]\ncpp: [at.cpp]\n"
                                      "debug: true\nbindings: [{name: at}]\n")
    m = ksbind.build(tmp_path / "at.yaml", cache_dir=session_cache_dir(), quiet=True)
    assert m.at([1.0, 2.0, 3.0], 2) == 3.0
    capfd.readouterr()
    with pytest.raises(RuntimeError) as e:
        m.at([1.0, 2.0, 3.0], 10)
    assert str(e.value) == ("at (ks function [at (Tuple (Tensor 1 Float) Integer)]) failed a check of the ks "
                            "runtime: Accessing element 10 of tensor of size 3")
    assert capfd.readouterr().err == ""

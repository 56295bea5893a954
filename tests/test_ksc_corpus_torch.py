"""ksc's own test programs on the torch target: with default
bindings, every program generates, each binding an op (no binding refused for nested
tensors, tuples or scalar results; string results and tensors of tuples are packed ops). Compiling each and checking its vjps against finite
differences through torch tensors takes a torch build per program: that runs
with ``scripts/test.sh --all`` (KSBIND_CORPUS=all); CI builds ksc's gmm.ks on
the torch target in tests/test_gmm.py."""
from __future__ import annotations

import os
import warnings

import pytest

from ksbind.pipeline import render_spec
from ksbind.resolve import resolve_spec
from tests.e2e_support import session_cache_dir, session_output_dir
from tests.ksc_corpus import (
    KNOWN_WRONG_VJPS,
    KSC,
    all_programs,
    build_program,
    check_vjp,
    checkable,
    program_spec,
)

pytestmark = [pytest.mark.skipif(not KSC.is_file(), reason=f"ksc is not at {KSC} (shared/ksc absent)")]
EVERY_PROGRAM = os.environ.get("KSBIND_CORPUS") == "all"


@pytest.mark.parametrize("program", all_programs())
def test_program_generates_on_the_torch_target(program: str) -> None:
    spec = program_spec(program, "torch", session_output_dir() / "corpus_torch")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        resolved = resolve_spec(spec, session_cache_dir())
        rendered = render_spec(resolved)
    assert resolved.bindings
    # Nothing is refused; a binding whose values no op schema can say (a string result, a
    # tensor of tuples) is a packed op, which its warning says.
    said = [str(w.message) for w in seen if "torch" in str(w.message)]
    assert not [m for m in said if "a plain function over an op of packed tensors" not in m], said
    ops = rendered.files["torch_stable_ops.cpp"]
    for b in resolved.bindings:
        assert f'm.def("{b.name}(' in ops, b.name


@pytest.mark.skipif(not EVERY_PROGRAM, reason="a torch build per program: scripts/test.sh --all")
@pytest.mark.parametrize("program", all_programs())
def test_program_builds_and_vjps_match_on_the_torch_target(program: str) -> None:
    r = build_program(program, "torch", session_output_dir() / "corpus_torch", session_cache_dir())
    assert r.error is None and r.module is not None, str(r.error)
    checks = [check_vjp(r.module, b, target="torch") for b in r.bindings if checkable(b)]
    failed = [f"{c.name}: {c.detail}" for c in checks if not c.ok and (program, c.name) not in KNOWN_WRONG_VJPS]
    assert not failed, failed

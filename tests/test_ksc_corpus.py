"""ksc's own test programs, through ksc and ksbind with default bindings, on the python
target. CI runs a fixed third; ``scripts/test.sh --all`` runs all."""
from __future__ import annotations

from pathlib import Path

import pytest

from ksbind.errors import BuildError
from tests.e2e_support import session_cache_dir, session_output_dir
from tests.ksc_corpus import (
    KNOWN_WRONG_VJPS,
    KSC,
    ProgramResult,
    build_program,
    build_programs,
    check_vjp,
    checkable,
    ci_programs,
)
from tests.ksc_corpus import PROGRAMS as PROGRAM_DIR

pytestmark = [pytest.mark.skipif(not KSC.is_file(), reason=f"ksc is not at {KSC} (shared/ksc absent)")]
PROGRAMS = ci_programs()


@pytest.fixture(scope="module")
def corpus() -> dict[str, ProgramResult]:
    """Every selected program built once, two at a time."""
    return build_programs(PROGRAMS, "python", session_output_dir() / "corpus", session_cache_dir())


@pytest.mark.parametrize("program", PROGRAMS)
def test_program_builds_and_binds(program: str, corpus: dict[str, ProgramResult]) -> None:
    r = corpus[program]
    assert r.error is None, str(r.error)
    assert r.module is not None and r.bindings
    for b in r.bindings:
        assert callable(getattr(r.module, b.name)), b.name
        if b.vjp_name is not None:
            assert callable(getattr(r.module, b.vjp_name)), b.vjp_name
    assert not any("[not Bool]" in w for w in r.warnings)  # the prelude is not bound


@pytest.mark.parametrize("program", PROGRAMS)
def test_program_vjps_match_finite_differences(program: str, corpus: dict[str, ProgramResult]) -> None:
    r = corpus[program]
    assert r.module is not None, str(r.error)
    checks = [check_vjp(r.module, b) for b in r.bindings if checkable(b)]
    failed = [f"{c.name}: {c.detail}" for c in checks if not c.ok and (program, c.name) not in KNOWN_WRONG_VJPS]
    assert not failed, failed
    for c in checks:
        if (program, c.name) in KNOWN_WRONG_VJPS:
            assert not c.ok, f"{c.name} now passes: remove it from KNOWN_WRONG_VJPS"


def test_edef_without_cpp_in_a_corpus_program(tmp_path: Path) -> None:
    """edef.ks calls edef_example, which ksc's prelude.h defines; renamed, nothing does."""
    text = (PROGRAM_DIR / "edef.ks").read_text().replace("edef_example", "my_edef")
    src = tmp_path / "programs" / "edef_renamed.ks"
    src.parent.mkdir()
    src.write_text(text)
    r = build_program("edef_renamed", "python", tmp_path / "out", session_cache_dir(), programs=src.parent)
    assert isinstance(r.error, BuildError), r.error
    line = text.splitlines().index("(edef my_edef Float (Float))") + 1
    assert str(r.error) == (f"{src}:{line}:1: ks function [my_edef Float] (an edef) has no C++ definition: "
                            "a file under 'cpp:' must define ks::my_edef$af(ks::allocator *, ks::Float)")

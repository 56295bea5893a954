"""Every signature read off real ksc output must come out of ksbind identically: the
C++ symbol, parameter types and return type of each function in a sample of ksc's
output, by the rules docs/knossos.md writes down (types, name mangling, the calling
convention, derived signatures)."""
from __future__ import annotations

import json

import pytest

import ksbind
from ksbind.lang.model import DERIVABLE

from .conftest import REPO, SHARED

# The sample beside the repository when present (where ksc is), else the copy in tests/data/.
_CANDIDATES = [SHARED / "vectors" / "ksc_signatures_sample.jsonl", REPO / "tests" / "data" / "ksc_signatures_sample.jsonl"]
VECTORS_PATH = next(p for p in _CANDIDATES if p.exists())
RECORDS = [json.loads(line) for line in VECTORS_PATH.read_text().splitlines() if line.strip()]


def _squash(s: str) -> str:
    return "".join(s.split())


def test_sample_is_nonempty() -> None:
    assert len(RECORDS) >= 100


@pytest.mark.parametrize("record", RECORDS, ids=[r["cpp_name"] for r in RECORDS])
def test_edef_signature_matches_ksc(record: dict) -> None:
    [decl] = ksbind.parse_ks(record["edef"], filename=record["source"])
    assert decl.cpp_symbol == record["cpp_name"]
    assert [_squash(t) for t in decl.cpp_param_types] == [_squash(t) for t in record["cpp_params"]]
    assert _squash(decl.cpp_return_type) == _squash(record["cpp_return"])
    # ksc's exact spelling, spaces included.
    assert decl.cpp_param_types == record["cpp_params"]
    assert decl.cpp_return_type == record["cpp_return"]


def _derived_cases() -> list[tuple[dict, dict]]:
    by_name = {}
    for r in RECORDS:
        [d] = ksbind.parse_ks(r["edef"])
        by_name[(r["source"], d.name)] = (r, d)
    cases = []
    for (source, name), (r, _) in by_name.items():
        inner = name.inner
        if name.is_derived and name.name in DERIVABLE and inner is not None and (source, inner) in by_name:
            cases.append((by_name[(source, inner)][0], r))
    return cases


DERIVED = _derived_cases()


def test_there_are_derived_cases() -> None:
    assert len(DERIVED) >= 50


@pytest.mark.parametrize("base_record,derived_record", DERIVED, ids=[r["cpp_name"] for _, r in DERIVED])
def test_derive_matches_ksc(base_record: dict, derived_record: dict) -> None:
    [base] = ksbind.parse_ks(base_record["edef"])
    [expected] = ksbind.parse_ks(derived_record["edef"])
    derived = base.derive(expected.name.name)
    assert derived.name == expected.name
    assert derived.arg_type == expected.arg_type
    assert derived.return_type == expected.return_type
    assert derived.cpp_symbol == derived_record["cpp_name"]
    assert derived.cpp_param_types == derived_record["cpp_params"]
    assert derived.cpp_return_type == derived_record["cpp_return"]

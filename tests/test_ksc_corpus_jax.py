"""ksc's own test programs on the jax target: with default bindings, every
program generates; in the two with functions that take or return strings (no
jax array holds one) those functions are skipped, each with a warning saying
why, and the others bound (an explicit binding of one is a BindingError naming
it). A fixed few programs build in CI (every program with
``KSBIND_CORPUS=all``, as ``scripts/test.sh --all`` sets): each binding is
called on random arguments of its types (through jax arrays, pytrees for
tuples, stacked arrays for tensors of tensors), and each vjp over Float and
tensors of Float is checked against central finite differences."""
from __future__ import annotations

import dataclasses
import os
import re
import warnings

import numpy as np
import pytest

from ksbind.errors import BindingError
from ksbind.pipeline import render_spec
from ksbind.resolve import resolve_spec
from ksbind.spec import BindingSpec
from tests.e2e_support import session_cache_dir, session_output_dir
from tests.ksc_corpus import (
    KNOWN_WRONG_VJPS,
    KSC,
    all_programs,
    build_program,
    check_vjp,
    checkable,
    program_spec,
    random_jax_value,
)

if not os.environ.get("CI"):
    pytest.importorskip("jax")
import jax  # noqa: E402

pytestmark = [pytest.mark.skipif(not KSC.is_file(), reason=f"ksc is not at {KSC} (shared/ksc absent)")]
EVERY_PROGRAM = os.environ.get("KSBIND_CORPUS") == "all"
#: Programs with functions that take or return String (skipped by default bindings on the jax target).
STRING_PROGRAMS = {"string", "syntax-primer"}
#: What CI builds: vjps over scalars and tensors (activations), tuples, integers and value-sized results
#: (ex5, tuple). ksc's GMM objective on the jax target is tests/test_jax_gmm.py's.
CI_PROGRAMS = ["activations", "ex5", "tuple"]
#: A binding whose result's size is an Integer argument's value (constVec_, mkvec: ``(build n ...)``)
#: cannot have its shape found from shapes: with default bindings (no ``result_shape:``) its call
#: is the run-time check's error, naming both shapes, not a wrong result.
VALUE_SHAPED = r"binding '\w+': the result has shape \([\d, ]+\), but shape \([\d, ]+\) was found when tracing"
#: The same for a tensor of tensors sized by a value: "has N rows, but M were found when tracing".
VALUE_SHAPED_ROWS = r"binding '\w+': the result has \d+ rows, but \d+ were found when tracing"


@pytest.mark.parametrize("program", all_programs())
def test_program_generates_on_the_jax_target(program: str) -> None:
    spec = program_spec(program, "jax", session_output_dir() / "corpus_jax")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        resolved = resolve_spec(spec, session_cache_dir())
        rendered = render_spec(resolved)
    skipped = [str(w.message) for w in seen if "on the jax target" in str(w.message)]
    if program in STRING_PROGRAMS:
        assert skipped and all("not binding" in m and "String, which no jax array holds" in m for m in skipped)
        assert not any("String" in str(t) for b in resolved.bindings for t in [*b.decl.params, b.decl.return_type])
        # Bound explicitly, such a function is an error naming the binding.
        stringy = next(d for d in resolved.decls if not d.name.is_derived and str(d.name) in " ".join(skipped))
        explicit = dataclasses.replace(spec, bindings=(BindingSpec("stringy", str(stringy.name)),))
        with pytest.raises(BindingError, match=r"binding 'stringy' .*String, which no jax array holds"):
            render_spec(resolve_spec(explicit, session_cache_dir()))
    else:
        assert not skipped
    assert resolved.bindings
    handlers = rendered.files["jax_handlers.cpp"]
    for b in resolved.bindings:
        assert f"ksbind_jax_{b.name}" in handlers, b.name


@pytest.mark.parametrize("program", [p for p in all_programs() if EVERY_PROGRAM or p in CI_PROGRAMS])
def test_program_builds_every_binding_runs_and_vjps_match_on_the_jax_target(program: str) -> None:
    r = build_program(program, "jax", session_output_dir() / "corpus_jax", session_cache_dir())
    assert r.error is None and r.module is not None, str(r.error)
    failed_calls, value_shaped = [], []
    for b in r.bindings:
        rng = np.random.default_rng(0)
        try:
            jax.block_until_ready(getattr(r.module, b.name)(*[random_jax_value(t, rng) for t in b.decl.params]))
        except Exception as e:  # a ks failure arrives as a Python exception naming the binding
            if re.search(VALUE_SHAPED, str(e)) or re.search(VALUE_SHAPED_ROWS, str(e)):
                value_shaped.append(b.name)
            else:
                failed_calls.append(f"{b.name}: {type(e).__name__}: {e}")
    assert not failed_calls, failed_calls
    assert len(value_shaped) < len(r.bindings), value_shaped
    checks = [check_vjp(r.module, b, target="jax") for b in r.bindings if checkable(b)]
    failed = [f"{c.name}: {c.detail}" for c in checks if not c.ok and (program, c.name) not in KNOWN_WRONG_VJPS]
    assert not failed, failed

#!/usr/bin/env bash
# Creates .venv with ksbind (editable) and everything its tests and examples need.
# torch is pinned to 2.13.0: on this project's machines that is a local CPU wheel;
# never let pip pick a newer torch (a multi-GB CUDA build).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check "torch==2.13.0"
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test,jax,docs]"
# The jax target's modules are built against the oldest jaxlib they support (its FFI
# API): CI builds them with 0.10.2 here and runs them under 0.12 too (scripts/test_jax_compat.sh).
.venv/bin/python -m pip install -q --disable-pip-version-check "jax==0.10.2" "jaxlib==0.10.2" optax

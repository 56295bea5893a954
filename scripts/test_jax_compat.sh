#!/usr/bin/env bash
# The jax target's compatibility test: modules built on .venv (CPython 3.11,
# jax/jaxlib 0.10.2, the oldest FFI API supported) are imported and run, without
# rebuilding, from .venv-jax-py3.12 (CPython 3.12, jax/jaxlib 0.12.0.1): the
# handler library has no Python in it, and XLA runs handlers built against an
# older FFI API (scripts/jax_compat.py says what is checked). Without CPython
# 3.12 it skips, saying so, except in CI (CI set), where that is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
py=$(ls -d "$root"/versions/3.12.*/bin/python3.12 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$py" ]; then
  if [ -n "${CI:-}" ]; then echo "FAILED: CI needs CPython 3.12 for the jax compatibility test" >&2; exit 1; fi
  echo "SKIPPED: CPython 3.12 is not installed here (looked in $root/versions)"
  exit 0
fi
venv=.venv-jax-py3.12
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check "jax==0.12.0.1" "jaxlib==0.12.0.1" "numpy>=1.24"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
KSBIND_PCH=0 .venv/bin/python scripts/jax_compat.py build "$out"
# ksbind from this tree on sys.path for the wrappers' runtime (ksbind/targets/jax/runtime/:
# jax, numpy and the standard library only); nothing is built here.
PYTHONPATH="$PWD" "$venv/bin/python" scripts/jax_compat.py check "$out"

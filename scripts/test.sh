#!/usr/bin/env bash
# Sets up .venv and runs the whole test suite (what CI runs):
#   0. scripts/lint.sh: ruff and mypy --strict (configured in pyproject.toml);
#   1. pytest on .venv's Python (unit and end-to-end, torch included);
#   2. scripts/test_pythons.sh: the python- and ks-target tests on the other
#      CPythons ksbind claims (3.10, 3.12, 3.13), skipped where not installed,
#      and one python-target abi3 wheel built here installed and run on each;
#   3. scripts/test_asan.sh: the python-target conversion tests under
#      AddressSanitizer/UBSan with leak checks;
#   4. scripts/test_jax_compat.sh: jax-target modules built here (jax 0.10.2)
#      run from a CPython 3.12 venv with jax 0.12.0.1;
#   5. scripts/test_torch_compat.sh: torch-target modules built here (torch
#      2.13.0; step 1's builds, reused) run from a venv with torch 2.14.1.
# With arguments, only step 1, with them passed to pytest.
#   --all   also what does not fit CI's time: every program of ksc's corpus
#           (../shared/ksc/programs), not a fixed third; the isolated builds of
#           the packaging example; the setuptools variant of the jax wheel;
#           python -m benchmarks.run --quick end to end (tests/test_benchmarks.py).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--all" ]; then
  export KSBIND_CORPUS=all
  shift
fi
bash scripts/setup.sh
if [ $# -gt 0 ]; then
  exec .venv/bin/python -m pytest -q "$@"
fi
status=0
echo "== ruff and mypy --strict (scripts/lint.sh)"
bash scripts/lint.sh || status=1
# The session's build cache, kept until the end: the torch compatibility step
# (5.) reuses the modules pytest built (the same configs, the same keys).
cache=$(mktemp -d -t ksbind-test-cache-XXXXXX)
trap 'rm -rf "$cache"' EXIT
KSBIND_TEST_CACHE_DIR=$cache .venv/bin/python -m pytest -q --durations=40 || status=$?
echo "== the python- and ks-target tests on the other CPythons (scripts/test_pythons.sh)"
bash scripts/test_pythons.sh || status=1
echo "== the conversion tests under AddressSanitizer and UBSan (scripts/test_asan.sh)"
bash scripts/test_asan.sh || status=1
echo "== jax-target modules built with jax 0.10.2, run under jax 0.12.0.1 on CPython 3.12 (scripts/test_jax_compat.sh)"
bash scripts/test_jax_compat.sh || status=1
echo "== torch-target modules built with torch 2.13.0, run under torch 2.14.1 (scripts/test_torch_compat.sh)"
KSBIND_TORCH_COMPAT_CACHE=$cache bash scripts/test_torch_compat.sh || status=1
exit $status

#!/usr/bin/env bash
# Sets up .venv and runs the whole test suite (what CI runs):
#   0. scripts/lint.sh: ruff and mypy --strict (configured in pyproject.toml);
#   1. pytest on .venv's Python, in its two lanes (tests/lanes.py), side by side:
#      the unit lane, with every compiler and ksc replaced by a failing script (a
#      test there that compiles fails), and the slow lane (end to end, torch included);
#   2. scripts/test_pythons.sh: the python- and ks-target tests on the other
#      CPythons ksbind claims (3.10, 3.12, 3.13), skipped where not installed,
#      and one python-target abi3 wheel built here installed and run on each;
#   3. scripts/test_asan.sh: the python-target conversion tests under
#      AddressSanitizer/UBSan with leak checks;
#   4. scripts/test_jax_compat.sh: jax-target modules built here (jax 0.10.2)
#      run from a CPython 3.12 venv with jax 0.12.0.1;
#   5. scripts/test_torch_compat.sh: torch-target modules built here (torch
#      2.13.0; step 1's builds, reused) run from a venv with torch 2.14.1.
# With arguments, only pytest, with them passed to it.
#   --fast  the unit lane alone (pytest --lane unit): what compiles nothing and
#           runs no ksc or mypy, under the guard; about a minute of one core.
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
fast=()
if [ "${1:-}" = "--fast" ]; then
  fast=(--lane unit)
  shift
fi
bash scripts/setup.sh
if [ ${#fast[@]} -gt 0 ]; then
  exec .venv/bin/python -m pytest -q "${fast[@]}" "$@"
fi
if [ $# -gt 0 ]; then
  exec .venv/bin/python -m pytest -q "$@"
fi
status=0
echo "== ruff, mypy --strict over ksbind/, mypy over tests/ (scripts/lint.sh)"
bash scripts/lint.sh || status=1
# The session's build cache, kept until the end: the torch compatibility step
# (5.) reuses the modules the slow lane built (the same configs, the same keys).
cache=$(mktemp -d -t ksbind-test-cache-XXXXXX)
unit_log=$(mktemp -t ksbind-unit-lane-XXXXXX)
trap 'rm -rf "$cache" "$unit_log"' EXIT
# The two lanes run side by side: the unit lane's CPU fills what the slow lane's
# builds leave idle (one process did both before the lanes were split).
.venv/bin/python -m pytest -q --lane unit -p no:cacheprovider >"$unit_log" 2>&1 &
unit_pid=$!
echo "== pytest: the slow lane (--lane slow), the unit lane beside it"
KSBIND_TEST_CACHE_DIR=$cache .venv/bin/python -m pytest -q --lane slow --durations=40 || status=$?
echo "== pytest: the unit lane, no compiler or ksc available (--lane unit)"
wait $unit_pid || status=1
cat "$unit_log"
echo "== the python- and ks-target tests on the other CPythons (scripts/test_pythons.sh)"
bash scripts/test_pythons.sh || status=1
echo "== the conversion tests under AddressSanitizer and UBSan (scripts/test_asan.sh)"
bash scripts/test_asan.sh || status=1
echo "== jax-target modules built with jax 0.10.2, run under jax 0.12.0.1 on CPython 3.12 (scripts/test_jax_compat.sh)"
bash scripts/test_jax_compat.sh || status=1
echo "== torch-target modules built with torch 2.13.0, run under torch 2.14.1 (scripts/test_torch_compat.sh)"
KSBIND_TORCH_COMPAT_CACHE=$cache bash scripts/test_torch_compat.sh || status=1
exit $status

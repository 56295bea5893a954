#!/usr/bin/env bash
# Sets up .venv and runs the whole test suite (what CI runs):
#   0. scripts/lint.sh: ruff and mypy --strict (configured in pyproject.toml);
#   1. pytest on .venv's Python, in its two lanes (tests/lanes.py): the unit lane
#      first, with every compiler and ksc replaced by a failing script (a test
#      there that compiles fails), then the slow lane (end to end, torch included);
#   2. scripts/test_pythons.sh: the python- and ks-target tests on the other
#      CPythons ksbind claims (3.10, 3.12, 3.13), skipped where not installed;
#   3. scripts/test_asan.sh: the python-target conversion tests under
#      AddressSanitizer/UBSan with leak checks;
#   4. scripts/test_jax_compat.sh: jax-target modules built here (jax 0.10.2)
#      run from a CPython 3.12 venv with jax 0.12.0.1.
# With arguments, only pytest, with them passed to it.
#   --fast  the unit lane alone (pytest --lane unit): what compiles nothing and
#           runs no ksc or mypy, under the guard; about a minute of one core.
#   --all   also what does not fit CI's time: every program of ksc's corpus
#           (../shared/ksc/programs), not a fixed third; the isolated builds of
#           the packaging example; the setuptools variant of the jax wheel;
#           benchmarks/run.py --quick end to end (tests/test_benchmarks.py).
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
echo "== pytest: the unit lane, no compiler or ksc available (--lane unit)"
.venv/bin/python -m pytest -q --lane unit || status=$?
echo "== pytest: the slow lane (--lane slow)"
.venv/bin/python -m pytest -q --lane slow --durations=40 || status=$?
echo "== the python- and ks-target tests on the other CPythons (scripts/test_pythons.sh)"
bash scripts/test_pythons.sh || status=1
echo "== the conversion tests under AddressSanitizer and UBSan (scripts/test_asan.sh)"
bash scripts/test_asan.sh || status=1
echo "== jax-target modules built with jax 0.10.2, run under jax 0.12.0.1 on CPython 3.12 (scripts/test_jax_compat.sh)"
bash scripts/test_jax_compat.sh || status=1
exit $status

#!/usr/bin/env bash
# The python- and ks-target tests on every other CPython ksbind claims
# (3.10, 3.12, 3.13; the main run, scripts/test.sh, is on .venv's Python with
# torch). Each version gets .venv-pyX.Y with ksbind's dependencies (no torch:
# torch 2.13 is on this machine's disk for one Python only), bundled runtime
# only (the main run covers ksc's runtime). A version that is not installed
# is skipped, saying so. Arguments go to pytest.
#
# One wheel for every CPython: a python-target wheel (cp310-abi3) is built once
# here on .venv's CPython (tests/abi3_support.py) and each version installs
# and runs that same file (tests/test_abi3.py, given it as KSBIND_ABI3_WHEEL).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSIONS=${KSBIND_TEST_PYTHONS:-"3.10 3.12 3.13"}
TESTS=(tests/test_calls.py tests/test_calls_targets.py tests/test_python_module.py
       tests/test_python_scalar_calls.py tests/test_e2e_examples.py tests/test_runtime.py
       tests/test_abi3.py::test_the_abi3_wheel_installs_and_runs_on_this_cpython)
wheel_dir=$(mktemp -d)
trap 'rm -rf "$wheel_dir"' EXIT
echo "== a python-target wheel built on $(.venv/bin/python -V 2>&1), for every CPython >= 3.10"
KSBIND_ABI3_WHEEL=$(.venv/bin/python -m tests.abi3_support "$wheel_dir")
export KSBIND_ABI3_WHEEL
echo "   $(basename "$KSBIND_ABI3_WHEEL")"
root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
status=0
for v in $VERSIONS; do
  py=$(ls -d "$root"/versions/"$v".*/bin/python"$v" 2>/dev/null | sort -V | tail -1 || true)
  if [ -z "$py" ]; then
    if [ -n "${CI:-}" ]; then
      # CI claims every one of these Pythons: a missing one fails the run, never a quiet skip.
      echo "FAILED: CI needs CPython $v (looked in $root/versions; pyenv install $v)"
      status=1
    else
      echo "SKIPPED: CPython $v is not installed here (looked in $root/versions)"
    fi
    continue
  fi
  venv=.venv-py$v
  if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv"
  fi
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "jinja2>=3.1" "pyyaml>=6" "pybind11>=2.11" \
    "pytest>=7" "numpy>=1.24" "hypothesis>=6"
  echo "== CPython $v: $("$venv/bin/python" -V 2>&1)"
  # ksbind from this tree (not installed: the tree is on sys.path through tests/); no torch here.
  if ! KSBIND_TEST_RUNTIMES=bundled PYTHONPATH="$PWD" "$venv/bin/python" -m pytest -q -p no:cacheprovider \
      "${TESTS[@]}" -k "not torch" "$@"; then
    status=1
  fi
done
exit $status

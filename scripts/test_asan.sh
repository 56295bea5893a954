#!/usr/bin/env bash
# The python-target conversion tests with the modules built under
# AddressSanitizer and UndefinedBehaviorSanitizer (gcc's libasan preloaded
# into Python, which is not built with it), leaks checked: LeakSanitizer keeps
# only the allocation's top frames (malloc_context_size), and leaks allocated
# inside the interpreter itself are suppressed (tests/asan.supp), so what is
# reported is allocated by ksbind's or the ks code. Needs .venv (scripts/setup.sh).
# Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
libasan=$(${CXX:-g++} -print-file-name=libasan.so)
# libstdc++ preloaded too: Python does not link it, and ASan's __cxa_throw
# interceptor must find it when it starts, or the first C++ throw aborts.
libstdcxx=$(${CXX:-g++} -print-file-name=libstdc++.so)
if [ ! -e "$libasan" ]; then
  if [ -n "${CI:-}" ]; then
    # CI claims the conversions are tested under ASan: without libasan that is a failure.
    echo "FAILED: CI needs libasan.so for ${CXX:-g++} (Debian: libasan8, with gcc)"
    exit 1
  fi
  echo "SKIPPED: no libasan.so for ${CXX:-g++} (the sanitizer run needs gcc's)"
  exit 0
fi
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
# PYTHONMALLOC=malloc (every Python allocation through the sanitizer's malloc, for its leak
# checks) only where nothing is compiled: the build starts compilers with a preexec_fn (Python
# code between fork and exec), and a fork while another thread held malloc's lock once left
# that child waiting for it forever (a CI run hung here).
export KSBIND_TEST_CACHE_DIR=$cache KSBIND_TEST_RUNTIMES=bundled KSBIND_SANITIZED=1
export KSBIND_CXXFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -O1"
export UBSAN_OPTIONS=print_stacktrace=1
TESTS=(tests/test_calls.py tests/test_python_module.py tests/test_python_scalar_calls.py)
# Build first without leak checks (g++ runs then, and the compiler's own leaks are not ours)...
ASAN_OPTIONS=detect_leaks=0 LD_PRELOAD="$libasan $libstdcxx" .venv/bin/python -c "
from tests.e2e_support import built
built('calls.yaml'); built('examples.yaml', 'examples_python')"
# ...then test the cached modules with leaks checked when each process exits
# (the ks-target comparisons are left out: their module would be compiled
# under the preloaded sanitizer, and they convert nothing of the python target's).
PYTHONMALLOC=malloc ASAN_OPTIONS="detect_leaks=1:malloc_context_size=6:fast_unwind_on_malloc=0" \
LSAN_OPTIONS="suppressions=$PWD/tests/asan.supp:print_suppressions=0" \
LD_PRELOAD="$libasan $libstdcxx" .venv/bin/python -m pytest -q -p no:cacheprovider "${TESTS[@]}" \
  -k "not torch and not ks_target" "$@"

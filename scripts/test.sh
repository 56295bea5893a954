#!/usr/bin/env bash
# Sets up .venv and runs the whole test suite (unit and end-to-end).
#   --all   also what does not fit CI's time: every program of ksc's corpus
#           (../shared/ksc/programs), not a fixed third.
# Other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--all" ]; then
  export KSBIND_CORPUS=all
  shift
fi
bash scripts/setup.sh
exec .venv/bin/python -m pytest -q "$@"

#!/usr/bin/env bash
# Sets up .venv and runs the whole test suite (unit and end-to-end).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest -q "$@"

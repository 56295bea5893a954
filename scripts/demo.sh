#!/usr/bin/env bash
# The README's main job on a fresh machine: set up .venv, then generate, build
# and call the relu3 example (prints inputs, results and the vjp).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python examples/relu3/run.py "$@"

#!/usr/bin/env bash
# The type and lint gates (configured in pyproject.toml): ruff over the code,
# tests and benchmarks, then mypy --strict over ksbind/. Part of scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
echo "== ruff check"
.venv/bin/ruff check ksbind tests benchmarks scripts examples || status=1
echo "== mypy (strict)"
.venv/bin/python -m mypy || status=1
exit $status

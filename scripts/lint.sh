#!/usr/bin/env bash
# The type and lint gates (configured in pyproject.toml): ruff over the code,
# tests and benchmarks, mypy --strict over ksbind/, then mypy over tests/ (not
# strict: function bodies checked, annotations not required). Part of scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
echo "== ruff check"
.venv/bin/ruff check ksbind tests benchmarks scripts examples || status=1
echo "== mypy (strict)"
.venv/bin/python -m mypy || status=1
echo "== mypy over tests (pyproject.toml's tests.* section)"
.venv/bin/python -m mypy tests || status=1
exit $status

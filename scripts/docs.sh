#!/usr/bin/env bash
# The documentation site (mkdocs.yml: MkDocs with Material, the API reference from
# the docstrings through mkdocstrings), built in strict mode: a broken link or
# anchor between the pages fails it (tests/test_docs_site.py runs the same in CI).
#   bash scripts/docs.sh            # build into site/ (git-ignored)
#   bash scripts/docs.sh serve      # serve at http://127.0.0.1:8000, rebuilt on edits
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/mkdocs ] || bash scripts/setup.sh
export NO_MKDOCS_2_WARNING=1
if [ "${1:-}" = "serve" ]; then
  exec .venv/bin/mkdocs serve --strict
fi
exec .venv/bin/mkdocs build --strict --site-dir site

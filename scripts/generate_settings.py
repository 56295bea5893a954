"""Write what the settings model (ksbind/spec.py) makes: docs/config.md's key tables
and the JSON Schema ksbind ships (ksbind/config.schema.json); and from the support
functions' table (ksbind/support.py) docs/targets.md's table and the torch and jax
targets' registrations and wrappers (each target record's ``written_ahead``); and from
render_module's settings (ModuleOptions' fields) and load_ks's (LoadOptions) their keywords'
TypedDicts (RenderKeywords in ksbind/codegen/render.py, LoadKeywords in ksbind/load.py). ``--check``: write
nothing, exit 1 naming each file that would change (tests/test_settings.py checks
the same)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ksbind import load
from ksbind.codegen import render
from ksbind.schema import SCHEMA_FILE, schema_text, with_support_table, with_tables
from ksbind.targets.registry import TARGETS

DOC = Path(__file__).resolve().parent.parent / "docs" / "config.md"
TARGETS_DOC = DOC.with_name("targets.md")
RENDER = Path(render.__file__)
LOAD = Path(load.__file__)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file would change")
    args = parser.parse_args()
    stale = []
    for path, text in ((DOC, with_tables(DOC.read_text(encoding="utf-8"))), (SCHEMA_FILE, schema_text()),
                       (TARGETS_DOC, with_support_table(TARGETS_DOC.read_text(encoding="utf-8"))),
                       (RENDER, render.with_render_keywords(RENDER.read_text(encoding="utf-8"))),
                       (LOAD, load.with_load_keywords(LOAD.read_text(encoding="utf-8"))),
                       *(item for t in TARGETS.values() if t.written_ahead for item in t.written_ahead().items())):
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path)
        if not args.check:
            path.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{'would change' if args.check else 'wrote'}: {path}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())

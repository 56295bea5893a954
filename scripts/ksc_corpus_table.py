"""Every program of ../shared/ksc/programs through ksc and ksbind (python target, or the target named
as the first argument: torch), as the
markdown table in docs/ksc.md: bindings, build seconds (cold, two builds at a time on
this machine), vjp checks. Run: .venv/bin/python scripts/ksc_corpus_table.py"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.ksc_corpus import KNOWN_WRONG_VJPS, all_programs, build_programs, check_vjp, checkable  # noqa: E402


def main() -> None:
    target = sys.argv[1] if len(sys.argv) > 1 else "python"
    with tempfile.TemporaryDirectory() as tmp:
        results = build_programs(all_programs(), target, Path(tmp) / "out", Path(tmp) / "cache")
        print("| program | bindings (vjps) | build s | vjp checks | result |")
        print("|---|---|---|---|---|")
        for name, r in results.items():
            vjps = sum(1 for b in r.bindings if b.vjp_name)
            checks = [check_vjp(r.module, b, target=target) for b in r.bindings if checkable(b)] if r.module else []
            passed = sum(c.ok for c in checks)
            if r.error is not None:
                outcome = "FAILED: " + r.error.message
            else:
                outcome = "ok" if passed == len(checks) else "; ".join(
                    f"{c.name}: {c.detail}" + (f" (known: {KNOWN_WRONG_VJPS[name, c.name]})"
                                               if (name, c.name) in KNOWN_WRONG_VJPS else "")
                    for c in checks if not c.ok)
            print(f"| {name} | {len(r.bindings)} ({vjps}) | {r.seconds:.1f} | {passed}/{len(checks)} | {outcome} |")


if __name__ == "__main__":
    main()

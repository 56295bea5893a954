"""What importing ksbind costs a process, beyond the bare interpreter.

    python -m benchmarks.import_time [--runs N] [--python PY] [--repo DIR]

Each command runs in a fresh interpreter, the commands interleaved (bare,
import ksbind, bare, ...) so machine load hits them alike; the medians are
printed, with the extra over the bare interpreter. ``--repo`` imports the
ksbind of another checkout (e.g. ``git worktree add /tmp/old 4401fea``) for a
before/after comparison. benchmarks/run.py has the same as a row.
"""
from __future__ import annotations

import functools
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import REPO
from benchmarks.timing import interleaved, parser

#: label -> code run by ``python -c``
COMMANDS = {
    "bare interpreter": "pass",
    "import ksbind": "import ksbind",
    "import torch": "import torch",
    "import torch; the torch target's runtime": "import torch; from ksbind.targets.torch import runtime",
}


def run_once(python: str, code: str, repo: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(repo)}
    start = time.perf_counter()
    # From a neutral folder: `-c` puts the working folder first on sys.path.
    subprocess.run([python, "-c", code], env=env, check=True, stdout=subprocess.DEVNULL, cwd=os.path.dirname(repo))
    return time.perf_counter() - start


def measure(runs: int = 21, python: str = sys.executable, repo: Path = REPO,
            commands: dict[str, str] | None = None) -> dict[str, float]:
    """Median seconds per command, each run in a fresh process, interleaved."""
    commands = COMMANDS if commands is None else commands
    # one warm-up run of each: the page cache, .pyc files
    medians = interleaved([functools.partial(run_once, python, code, repo) for code in commands.values()],
                          1, runs, warmup=1)
    return dict(zip(commands, medians))


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--repo", type=Path, default=REPO, help="the checkout whose ksbind is imported")
    args = ap.parse_args(argv)
    medians = measure(args.runs, args.python, args.repo)
    bare = medians["bare interpreter"]
    torch_alone = medians["import torch"]
    print(f"{args.runs} runs each, medians; ksbind from {args.repo}")
    for label, t in medians.items():
        base = torch_alone if "runtime" in label else bare
        extra = f"  (+{(t - base) * 1000:.1f} ms)" if label not in ("bare interpreter",) else ""
        print(f"  {label:<50} {t * 1000:8.1f} ms{extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

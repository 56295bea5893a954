"""docs/ks.md's snippets, run through the real ksc: the ``ks`` blocks together
as one module (python target, default bindings: every def bound), then checked
by value; each ``python`` block executed as written; each ``sh`` block run, its
output compared with the ``text`` block after it. Three builds in all.

Skipped (with the reason) only where ../shared/ksc is absent, i.e. outside CI.
"""
from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import ksbind
from tests.e2e_support import REPO, session_cache_dir
from tests.test_ksc import KSC, RUNTIME, needs_ksc

GUIDE = REPO / "docs" / "ks.md"
FENCE = re.compile(r"^```([a-z]*)\n(.*?)^```$", re.S | re.M)
#: What a block's language says about it: run it, or (text) it is the output of the block before.
LANGUAGES = {"ks", "python", "sh", "text"}


def blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(GUIDE.read_text(encoding="utf-8"))]


def test_every_block_is_one_the_test_runs() -> None:
    found = blocks()
    assert {lang for lang, _ in found} <= LANGUAGES, [lang for lang, _ in found if lang not in LANGUAGES]
    assert sum(lang == "python" for lang, _ in found) >= 2 and sum(lang == "ks" for lang, _ in found) >= 3
    for i, (lang, _) in enumerate(found):  # a text block is the output of the sh block before it
        assert lang != "text" or (i > 0 and found[i - 1][0] == "sh")


def test_anchors_and_links() -> None:
    """The headings other pages link to (#fast-vjps, #debug-builds) exist, and those pages link here."""
    text = GUIDE.read_text(encoding="utf-8")
    assert '<a id="fast-vjps"></a>\n## Fast vjps' in text
    assert "\n## Debug builds\n" in text  # GitHub's anchor: #debug-builds
    for page, target in (("README.md", "docs/ks.md"), ("docs/torch.md", "ks.md"), ("docs/ksc.md", "ks.md")):
        assert f"]({target}" in (REPO / page).read_text(encoding="utf-8"), page


@pytest.fixture
def ksc_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """ksc where the guide says a user has it ($KSC), builds in the session's cache."""
    if not KSC.is_file():
        pytest.skip(f"ksc is not in {KSC.parent.parent} (shared/ksc absent)")
    monkeypatch.setenv("KSC", str(KSC))
    monkeypatch.setenv("KSC_RUNTIME", str(RUNTIME))
    monkeypatch.setenv("KSBIND_CACHE_DIR", str(session_cache_dir()))
    monkeypatch.setenv("KSBIND_VERBOSE", "0")


@pytest.fixture(scope="module")
def ks_blocks_module() -> ModuleType:
    if not KSC.is_file():
        pytest.skip(f"ksc is not in {KSC.parent.parent} (shared/ksc absent)")
    text = "\n".join(body for lang, body in blocks() if lang == "ks")
    return ksbind.load_ks(text, ksc=KSC, ksc_runtime=RUNTIME, cache_dir=session_cache_dir(), quiet=True)


@needs_ksc
def test_ks_blocks_compile_and_compute(ks_blocks_module: ModuleType) -> None:
    m = ks_blocks_module
    defined = re.findall(r"^\(def (\w+)", "\n".join(b for lang, b in blocks() if lang == "ks"), re.M)
    assert defined and all(hasattr(m, name) for name in defined), [n for n in defined if not hasattr(m, n)]
    assert m.guide_count_prod([1.5, -2.0, 4.0]) == (2, 6.0)
    assert m.guide_trace(m.guide_outer([1.0, 2.0], [3.0, 4.0])) == 11.0
    assert m.guide_softplus(0.0) == pytest.approx(math.log(2.0))
    assert m.guide_softplus_vjp(0.0, 1.0) == pytest.approx(0.5)  # the gdef'd sufrev, bound by default
    # the two MLP forms are one loss
    x = [[0.1 * i - 0.2 * j for j in range(3)] for i in range(5)]
    y = [0.3 * i for i in range(5)]
    args = ([[0.2, -0.1, 0.3], [0.05, 0.4, -0.2]], [0.1, -0.1], [0.7, -0.5], 0.2, x, y)
    assert m.guide_mlp_slow(*args) == pytest.approx(m.guide_mlp_fast(*args), rel=1e-5)


@needs_ksc
@pytest.mark.parametrize("index", [i for i, (lang, _) in enumerate(blocks()) if lang == "python"])
def test_python_block(index: int, ksc_env: None) -> None:
    code = blocks()[index][1]
    exec(compile(code, f"{GUIDE}:block{index}", "exec"), {"__name__": f"ks_guide_{index}"})


@needs_ksc
@pytest.mark.parametrize("index", [i for i, (lang, _) in enumerate(blocks()) if lang == "sh"])
def test_sh_block(index: int, ksc_env: None) -> None:
    found = blocks()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", found[index][1]], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    if index + 1 < len(found) and found[index + 1][0] == "text":
        assert done.stdout == found[index + 1][1]

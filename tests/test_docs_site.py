"""The documentation site (mkdocs.yml, scripts/docs.sh) builds in strict mode, its API
page is generated from the public face's docstrings, and a broken link or anchor
between the pages fails the build."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MKDOCS = Path(sys.executable).with_name("mkdocs")

if not MKDOCS.exists():
    if os.environ.get("CI"):
        raise RuntimeError("CI needs mkdocs (the docs extra: scripts/setup.sh installs it)")
    pytest.skip("mkdocs is not installed (pip install -e '.[docs]')", allow_module_level=True)


def mkdocs_build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MKDOCS), "build", "--strict", "--site-dir", str(site)], cwd=root,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True, text=True,
                          timeout=600)


def test_the_site_builds_in_strict_mode_with_every_page_and_the_api_reference(tmp_path: Path) -> None:
    proc = mkdocs_build(REPO, tmp_path / "site")
    assert proc.returncode == 0, proc.stderr[-3000:]
    pages = {p.stem for p in (REPO / "docs").glob("*.md")}
    built = {p.parent.name for p in (tmp_path / "site").glob("*/index.html")}
    assert pages - {"index"} <= built, pages - built
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    import ksbind

    for name in ksbind.__all__[1:]:
        assert f"ksbind.{name}" in api or f">{name}<" in api, name
    assert "Compile ks source with ksc, bind it and import the module" in api  # load_ks's docstring


def test_a_broken_anchor_or_link_fails_the_build_naming_the_page(tmp_path: Path) -> None:
    root = tmp_path / "copy"
    shutil.copytree(REPO / "docs", root / "docs")
    shutil.copy(REPO / "mkdocs.yml", root / "mkdocs.yml")
    (root / "ksbind").symlink_to(REPO / "ksbind")  # for the API page
    page = root / "docs" / "jax.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nSee [the cache](building.md#no-such-section) "
                    "and [gone](no_such_page.md).\n", encoding="utf-8")
    proc = mkdocs_build(root, tmp_path / "site")
    assert proc.returncode != 0
    assert "'jax.md'" in proc.stderr and "#no-such-section" in proc.stderr, proc.stderr[-3000:]
    assert "no_such_page.md" in proc.stderr

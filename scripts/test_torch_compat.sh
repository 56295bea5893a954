#!/usr/bin/env bash
# The torch target's compatibility test: its modules (op libraries on PyTorch's
# stable ABI) built on .venv (torch 2.13.0) are imported and run, without
# rebuilding, from a venv with torch 2.14.1 (scripts/torch_compat.py says what is
# checked), and so is a hand-written stable-ABI op built there; then examples/package's wheel (torch>=2.10) is
# installed in a fresh venv with torch 2.14.1 and run. The venv lives outside the
# clone (KSBIND_TORCH_COMPAT_VENV, default ~/.cache/ksbind-ci/torch-2.14.1), so
# a machine that runs CI again reuses it: torch 2.14.1 is a 5.5 GB CUDA build
# (it runs on the CPU here), about 35 s to install from this machine's index.
set -euo pipefail
cd "$(dirname "$0")/.."
version=2.14.1
venv=${KSBIND_TORCH_COMPAT_VENV:-$HOME/.cache/ksbind-ci/torch-$version}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$version')" 2>/dev/null; then
  echo "== a venv with torch $version at $venv (once per machine)"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  .venv/bin/python -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "torch==$version" "numpy>=1.24" "pyyaml" "jinja2"
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# KSBIND_TORCH_COMPAT_CACHE: a build cache to build in (scripts/test.sh passes its
# pytest session's, where the same modules are built already); else a new one.
.venv/bin/python scripts/torch_compat.py build "$out" "${KSBIND_TORCH_COMPAT_CACHE:-$out/cache}"
# A hand-written op on torch's stable ABI (benchmarks/stable_vrelu3.cpp), built for torch >= 2.10
# against 2.13.0's headers: the check loads it under 2.14.1 too.
.venv/bin/python -m benchmarks.stable_op --build-to "$out" >/dev/null
# ksbind from this tree on sys.path for the wrappers' runtime (ksbind/targets/torch/runtime/);
# nothing is built there.
PYTHONPATH="$PWD" "$venv/bin/python" scripts/torch_compat.py check "$out"
# examples/package's wheel (its torch-target module, `torch>=2.10`), built here under
# torch 2.13.0, installed with pip in a fresh venv whose one package is torch 2.14.1 (linked from
# the venv above, by a .pth: no ksbind, no compiler needed there), and run.
cp -r examples/package "$out/package"
rm -rf "$out/package/build" "$out/package/dist"
.venv/bin/python -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps --no-index \
  -w "$out/wheel" "$out/package"
fresh="$out/fresh"
"$venv/bin/python" -m venv --without-pip "$fresh"
site=$("$fresh/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
"$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" > "$site/torch_2_14.pth"
"$venv/bin/python" -m pip --python "$fresh/bin/python" install -q --disable-pip-version-check --no-index \
  "$out"/wheel/ks_softsign-*.whl
(cd "$out" && env -u PYTHONPATH "$fresh/bin/python" "$OLDPWD/scripts/torch_compat.py" wheel)

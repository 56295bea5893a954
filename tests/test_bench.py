"""`python -m ksbind.bench MODULE` (ksbind/bench.py): the table and the bar chart from
timing results (unit lane: nothing compiled), and one run on a tiny module (slow lane)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ksbind import bench
from ksbind.bench import Result, Times

from .conftest import SHARED

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

RESULTS = [
    Result("vrelu3", "1000000", Times(2e-4, 4e-3, 3e-4), Times(6e-4, 1e-2, 7e-4)),
    Result("vrelu3", "16x16", Times(3e-6, 2e-5, 2e-5), None),
    Result("sqrl", "16x16", Times(9e-6, 2.4e-5, None), Times(1e-4, 1.3e-4, None),
           notes=("torch.compile: RuntimeError: refused",)),
]


def test_the_table_has_a_row_per_result_with_times_and_ratios() -> None:
    text = bench.table(RESULTS)
    lines = text.splitlines()
    assert lines[0].startswith("| function | config | fwd ksbind |")
    rows = [line for line in lines[2:] if line.startswith("| ")]
    assert len(rows) == 3
    first = rows[0].split(" | ")
    assert first[0] == "| vrelu3" and first[1] == "1000000"
    assert first[2:7] == ["200 us", "4 ms", "300 us", "0.050", "0.667"]
    assert rows[1].endswith("| - | - | - | - | - |")  # no forward+backward
    assert "| 24 us | - | 0.375 | - |" in rows[2]  # torch.compile could not run: no time, no ratio
    assert "- sqrl (16x16): torch.compile: RuntimeError: refused" in text


def test_the_png_is_written_and_has_content(tmp_path) -> None:
    path = bench.plot(RESULTS, tmp_path / "sub" / "chart.png", "test chart")
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 5_000
    import matplotlib.image

    pixels = matplotlib.image.imread(str(path))
    assert pixels.shape[0] > 300 and pixels.shape[1] > 500
    assert pixels.std() > 0.05  # bars, labels and axes, not a blank image


def test_configs_arguments_and_labels() -> None:
    import torch

    x = torch.zeros(3)
    assert len(bench.arguments(x)) == 1 and bench.arguments(x)[0] is x
    assert len(bench.arguments((torch.zeros(2), 1.5))) == 2
    assert bench.describe((torch.zeros(1000, 16, 16),)) == "1000x16x16"
    assert bench.describe((torch.zeros(4), torch.tensor(1.0), 3)) == "4, scalar, 3"


def test_a_module_is_loaded_from_a_file_or_by_name(tmp_path) -> None:
    (tmp_path / "bench_target_mod.py").write_text("VALUE = 7\n")
    assert bench.load_module(str(tmp_path / "bench_target_mod.py")).VALUE == 7
    with pytest.raises(FileNotFoundError):
        bench.load_module(str(tmp_path / "missing.py"))
    assert bench.load_module("ksbind.bench") is bench


TINY = textwrap.dedent("""\
    import torch
    import ksbind


    def relu3(x: float) -> float:
        if x < 0.0:
            return 0.0
        elif x < 1.0:
            return 1 / 3 * x ** 3
        else:
            return x - 2 / 3


    vrelu3 = ksbind.compile(relu3, mode="elementwise")


    def vrelu3_pytorch(x):
        return torch.where(x < 0.0, 0.0, torch.where(x < 1.0, x * x * x / 3, x - 2 / 3))


    def vrelu3_bench_configs():
        yield torch.linspace(-2, 2, 64)
    """)


@pytest.mark.slow
# torch.compile's first use imports torch.utils.mkldnn, whose class body calls torch.jit.script_method:
# a DeprecationWarning from torch itself, at import.
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
def test_main_benchmarks_a_tiny_module(tmp_path, monkeypatch, capsys) -> None:
    ksc = SHARED / "ksc" / "bin" / "ksc"
    if not ksc.is_file():
        pytest.skip(f"ksc is not at {ksc} (../shared/ksc absent)")
    monkeypatch.setenv("KSC", str(ksc))
    monkeypatch.setenv("KSBIND_CACHE_DIR", str(tmp_path / "cache"))
    module = tmp_path / "tiny_acts.py"
    module.write_text(TINY)
    png = tmp_path / "tiny.png"
    assert bench.main([str(module), "--quick", "--png", str(png), "--threads", "1"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| vrelu3 |")]
    assert len(rows) == 1, out
    cells = rows[0].split(" | ")
    assert cells[1] == "64" and "-" not in cells[2:12], out  # every side ran, forward and forward+backward
    assert "results differ" not in out
    assert png.read_bytes().startswith(PNG_SIGNATURE)
    assert Path(out.splitlines()[-1].removeprefix("wrote ")) == png

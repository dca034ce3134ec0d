"""``kernels bench`` checks what it needs before any work (issue 33): missing torch or Triton is one
line at once, and without a GPU a run Triton's interpreter would take minutes over is refused in one
line instead of running for 400 s."""

from __future__ import annotations

import importlib.util

import pytest

from netweave.errors import NetweaveError


def test_missing_triton_is_one_line_before_anything_loads(monkeypatch, capsys):
    from netweave.cli import main
    from netweave.kernels import bench

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "triton" else real(name, *a))
    with pytest.raises(NetweaveError, match=r"needs torch and triton \(triton missing\): pip install -e '.\[kernels\]'"):
        bench.check_requirements()
    loaded = []
    monkeypatch.setattr("netweave.graph.load_dataset", lambda spec: loaded.append(spec))
    with pytest.raises(SystemExit) as e:
        main(["kernels", "bench", "reddit-like:scale=1.0"])
    assert e.value.code == 2 and not loaded and capsys.readouterr().err.count("\n") == 1


def test_a_long_cpu_run_is_refused_with_its_estimate():
    pytest.importorskip("triton")
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("with a GPU the kernels run on it")
    from netweave.graph import load_dataset
    from netweave.kernels import Config
    from netweave.kernels.bench import CPU_BUDGET_S, bench_kernels, cpu_estimate_s

    g = load_dataset("cora")
    plain = cpu_estimate_s(g, 4, Config(8, 2, 4), 5, False, 1e-3)
    assert cpu_estimate_s(g, 4, Config(8, 2, 4), 5, True, 1e-3) > 5 * plain > 0  # the tuner's configurations
    with pytest.raises(NetweaveError, match=r"Triton's interpreter: 2,708 vertices and 5,278 edges with --tune would "
                                            r"take about \d+ min .*run it on a GPU, or drop --tune"):
        bench_kernels(g, 4, 16, do_tune=True)
    assert CPU_BUDGET_S <= 120

"""``netweave compare``: every section end to end at a small scale, the report, and the skip line
when torch is missing."""

import builtins
import json

import pytest

from netweave.cli import main
from netweave.compare import CompareConfig, compare, write_report
from netweave.errors import NetweaveError

SMALL = dict(ina_dataset="cora", ina_workers=4, switch_memory=100_000, routing_topology="leafspine:leaves=4,spines=2,hosts=4,ina=0.5,pipelines=2,seed=1",
             routing_workers=8, precision_topology="fattree:k=4,ina=0.4,seed=1,gbps=10", precision_workers=8,
             train_workers=2, epochs=2)


def test_every_section_has_its_baseline_and_a_report(tmp_path):
    sections = compare(CompareConfig(**SMALL))
    assert [s.name for s in sections] == ["exchange", "ina", "routing", "precision", "training"]
    for s in sections:
        assert s.skipped or any(r[s.columns[0]] == s.baseline for r in s.rows), s.name
    ina = {(r["strategy"], r["memory"]): r for r in sections[1].rows}
    assert ina[("host", "–")]["traffic_reduction"] == 0 and ina[("straw", "UL")]["traffic_reduction"] > 0
    routing = {r["algorithm"]: r for r in sections[2].rows}
    ina_rows = [r for name, r in routing.items() if "no INA" not in name]
    assert routing["aro"]["rate_gbps"] >= max(r["rate_gbps"] for r in ina_rows) - 1e-9
    # the baseline users run without INA sits beside it: ring and tree all-reduce, in both gradient sections
    assert {"ring (no INA)", "tree (no INA)"} <= set(routing)
    assert {"ring (no INA)", "tree (no INA)"} <= {r["scheme"] for r in sections[3].rows}
    path = write_report(sections, tmp_path, CompareConfig(**SMALL))
    text = path.read_text()
    assert all(f"![{s.name}]({s.name}.png)" in text for s in sections if not s.skipped)
    assert all((tmp_path / f"{s.name}.png").read_bytes()[:4] == b"\x89PNG" for s in sections if not s.skipped)
    saved = json.loads((tmp_path / "compare.json").read_text())
    assert len(saved["sections"]) == 5 and saved["run"]["netweave"] and saved["run"]["command"]


def test_traffic_reduction_has_the_sign_and_value_of_the_ina_command(capsys):
    """One convention for every ``*_reduction``: positive when traffic falls, 1 - new / baseline.
    compare's INA section once printed ``vs_host`` = new / baseline - 1, the opposite sign."""
    (s,) = compare(CompareConfig(**(SMALL | {"sections": ("ina",)})))
    rows = {(r["strategy"], r["memory"]): r for r in s.rows}
    host = rows[("host", "–")]["traffic_MB"]
    assert rows[("straw", "UL")]["traffic_reduction"] > 0
    for r in rows.values():
        assert r["traffic_reduction"] == pytest.approx(1 - r["traffic_MB"] / host)
    with pytest.raises(SystemExit):
        main(["ina", "cora", "--workers", "4", "--strategy", "straw", "--switch-memory", "unlimited", "--order", "random",
              "--json"])
    assert json.loads(capsys.readouterr().out)["traffic_reduction"] == pytest.approx(rows[("straw", "UL")]["traffic_reduction"])


def test_training_is_skipped_with_one_line_without_torch(monkeypatch):
    real = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name.split(".")[0] in ("torch", "torch_geometric"):
            raise ImportError(name=name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    (s,) = compare(CompareConfig(**(SMALL | {"sections": ("training",)})))
    assert s.skipped and "pip install" in s.skipped and not s.rows


def test_cli_compare_json_and_bad_section(capsys):
    with pytest.raises(SystemExit) as e:
        main(["compare", "--sections", "ina,routing", "--json"])
    out = capsys.readouterr().out
    assert (e.value.code or 0) == 0 and [s["name"] for s in json.loads(out)["sections"]] == ["ina", "routing"]
    with pytest.raises(NetweaveError, match="unknown section"):
        compare(CompareConfig(sections=("magic",)))


def test_each_section_says_what_to_see_and_where_it_differs_and_plots_numbers():
    sections = compare(CompareConfig(**{**SMALL, "sections": ("exchange", "ina", "routing", "precision")}))
    for s in sections:
        assert s.note and s.differs and s.metrics, s.name
        for metric in s.metrics:  # a chart plots a number, never a label such as the memory column
            assert all(isinstance(r[metric], (int, float)) for r in s.rows), (s.name, metric)


def test_the_default_ina_regime_is_the_papers_and_switchgnn_wins_there():
    """Defaults: a Reddit-like layer that does not fit 2 MB of aggregators (SwitchGNN §6's regime)."""
    (s,) = compare(CompareConfig(sections=("ina",)))
    rows = {(r["strategy"], r["memory"]): r for r in s.rows}
    host, straw, sgnn = rows[("host", "–")], rows[("straw", "2 MB")], rows[("switchgnn", "2 MB")]
    assert sgnn["traffic_MB"] < straw["traffic_MB"] < host["traffic_MB"]
    assert sgnn["completion_us"] < host["completion_us"]
    (auto,) = [r for r in s.rows if r["strategy"].startswith("switchgnn auto: ")]
    assert auto["completion_us"] <= min(sgnn["completion_us"], straw["completion_us"], host["completion_us"])


def test_the_exchange_section_plots_bytes_per_link_class_and_names_its_transport():
    """The caption says SPST moves bytes off the slow links: the figure plots each link class, and
    the PCIe-QPI-PCIe panel shows it; on a DGX-1 the default model is NCCL's and SPST wins there."""
    (s,) = compare(CompareConfig(sections=("exchange",)))
    assert {"NVLink_MB", "PCIe-QPI-PCIe_MB"} <= set(s.metrics) and "predicted_time_ms" in s.metrics
    rows = {(r["planner"], r["cost_model"]): r for r in s.rows}
    for model in ("alpha-beta", "dgcl"):
        spst, p2p = rows[("spst", model)], rows[("p2p", model)]
        assert spst["PCIe-QPI-PCIe_MB"] < p2p["PCIe-QPI-PCIe_MB"] / 2 and spst["speedup"] > 1
        assert spst["NVLink_MB"] + spst["PCIe-QPI-PCIe_MB"] == pytest.approx(spst["total_MB"])
    assert "nccl" in s.title and "tuning.cc" in s.differs and "link-class panel" in s.note
    (g,) = compare(CompareConfig(sections=("exchange",), transport="gloo"))
    assert "gloo" in g.title and {(r["planner"], r["stages"]) for r in g.rows if r["cost_model"] == "alpha-beta"} == \
        {("p2p", 1), ("spst", 1)}  # gloo's 0.76 ms stages: relaying does not pay for Cora


def test_convergence_verdicts():
    from netweave.compare import convergence

    flat = [0.2 + 0.6 * min(e / 50, 1) for e in range(200)]
    assert convergence(flat)[0] and "converged" in convergence(flat)[1]
    rising = [0.2 + 0.5 * e / 30 for e in range(30)]
    done, why = convergence(rising)
    assert not done and "not converged" in why
    assert not convergence([0.5] * 5)[0]


def test_training_reports_convergence_and_epoch_quartiles():
    (s,) = compare(CompareConfig(**(SMALL | {"sections": ("training",), "epochs": 3})))
    if s.skipped:
        pytest.skip(s.skipped)
    for r in s.rows:
        assert r["converged"] == "no" and r["epoch_q1_ms"] <= r["epoch_ms"] <= r["epoch_q3_ms"]
    assert "not converged" in s.note and "--topology dgx1 plays no part" in s.inputs


def test_sections_take_the_users_topology_where_they_can_and_say_why_not():
    """compare DATASET --topology T: a leaf-spine of hosts with INA switches serves the INA, routing and
    precision sections; a GPU server cannot, and each section says so."""
    small = {k: v for k, v in SMALL.items() if not k.startswith(("routing_topology", "precision_topology"))}
    net = "leafspine:leaves=2,spines=2,hosts=4,ina=0.5,pipelines=2,seed=1"
    sections = compare(CompareConfig(**(small | {"dataset": "cora", "topology": net, "ina_dataset": None,
                                                 "sections": ("ina", "routing", "precision")})))
    for s in sections:
        assert f"{net} (--topology" in s.inputs, (s.name, s.inputs)
    assert "graph cora (DATASET)" in sections[0].inputs and "DATASET plays no part" not in sections[0].inputs
    assert "DATASET plays no part" in sections[1].inputs
    default = compare(CompareConfig(**(small | {"sections": ("ina", "routing")})))
    assert all("--topology dgx1 is a GPU server (8 GPUs)" in s.inputs for s in default), [s.inputs for s in default]

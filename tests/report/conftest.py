"""Sections like ``compare``'s, with numbers made up: fast, and every case the report must show
(a baseline, a qualifier column, a metric spanning more than 20×, ``None``, a skipped section)."""

import pytest

from netweave.report import Section


def _sections() -> list[Section]:
    exchange = Section("exchange", "Embedding exchange of cora on dgx1, 5732 B per embedding",
                       ("planner", "cost_model", "predicted_time_ms", "stages", "total_MB", "speedup"), baseline="p2p",
                       metrics=("predicted_time_ms", "total_MB"), note="SPST moves fewer bytes over slow links than P2P.",
                       differs="netweave predicts with a calibrated α–β model as well as DGCL's §5.1.", seconds=1.25)
    for model, scale in (("alpha-beta", 1.0), ("dgcl-5.1", 60.0)):
        exchange.rows += [{"planner": "p2p", "cost_model": model, "predicted_time_ms": 2.0 * scale, "stages": 1,
                           "total_MB": 12.5, "speedup": None},
                          {"planner": "spst", "cost_model": model, "predicted_time_ms": 1.5 * scale, "stages": 3,
                           "total_MB": 9.75, "speedup": 1.333}]
    ina = Section("ina", "One GCN layer of cora through an INA switch (8 hosts, 100 Gb/s, 200 KB of aggregators)",
                  ("strategy", "memory", "traffic_MB", "traffic_reduction", "completion_us", "max_queue_KB", "blocks"),
                  baseline="host", metrics=("traffic_MB", "completion_us"), note="SwitchGNN sends the least traffic.",
                  differs="One switch, not a fat tree.", seconds=0.5,
                  rows=[{"strategy": s, "memory": m, "traffic_MB": t, "traffic_reduction": 1 - t / 40.0, "completion_us": c,
                         "max_queue_KB": 3.0, "blocks": b}
                        for s, m, t, c, b in (("host", "–", 40.0, 900.0, 1), ("straw", "UL", 10.0, 400.0, 1),
                                              ("straw", "200 KB", 30.0, 700.0, 4), ("switchgnn", "200 KB", 12.0, 450.0, 4))])
    training = Section("training", "Distributed GCN training of cora: 4 workers, 30 epochs",
                       ("comm", "test_acc", "exchange_MB_per_epoch", "epoch_ms"), baseline="allreduce",
                       metrics=("exchange_MB_per_epoch", "epoch_ms"),
                       skipped="skipped: training needs torch (torch is missing); enable it with pip install -e '.[train]'")
    return [exchange, ina, training]


@pytest.fixture
def sections() -> list[Section]:
    return _sections()

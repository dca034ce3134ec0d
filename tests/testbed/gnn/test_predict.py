"""The simulator's prediction of a testbed run (testbed/gnn/predict.py): the exchanges an epoch
holds, at the widths the wire carries, and the peer-to-peer time against its closed-form bound
(the busiest link's bytes at the link rate)."""

import numpy as np
import pytest


@pytest.mark.parametrize("transform_first", [True, False], ids=["hW", "h"])
def test_an_epochs_exchanges_and_p2p_against_the_busiest_link(tmp_path, transform_first):
    pytest.importorskip("pymetis")
    from netweave.ina import boundary_relation
    from netweave.partition import Partition
    from netweave.testbed.gnn.job import prepare_gnn_job
    from netweave.testbed.gnn.predict import predict_epoch_exchange_s

    workers, gbps = 4, 0.1
    job = prepare_gnn_job("cora", workers, 200_000, str(tmp_path), transform_first=transform_first)
    pred = predict_epoch_exchange_s(job, workers, gbps)
    layers = pred["layers"]
    # cora: 1433 features, 16 hidden, 7 classes; h W: every layer forward and backward
    assert [x["dim"] for x in layers] == ([16, 7] if transform_first else [1433, 16])
    assert [x["times_per_epoch"] for x in layers] == ([2, 2] if transform_first else [1, 2])
    assert pred["ina_s"] == pytest.approx(sum(x["ina_s"] * x["times_per_epoch"] for x in layers))
    assert pred["p2p_s"] == pytest.approx(sum(x["p2p_s"] * x["times_per_epoch"] for x in layers))

    # p2p: every boundary row once to each remote worker that needs it, 4·dim + 8 bytes (row and id);
    # on a star the busiest host link, up or down, carries at least its bytes at the link rate
    u, w = boundary_relation(job.graph, Partition(job.parts, workers, "metis")).sender_worker_pairs()
    owner = job.parts[u]
    for x in layers:
        row = 4 * x["dim"] + 8
        up = np.bincount(owner, minlength=workers) * row
        down = np.bincount(w, minlength=workers) * row
        bound = max(up.max(), down.max()) * 8 / (gbps * 1e9)
        assert bound <= x["p2p_s"] <= 1.25 * bound


def test_packed_rows_share_their_headers_as_the_tables_pack_them(tmp_path):
    """With the switch's memory the prediction prices a row at its share of its packet's headers
    (several units a UNIT or COPY, several sums a SUM on a pinned switch): between the bare values
    and a header a row, and the exchange no longer than a row a packet's; a closed form for one
    layer's counts."""
    pytest.importorskip("pymetis")
    from netweave.testbed.gnn.job import prepare_gnn_job
    from netweave.testbed.gnn.plans import load_plans
    from netweave.testbed.gnn.predict import packed_wire_bytes, packets, predict_epoch_exchange_s, wire_bytes
    from netweave.testbed.gnn.tables import copy_masks, layer_view, rows_per_packet

    job = prepare_gnn_job("cora", 4, 200_000, str(tmp_path))  # h W: 16 and 7 values a row
    plain = predict_epoch_exchange_s(job, 4, 0.1)
    held = predict_epoch_exchange_s(job, 4, 0.1, memory_bytes=200_000)
    one = predict_epoch_exchange_s(job, 4, 0.1, memory_bytes=200_000, held=False)
    for a, b, c in zip(plain["layers"], held["layers"], one["layers"]):
        assert 4 * a["dim"] < b["ina_row_bytes"] < c["ina_row_bytes"] < a["ina_row_bytes"] == wire_bytes(a["dim"])
    assert held["ina_s"] <= one["ina_s"] <= plain["ina_s"] and held["p2p_s"] == plain["p2p_s"]
    p = load_plans(f"{tmp_path}/plans.npz")[0]
    v = layer_view(p, 200_000)
    masks = copy_masks(p, v)
    per = rows_per_packet(v.dim)
    held_n, one_n = packets(p, v, masks, held=True), packets(p, v, masks, held=False)
    assert held_n["up_rows"] == p["unit_lo"].size and held_n["sum_rows"] == int((~v.copy).sum()) == one_n["sum_packets"]
    assert -(-held_n["up_rows"] // per) <= held_n["up_packets"] <= held_n["up_rows"]
    assert -(-held_n["sum_rows"] // per) <= held_n["sum_packets"] < held_n["sum_rows"]
    # by hand: 32 rows of 10 values up in one packet, their 32 sums down in one: 2 packets of
    # 28 + 42 header bytes and 32 vertices of 4 bytes over 64 rows of 40 bytes
    one_each = {"up_rows": 32, "up_packets": 1, "copy_rows": 0, "copy_packets": 0, "sum_rows": 32, "sum_packets": 1}
    assert packed_wire_bytes(10, one_each) == 40 + (2 * 70 + 32 * 4) / 64
    assert packed_wire_bytes(10, one_each, held=False) == 40 + 2 * 70 / 64
    assert packed_wire_bytes(512, {**one_each, "up_rows": 1, "sum_rows": 1}) == 2048 + 70  # a sum a packet: no vertex

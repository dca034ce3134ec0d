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

"""Training: one worker reaches the published accuracy; four workers give one worker's logits."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

from netweave.graph import load_dataset  # noqa: E402
from netweave.scenarios import TrainScenario  # noqa: E402
from netweave.runtime.launcher import exit_rank, free_port, init_group  # noqa: E402
from netweave.runtime.job import exchanged_widths  # noqa: E402
from netweave.runtime.trainer import train_rank  # noqa: E402

EPOCHS = 20


def single(dataset: str, epochs: int, **kw):
    job, graph = TrainScenario(dataset=dataset, workers=1, epochs=epochs, dump_logits="x", **kw).prepare()
    return train_rank(job, graph, 0, 1), graph


def test_gcn_on_cora_reaches_the_usual_accuracy():
    result, _ = single("cora", 200)
    train, val, test = (result.metrics[-1, i] / result.metrics[-1, i + 1] for i in (1, 3, 5))
    assert train > 0.95 and val > 0.78 and test > 0.815  # Kipf & Welling report 81.5 %
    assert np.all(result.per_epoch[:, 3] == 0)  # one worker sends nothing


def test_seeded_runs_are_deterministic():
    a, _ = single("cora", 5, model="sage", seed=3)
    b, _ = single("cora", 5, model="sage", seed=3)
    c, _ = single("cora", 5, model="sage", seed=4)
    assert np.array_equal(a.logits, b.logits)
    assert not np.allclose(a.logits, c.logits)


def rank_worker(rank, world, port, jobs, out_dir):
    torch.set_num_threads(1)
    init_group(rank, world, f"tcp://127.0.0.1:{port}", 60.0, "cpu")
    try:
        for i, job in enumerate(jobs):
            graph = load_dataset(job.config.dataset)
            r = train_rank(job, graph, rank, world)
            np.savez(f"{out_dir}/job{i}-rank{rank}.npz", logits=r.logits, ids=r.own_ids, per_epoch=r.per_epoch)
    finally:
        dist.destroy_process_group()
    exit_rank()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cora", "amazon_photo"])
def test_four_workers_give_the_single_worker_logits(tmp_path, shared, name):
    dataset = "cora" if name == "cora" else str(shared / "gnn_benchmark_npz" / f"{name}.npz")
    expected, graph = single(dataset, EPOCHS)
    # SPST planned on §5.1: on amazon_photo it relays (several stages), which is what this must cover
    jobs = [TrainScenario(dataset=dataset, workers=4, comm=comm, epochs=EPOCHS, dump_logits="x", cost_model="dgcl").prepare()[0]
            for comm in ("p2p", "spst", "allreduce")]
    if name == "amazon_photo":
        assert jobs[1].plan.num_stages > 1
    mp.start_processes(rank_worker, args=(4, free_port(), jobs, str(tmp_path)), nprocs=4, start_method="spawn")
    forward, backward = exchanged_widths(jobs[0].config, graph)
    for i, job in enumerate(jobs):
        logits = np.zeros_like(expected.logits)
        sent = 0
        for rank in range(4):
            z = np.load(tmp_path / f"job{i}-rank{rank}.npz")
            logits[z["ids"]] = z["logits"]
            sent += z["per_epoch"][:, 3]
        scale = np.abs(expected.logits).max()
        np.testing.assert_allclose(logits / scale, expected.logits / scale, rtol=0, atol=1e-4)
        if job.plan is not None:  # every hop carries each layer input forward and its gradient back
            assert np.all(sent == 4 * job.plan.num_hops * (sum(forward) + sum(backward)))
        else:  # ring all-reduce of (N, D) per exchange on each of the 4 ranks
            assert np.all(sent == 4 * 2 * 3 * graph.num_nodes * 4 * (sum(forward) + sum(backward)) // 4)

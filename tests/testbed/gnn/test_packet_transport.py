"""The worker's END bookkeeping (gnn/packet_transport.py): a block's ENDs are all in only once every
worker's has come from every shard of the switch (bpf/gnn_switch.bpf.c: on_end), whose number the
worker is told (WorkerConfig.switch_shards)."""

import numpy as np
import pytest

from netweave.testbed.gnn.packet import END, MAX_WORDS, build
from netweave.testbed.gnn.packet_transport import PacketTransport, _Batch, _Block, _Run
from netweave.testbed.gnn.tables import MAX_SHARDS

WORKERS = 3


class _Transport:
    rank, record = 0, None

    def __init__(self):
        self.counters = dict.fromkeys(("ends_ignored", "sums", "copies", "duplicates"), 0)


def _run(shards=1):
    empty = np.zeros(0, np.int64)
    blk = _Block(units=empty, unit_rows=empty, slot_v=empty, slot_row=empty, slot_copy=np.zeros(0, bool),
                 slot_need=empty, e_unit=empty, e_slot=empty, pull_v=empty, pull_unit=empty, pull_row=empty,
                 packet_first=empty, packet_rows=empty)
    tag = {"layer": 0, "direction": 0, "seq": 1, "block": 0, "sender": 0}
    return _Run(blk, tag, 1, WORKERS, shards)


def _ends(senders, chunk, target):
    """END packets as a received batch, every one of block 0 (receive.sort's pick)."""
    rows, lengths = build(END, layer=0, direction=0, seq=1, block=0, sender=np.asarray(senders), unit=0, chunk=chunk,
                          values=np.zeros((len(senders), 0), np.float32), target=target)
    batch = _Batch(np.pad(rows, ((0, 0), (0, 4 * MAX_WORDS))), lengths)
    batch.b.pick[:] = 0
    return batch


def _handle(run, t, batch):
    run.handle(t, batch, 0, np.zeros((1, 4), np.float32), np.zeros((1, 4)))


def test_one_shard_every_workers_end():
    run, t = _run(), _Transport()
    _handle(run, t, _ends([0, 1], chunk=0, target=1))
    assert not run.all_ends
    _handle(run, t, _ends([2], chunk=0, target=1))
    assert run.all_ends


def test_several_shards_every_shards_copy_of_every_end():
    run, t = _run(shards=2), _Transport()
    _handle(run, t, _ends([0, 1, 2], chunk=0, target=2))
    assert not run.all_ends  # shard 1 may still be walking units whose sums come before its ENDs
    _handle(run, t, _ends([0, 1], chunk=1, target=2))
    assert not run.all_ends
    _handle(run, t, _ends([2, 2], chunk=1, target=2))  # a repeated END counts once
    assert run.all_ends and run.ends.sum() == 6


@pytest.mark.parametrize("shards", [1, 2])
def test_an_end_whose_shard_fields_do_not_fit_is_ignored(shards):
    run, t = _run(shards), _Transport()
    _handle(run, t, _ends([0, 1, 2], chunk=0, target=9))  # more shards than a switch has
    _handle(run, t, _ends([0, 1, 2], chunk=0, target=shards + 1))  # another switch's count: no copy of it comes
    _handle(run, t, _ends([0, 1, 2], chunk=shards, target=shards))  # no such shard
    _handle(run, t, _ends([0, 1, 2], chunk=0, target=0))  # not from the switch
    assert not run.ends.any() and t.counters["ends_ignored"] == 12
    for shard in range(shards):
        _handle(run, t, _ends([0, 1, 2], chunk=shard, target=shards))
    assert run.all_ends


@pytest.mark.parametrize("shards", [0, MAX_SHARDS + 1])
def test_a_shard_count_the_switch_cannot_have_is_refused(shards):
    with pytest.raises(ValueError, match="shards"):
        PacketTransport(None, ("10.0.0.1", 1), 0, [], np.zeros(0, np.int64), 0, shards=shards)

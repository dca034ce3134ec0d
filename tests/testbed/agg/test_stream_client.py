"""A worker's collection of the streamed sums (:class:`netweave.testbed.agg.stream_client.Sums`)."""

import numpy as np

from netweave.testbed.agg import blockfp
from netweave.testbed.agg import streampacket as sp
from netweave.testbed.agg.stream_client import RETRY, StreamSpec, Sums

SIZE = 3000  # values: 2 fp8 chunks, 3 fp16 chunks
STREAMS = (StreamSpec(1, "fp8", 2, "10.0.0.1"), StreamSpec(2, "fp16", 2, "10.0.0.2"))


def results(spec: StreamSpec, step: int, chunks: list[int], fill: int) -> tuple[np.ndarray, np.ndarray]:
    """RESULT packets of ``spec``'s stream at ``step`` whose every value is ``fill``."""
    u = np.full((len(chunks), blockfp.values_per_packet(spec.precision)), fill, blockfp.WIRE[spec.precision])
    return sp.build(sp.RESULT, spec.agg_id, 0, spec.precision, step, np.array(chunks), u, exponents=0, want=0,
                    flags=0, size=SIZE, workers=spec.workers)


def batch(*parts) -> sp.Batch:
    rows = np.concatenate([r for r, _ in parts])
    lengths = np.concatenate([n for _, n in parts])
    return sp.parse(rows, lengths, len(rows))


def test_a_later_rounds_sums_that_come_early_are_kept_for_it():
    """The second round's and the next step's sums, arriving while this step's first round is still
    collected, are neither taken for it nor lost: each is there when its round starts, and a stale
    step's are dropped."""
    sums = Sums(STREAMS, SIZE)
    sums.start(5)
    new = sums.take(batch(results(STREAMS[0], 5, [0, 1], 11),   # this round
                          results(STREAMS[1], 5 | RETRY, [2], 22),  # this step's second round
                          results(STREAMS[0], 6, [1], 33),   # the next step
                          results(STREAMS[1], 4, [0], 44)))  # a stale one
    assert new == 2 and sums.have[0].all() and not sums.have[1].any()
    assert (sums.u[0] == 11).all() and sums.kept() == 2 and sums.stashed == 0

    need = [np.zeros(2, bool), np.array([False, False, True])]
    sums.start(5 | RETRY, need)
    assert sums.complete() and (sums.u[1][2] == 22).all()  # taken at once: no wait, no pull
    assert sums.stashed == 1 and sums.kept() == 1  # the next step's is still kept; the stale one dropped
    assert (sums.u[0] == 11).all()  # the first round's sums stay

    sums.start(6)
    assert list(sums.have[0]) == [False, True] and (sums.u[0][1] == 33).all() and not sums.have[1].any()
    assert sums.stashed == 2 and sums.kept() == 0


def test_what_a_worker_keeps_for_later_is_bounded():
    sums = Sums(STREAMS, SIZE)
    sums.start(0)
    for step in range(1, 20):
        sums.take(batch(results(STREAMS[0], step, [0, 1], step), results(STREAMS[1], step, [0, 1, 2], step)))
    assert sums.kept() == sums.stash_limit == Sums.STASH_STEPS * 5


def test_the_mean_is_every_streams_decoded_sum_over_the_workers():
    """Decoded as they come, the sums give the mean ``blockfp.decode`` gives of the whole vectors
    (bit for bit), whatever order the chunks came in and with a second round replacing a chunk."""
    rng = np.random.default_rng(0)
    sums = Sums(STREAMS, SIZE)
    sums.start(3)
    wire = {}
    for spec in STREAMS:
        per, dtype = blockfp.values_per_packet(spec.precision), blockfp.WIRE[spec.precision]
        n = blockfp.chunks(SIZE, spec.precision)
        u = rng.integers(0, np.iinfo(dtype).max, (n, per), dtype=dtype, endpoint=True)
        e = rng.integers(-30, 5, n).astype(np.int8)
        wire[spec] = [u, e]
        for c in rng.permutation(n):
            rows, lengths = sp.build(sp.RESULT, spec.agg_id, 0, spec.precision, 3, np.array([c]), u[c:c + 1],
                                     exponents=e[c], want=0, flags=0, size=SIZE, workers=spec.workers)
            sums.take(sp.parse(rows, lengths, 1))
    spec = STREAMS[1]  # chunk 1 of the fp16 stream again, in a second round at another exponent
    u, e = wire[spec]
    u[1], e[1] = u[1][::-1], e[1] + 2
    rows, lengths = sp.build(sp.RESULT, spec.agg_id, 0, spec.precision, 3 | RETRY, np.array([1]), u[1:2],
                             exponents=e[1], want=0, flags=0, size=SIZE, workers=spec.workers)
    sums.start(3 | RETRY, [np.zeros(2, bool), np.array([False, True, False])])
    sums.take(sp.parse(rows, lengths, 1))
    assert sums.complete()
    total = np.zeros(SIZE)
    for spec, (u, e) in wire.items():
        total += blockfp.decode(u, spec.precision, e).reshape(-1)[:SIZE]
    expected = (total / 8).astype(np.float32)
    assert np.array_equal(sums.mean(SIZE, 8), expected)

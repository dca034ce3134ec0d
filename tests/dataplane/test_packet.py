"""The packet on the wire: each precision's container (int16, int32, int64, big-endian), its byte
counts, and the vectorised batch forms against the scalar encode/decode, malformed rows included."""

import numpy as np
import pytest

from netweave.dataplane import fixedpoint
from netweave.dataplane.packet import (DATA, HEADER, MAX_VALUES, NACK, RESULT, Packet, PacketError, datagram_bytes,
                                       decode, decode_batch, encode_chunks)

PRECISIONS = ("fp8", "fp16", "fp32")


def extremes(precision, n, rng):
    """``n`` random values of ``precision``'s container with its bounds, -1, 0 and 1 among them."""
    lo, hi = fixedpoint.container_range(precision)
    v = rng.integers(lo, hi, size=n, endpoint=True, dtype=np.int64)
    v[:5] = [lo, hi, -1, 0, 1][:n]
    return v


@pytest.mark.parametrize("precision, width", [("fp8", 2), ("fp16", 4), ("fp32", 8)])
def test_a_packet_of_256_values_is_the_header_and_256_containers(precision, width):
    v = extremes(precision, 256, np.random.default_rng(width))
    raw = Packet(DATA, 1, 2, precision, 3, 4, v).encode()
    assert len(raw) == HEADER.size + 256 * width == datagram_bytes(precision, 256)  # fp8: 22 + 512
    assert raw[HEADER.size:] == v.astype(f">i{width}").tobytes()  # big-endian, two's complement
    q = decode(raw)
    assert q.values.dtype == np.int64 and np.array_equal(q.values, v)


def test_the_payload_ratio_is_pahinas_one_two_four():
    payload = [datagram_bytes(p, 256) - HEADER.size for p in PRECISIONS]
    assert payload == [512, 1024, 2048] and payload[1] == 2 * payload[0] and payload[2] == 4 * payload[0]


@pytest.mark.parametrize("precision, outside", [("fp8", 2 ** 15), ("fp8", -2 ** 15 - 1), ("fp16", 2 ** 31),
                                                ("fp16", -2 ** 31 - 1)])
def test_a_value_outside_the_container_is_refused_not_wrapped(precision, outside):
    with pytest.raises(PacketError, match="container"):
        Packet(DATA, 1, 1, precision, 0, 0, np.array([0, outside], np.int64)).encode()
    with pytest.raises(PacketError, match="container"):
        encode_chunks(DATA, 1, 1, precision, 0, 0, np.array([outside]), 16)
    with pytest.raises(PacketError, match="integers"):
        Packet(DATA, 1, 1, precision, 0, 0, np.array([0.5])).encode()


def test_the_widest_datagram_fits_udp():
    raw = Packet(DATA, 1, 1, "fp32", 0, 0, np.zeros(MAX_VALUES, np.int64)).encode()
    assert len(raw) <= 65_507
    with pytest.raises(PacketError, match="do not fit"):
        Packet(DATA, 1, 1, "fp32", 0, 0, np.zeros(MAX_VALUES + 1, np.int64)).encode()


@pytest.mark.parametrize("seed", range(6))
def test_encode_chunks_equals_the_scalar_encoding_packet_by_packet(seed):
    rng = np.random.default_rng(seed)
    for _ in range(10):
        precision = PRECISIONS[rng.integers(3)]
        per = int(rng.integers(1, 300))
        n = int(rng.choice([0, per, 3 * per, int(rng.integers(1, 2000))]))
        v = extremes(precision, n, rng)
        first = int(rng.integers(0, 1000))
        buffer, lengths = encode_chunks(DATA, 7, 9, precision, 11, first, v, per)
        k = max(1, -(-n // per))
        assert buffer.dtype == np.uint8 and buffer.shape == (k, HEADER.size + per * fixedpoint.value_bytes(precision))
        for i in range(k):
            want = Packet(DATA, 7, 9, precision, 11, first + i, v[i * per:(i + 1) * per]).encode()
            assert lengths[i] == len(want) and buffer[i, :lengths[i]].tobytes() == want


def test_encode_chunks_refuses_what_does_not_fit():
    with pytest.raises(PacketError, match="tensor_id"):
        encode_chunks(DATA, 1, 1, "fp8", 0, 0xFFFF, np.zeros(3, np.int16), 2)  # tensors 65535 and 65536
    for per in (0, MAX_VALUES + 1):
        with pytest.raises(PacketError, match="per packet"):
            encode_chunks(DATA, 1, 1, "fp8", 0, 0, np.zeros(3, np.int16), per)


def random_datagrams(rng, k):
    """``k`` datagrams, well-formed ones of every kind and precision and malformed ones of every sort."""
    out = []
    for _ in range(k):
        precision = PRECISIONS[rng.integers(3)]
        kind = int(rng.choice([DATA, RESULT, NACK]))
        n = 0 if kind == NACK else int(rng.integers(0, 40))
        raw = Packet(kind, int(rng.integers(1 << 16)), int(rng.integers(1 << 16)), precision, int(rng.integers(1 << 32)),
                     int(rng.integers(1 << 16)), extremes(precision, n, rng), int(rng.integers(1 << 16))).encode()
        damage = rng.integers(9)
        if damage == 1:
            raw = raw[:int(rng.integers(0, HEADER.size))]  # shorter than the header
        elif damage == 2:
            raw = b"NWAX" + raw[4:]
        elif damage == 3:
            raw = raw[:4] + bytes([int(rng.choice([0, 4, 255]))]) + raw[5:]  # unknown kind
        elif damage == 4:
            raw = raw[:9] + bytes([int(rng.choice([0, 4, 200]))]) + raw[10:]  # unknown precision
        elif damage == 5:
            raw = raw[:9] + bytes([int(rng.integers(1, 4))]) + raw[10:]  # another precision: another width
        elif damage == 6 and len(raw) > HEADER.size:
            raw = raw[:-1]  # a byte short
        elif damage == 7:
            raw = raw + bytes(int(rng.integers(1, 9)))  # bytes beyond the values
        out.append(raw)
    return out


@pytest.mark.parametrize("seed", range(5))
def test_decode_batch_equals_the_scalar_decoding_malformed_rows_included(seed):
    rng = np.random.default_rng(seed)
    datagrams = random_datagrams(rng, 300)
    stride = HEADER.size + 40 * 8
    buffer = rng.integers(0, 256, size=(len(datagrams), stride), dtype=np.uint8)  # stale bytes beyond each datagram
    lengths = np.array([len(d) for d in datagrams])
    for i, d in enumerate(datagrams):
        buffer[i, :len(d)] = np.frombuffer(d, np.uint8)
    lengths[0] = stride + 1  # a datagram longer than its row (a truncated receive) is malformed
    batch = decode_batch(buffer, lengths)
    assert len(batch) == len(datagrams) and batch.values.dtype == np.int64
    malformed = 0
    for i, d in enumerate(datagrams):
        try:
            want = decode(d) if i else None
        except PacketError:
            want = None
        if want is None:
            malformed += 1
            assert not batch.valid[i] and batch.count[i] == 0 and not batch.values[i].any()
            with pytest.raises(PacketError):
                batch.packet(i)
            continue
        assert batch.valid[i]
        got = batch.packet(i)
        assert (got.kind, got.agg_id, got.wor_id, got.precision, got.epoch_id, got.tensor_id, got.flags) == \
            (want.kind, want.agg_id, want.wor_id, want.precision, want.epoch_id, want.tensor_id, want.flags)
        assert np.array_equal(got.values, want.values) and not batch.values[i, want.values.size:].any()
    assert 50 < malformed < 250  # both sorts were exercised


def test_decode_batch_round_trips_encode_chunks_for_every_precision():
    rng = np.random.default_rng(7)
    for precision in PRECISIONS:
        v = extremes(precision, 1000, rng)
        buffer, lengths = encode_chunks(DATA, 1, 2, precision, 3, 10, v, 256)
        batch = decode_batch(buffer, lengths)
        assert batch.valid.all() and batch.tensor_id.tolist() == [10, 11, 12, 13]
        assert batch.count.tolist() == [256, 256, 256, 232]
        assert np.array_equal(batch.values.ravel()[:1000], v) and not batch.values.ravel()[1000:].any()
    empty = decode_batch(np.zeros((0, 30), np.uint8), np.zeros(0, np.int64))
    assert len(empty) == 0 and empty.values.shape == (0, 0)

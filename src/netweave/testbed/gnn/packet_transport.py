"""A worker's end of the SwitchGNN exchange through the kernel data plane
(``bpf/gnn_switch.bpf.c``): UDP packets (:mod:`.packet`), batched system calls
(:mod:`netweave.testbed.net.batchio`), each received batch walked in compiled code
(:mod:`.receive`; no Python loop per packet or per edge).

Per exchange (one layer, one direction; ``seq`` counts them) and block ``b`` of the layer's plan
(switchgnn.txt §3.3: blocks one after another):

* **up**: the worker's units of the block, one packet per row chunk (:data:`~.tables.VALUES`
  values), or, where a row is one chunk, several consecutive units with one copy mask a packet
  (:func:`~.tables.unit_packets`, beyond the paper; grouped by how many they carry), interleaved
  with receiving;
* **down**: a SUM per aggregated cell (a destination's chunk: :mod:`.tables`; a pinned switch
  sends several to one worker as a packet, beyond the paper), a COPY per UNIT packet for the
  cells the switch does not aggregate (forwarded by the plan, or bypassed: they do not fit its
  memory), summed here once per (edge, chunk); both walked row by row in compiled code
  (:mod:`.receive`);
* **§3.3**: when every cell of the block is complete, DONE; the block ends with NEXT;
* **END** (beyond the paper): after its last unit of the block, END, which the switch copies to
  every worker (a switch of several shards: each shard, behind the units handed to it, with
  ``chunk`` the shard and ``target`` the shards). A port is a FIFO, so once every worker's END has
  come (from every shard), every SUM and COPY of the block has too: a cell still missing was lost, and the worker pulls it (``fast_pulls``) after
  :data:`END_GRACE_S` of quiet rather than after ``retransmit_s``. While an END is missing its
  sender is not done (it started late, or the switch is slow): the timer then repeats the worker's
  own END (``ends_again``; a lost END must not stall anyone) and pulls nothing; once every END is in
  it pulls again for a lost PULL or RESEND. ``fast_pull=False``: no END, the paper's timer alone;
* **§3.4** (loss): when nothing has come for ``retransmit_s``, cells are missing, and the block's
  units had time to go up (the slowest sender's at ``link_gbps``), the worker PULLs them: the switch copies the PULL to every other worker, each resends its contributions
  to those cells (RESEND, never aggregated), and the puller sums them itself and ignores a late
  SUM of a pulled cell. A DONE without NEXT is sent again; a duplicate changes nothing (cells and
  edges are counted once). Packets of a later block or exchange are kept for it; of an earlier
  one, dropped. ``timeout_s`` without any progress fails the exchange.
* **§3.4** (congestion), with ``rate`` (:mod:`.rate`): the units go up paced at the rate, receiving
  in between; a SUM, COPY or RESEND whose ECN flag the switch's port set (:mod:`.ecn`) is answered
  with a CNP to its sender (one per sender per received batch), and a CNP halves the rate.

``out`` accumulates in float64 and is returned as float32, like the TCP transport's.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass

import numpy as np

from ..net import batchio
from .packet import CNP, COPY, DONE, ECN, END, HB, HEADER, MAX_WORDS, PULL, RESEND, SUM, UNIT, build, parse
from .plans import edge_ranges
from .predict import wire_bytes
from .receive import (COUNT, KIND, LATER, S_BYTES, S_ENDS, S_LATER, S_NEXT_FIRST, S_RATE, S_RUN, S_SATURATED, S_STALE,
                      T_COPIES, T_ENDS_IGNORED, T_NEXT, T_PROGRESS, T_PULLS, T_ROWS, T_SUMS, T_TAKEN, W0, Cells, Found,
                      Tables, as_batch, sort, take)
from .rate import RateControl
from .tables import MAX_SHARDS, VALUES, copy_masks, layer_view, rows_per_packet, unit_packets

BATCH = 256  # packets per sendmmsg between receives
END_GRACE_S = 0.005  # quiet after the last END before a pull: far beyond a packet's time in the switch (≤ 0.12 ms)
PACED = 16   # ... with a rate (congestion control): the bits of 16 packets, then the pause the rate asks
STRIDE = HB + 4 * MAX_WORDS


class _Batch:
    """Received packets: ``b``, the kernels' :class:`~.receive.Batch` over ``rows`` (``uint8 (n,
    STRIDE)``, C-contiguous) and ``lengths`` (its ``pick``: :func:`~.receive.sort`'s, which block
    in flight each packet is of), of which the first ``k`` are packets, and
    :func:`~.receive.take`'s outputs (reused)."""

    def __init__(self, rows: np.ndarray, lengths: np.ndarray):
        self.b, self.k = as_batch(rows, lengths), len(rows)
        self.found = Found(np.empty((0, 4), np.int64), np.zeros(len(rows), np.int64), np.zeros(8, np.int64))

    def of(self, k: int) -> "_Batch":
        self.k = k
        return self

    def packets(self, which: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The well-formed packets among the first ``k`` (where ``which``): headers and rows."""
        idx = np.arange(self.k) if which is None else np.flatnonzero(which)
        head, ok = parse(self.b.rows[idx], self.b.lengths[idx], idx.size)
        return head, self.b.rows[idx[ok]]


class ExchangeError(RuntimeError):
    """The data plane reported a saturated sum, or an exchange made no progress."""


@dataclass
class _Block:
    """What one worker sends and expects in one block of one layer."""

    units: np.ndarray       # (U,) my unit ids (the layer's numbering)
    unit_rows: np.ndarray   # (U,) their rows among my boundary vertices
    slot_v: np.ndarray      # (S,) my destinations' vertices, sorted
    slot_row: np.ndarray    # (S,) their rows among my boundary vertices
    slot_copy: np.ndarray   # (S,) summed here (forwarded or bypassed)
    slot_need: np.ndarray   # (S,) contributions
    e_unit: np.ndarray      # (E,) my incoming edges' units, sorted
    e_slot: np.ndarray      # (E,) their destinations (index into slot_*)
    pull_v: np.ndarray      # (P,) destinations (any owner) my units feed, sorted
    pull_unit: np.ndarray   # (P,) the unit
    pull_row: np.ndarray    # (P,) its row
    packet_first: np.ndarray  # (Q,) my UNIT packets: their first unit (index into units)
    packet_rows: np.ndarray   # (Q,) and how many units each carries (tables.unit_packets)


class _Run:
    """One block in flight: its cells' state (mode: 0 aggregated, 1 copies, 2 pulled; what each
    still needs), the (edge, chunk) pairs received, the workers' ENDs, DONE and NEXT. ``tag``: the
    header fields of its packets (layer, direction, seq, block, sender). ``shards``: the switch's
    CPUs that aggregate, each of which sends its own copy of every END (packet.END)."""

    def __init__(self, blk: _Block, tag: dict, chunks: int, workers: int, shards: int = 1):
        self.blk, self.b, self.chunks, self.tag, self.shards = blk, tag["block"], chunks, tag, shards
        self.ends = np.zeros((workers, shards), bool)  # whose END of this block came, from which shard
        self.fast_pulled = False
        self.mode = np.repeat(blk.slot_copy.astype(np.int8), chunks)
        self.left = np.where(self.mode == 1, np.repeat(blk.slot_need, chunks), 1).astype(np.int64)
        self.got = np.zeros((blk.e_unit.size, chunks), bool)
        self.next = False
        self.done_sent = 0.0
        self.start = self.progress = self.real = time.monotonic()
        self.expected_s = 0.0  # how long the block's units take to go up at the link rate
        self.wait = 0.0  # set by the transport: retransmit_s, doubled after each pull

    @property
    def complete(self) -> bool:
        return not (self.left > 0).any()

    @property
    def all_ends(self) -> bool:
        """Every worker's END of the block has come, from every shard of the switch."""
        return bool(self.ends.all())

    @property
    def finished(self) -> bool:
        return self.complete and self.next

    def handle(self, t: "PacketTransport", batch: "_Batch", j: int, rows, out) -> None:
        """The packets of ``batch`` that :func:`~.receive.sort` gave this block (``j``): its SUMs,
        COPYs, ENDs and NEXT (:func:`~.receive.take`); a PULL from another worker served here."""
        blk, k, found = self.blk, batch.k, batch.found
        want = k * (MAX_WORDS // (rows.shape[1] + 1) + 1) if t.record is not None else 0
        if want:
            found = found._replace(taken=np.empty((want, 4), np.int64))
        stats, last, taken = found.stats, found.last, found.taken
        stats[:] = 0
        tables = Tables(t.rank, rows.shape[1], self.chunks, blk.slot_v, blk.slot_row, blk.e_unit, blk.e_slot)
        take(batch.b, k, j, tables, Cells(self.mode, self.left, self.got, self.ends, out), found)
        self.next |= bool(stats[T_NEXT])
        for name, at in (("sums", T_SUMS), ("copies", T_COPIES), ("ends_ignored", T_ENDS_IGNORED)):
            t.counters[name] += int(stats[at])
        t.counters["duplicates"] += int(stats[T_ROWS] - stats[T_SUMS])
        if stats[T_PULLS]:
            head, data = batch.packets((batch.b.pick[:k] == j) & (batch.b.rows[:k, KIND] == PULL))
            mine = head["sender"] != t.rank
            t._serve_pulls(blk, head[mine], data[mine], self.tag["layer"], self.tag["direction"], self.b, rows)
        if t.record is not None:
            t._record(batch, j, taken[:min(int(stats[T_TAKEN]), want)], last)
        if stats[T_PROGRESS]:  # ENDs are no progress: workers repeat theirs while they wait (see tick)
            self.progress = self.real = time.monotonic()

    def signal(self, t: "PacketTransport", kind: int) -> None:
        """A packet of ``kind`` (END, DONE) without values, with this block's header fields."""
        t._send([build(kind, unit=0, chunk=0, values=np.zeros((1, 0), np.float32), **self.tag)])

    def tick(self, t: "PacketTransport", now: float) -> None:
        """DONE once complete; after ``wait`` with nothing come: PULL what is missing, or DONE again
        (§3.4). ``wait`` starts at ``retransmit_s`` and doubles after every pull (up to 16 times):
        a switch or a link that is only slow must not be flooded with resends.

        With END (``t.fast_pull``): the pull comes once every worker's END is in and nothing more
        has come for :data:`END_GRACE_S` (two CPUs may hand the switch a SUM after an END that
        overtook it); while an END is missing its sender is not done — it started late, or the
        switch is slow — and nothing is known lost, so the timer repeats this worker's own END
        (a lost END must not stall anyone) instead of pulling: on a dense graph one needless pull
        costs every contribution to its cells again."""
        complete = self.complete
        if complete and not self.done_sent:
            self.signal(t, DONE)
            self.done_sent = now
        if not complete and not self.fast_pulled and self.all_ends and now - self.progress >= END_GRACE_S:
            t._pull(self.blk, self.chunks, self.mode, self.left, self.got, self.tag)  # everything sent came: lost
            t.counters["fast_pulls"] += 1
            self.fast_pulled, self.progress = True, now
        if now - self.progress > self.wait:
            if t.fast_pull and not self.next:
                self.signal(t, END)
                t.counters["ends_again"] += 1
            if not complete and t.fast_pull and not self.all_ends:
                pass  # a sender is not done, or its END was lost (it repeats it): nothing is known lost yet
            elif not complete and now - self.start < self.expected_s + self.wait:
                pass  # its units may still be on their way up: nothing is lost yet
            elif not complete:
                t._pull(self.blk, self.chunks, self.mode, self.left, self.got, self.tag)
                self.wait = min(2 * self.wait, 16 * t.retransmit_s)
            elif not self.next and now - self.done_sent > self.wait:
                self.signal(t, DONE)
                t.counters["done_again"] += 1
                self.done_sent = now
            self.progress = now - self.wait / 2  # the next try after half the wait


class PacketTransport:
    """The exchange over ``sock`` (UDP, bound to the worker's data-plane port) with the switch at
    ``switch`` ((address, port)) for ``rank`` with plans ``plans``, boundary vertices ``boundary``
    (sorted global ids), the switch's ``memory_bytes``, ``overlap`` and ``shards`` (its CPUs that
    aggregate: ENDs come once from each)."""

    def __init__(self, sock: socket.socket, switch: tuple[str, int], rank: int, plans: list[dict],
                 boundary: np.ndarray, memory_bytes: int, *, overlap: bool = False, timeout_s: float = 60.0,
                 retransmit_s: float = 0.2, link_gbps: float = 0.0, rate: RateControl | None = None,
                 fast_pull: bool = True, shards: int = 1):
        if not 1 <= shards <= MAX_SHARDS:
            raise ValueError(f"shards {shards}: the switch has 1 to {MAX_SHARDS}")
        self.sock, self.switch, self.rank, self.boundary, self.shards = sock, switch, rank, boundary, shards
        self.rate, self.fast_pull = rate, fast_pull
        self.plans, self.timeout_s, self.retransmit_s, self.seq = plans, timeout_s, retransmit_s, 0
        self.overlap, self.link_gbps = overlap, link_gbps
        self.views = [layer_view(p, memory_bytes, overlap) for p in plans]
        self.masks = [copy_masks(p, v) for p, v in zip(plans, self.views)]  # per unit: who gets its COPY
        self.unit_of_edge = []
        for p in plans:
            edges, which = edge_ranges(p["unit_lo"], p["unit_hi"])
            u = np.empty(p["dst"].size, np.int64)
            u[edges] = which
            self.unit_of_edge.append(u)
        self.blocks: dict[tuple[int, int], _Block] = {}
        self.rows = np.zeros((1024, STRIDE), np.uint8)
        self.lengths = np.zeros(1024, np.int64)
        self.batch = _Batch(self.rows, self.lengths)
        self.early: list[np.ndarray] = []
        self._pending = None  # the exchange begun and not yet ended (a generator, see _steps)
        self.record: list | None = None  # a probe's: (keys (k, 4) block, vertex, chunk, sender; rows (k, VALUES)) per batch
        self.record_last: list = []  # ... and per SUM packet (k, 3): block, sender, its last row's vertex
        self.counters = dict.fromkeys(("pulls", "pulled_cells", "resends", "done_again", "sums", "copies",
                                       "duplicates", "stale", "marked", "cnps_sent", "fast_pulls", "ends", "ends_again", "ends_ignored",
                                       "receive_batches", "received_packets"), 0)
        self.bytes = {"sent": 0, "received": 0}  # UDP payload (the 28-byte header included)
        batchio.set_receive_buffer(sock, 64 << 20)
        sock.setblocking(False)

    # -- the plan, per block ----------------------------------------------------------------------
    def _block(self, layer: int, b: int) -> _Block:
        key = (layer, b)
        if key in self.blocks:
            return self.blocks[key]
        p, v, r = self.plans[layer], self.views[layer], self.rank
        B = int(p["num_blocks"])
        u0, u1 = int(p["unit_ptr"][r * B + b]), int(p["unit_ptr"][r * B + b + 1])
        units = np.arange(u0, u1)
        unit_rows = np.searchsorted(self.boundary, p["src"][p["unit_lo"][units]])
        slots = np.flatnonzero((v.owner == r) & (v.block == b))
        order = np.argsort(p["dest_v"][slots], kind="stable")
        slots = slots[order]
        slot_v = p["dest_v"][slots].astype(np.int64)
        where = np.full(v.need.size, -1, np.int64)
        where[slots] = np.arange(slots.size)
        e = np.flatnonzero(where[v.slot_of_edge] >= 0)
        e_unit = self.unit_of_edge[layer][e]
        o = np.argsort(e_unit, kind="stable")
        mine = np.flatnonzero((p["src"] >= 0) & (self.unit_of_edge[layer] >= u0) & (self.unit_of_edge[layer] < u1))
        pv = p["dst"][mine].astype(np.int64)
        po = np.argsort(pv, kind="stable")
        pu = self.unit_of_edge[layer][mine][po]
        first, rows = unit_packets(self.masks[layer][units], rows_per_packet(v.dim))
        blk = _Block(units, unit_rows, slot_v, np.searchsorted(self.boundary, slot_v), v.copy[slots],
                     v.need[slots], e_unit[o], where[v.slot_of_edge[e]][o], pv[po], pu,
                     np.searchsorted(self.boundary, p["src"][p["unit_lo"][pu]]), first, rows)
        self.blocks[key] = blk
        return blk

    # -- one exchange -------------------------------------------------------------------------------
    def exchange(self, layer: int, direction: int, rows: np.ndarray) -> np.ndarray:
        """Every block of ``layer``'s plan, one after another, or two at a time with ``overlap``
        (block ``b + 1`` goes up while block ``b`` comes down; ``b + 2`` after ``b``'s NEXT)."""
        self.begin(layer, direction, rows)
        return self.end()

    def begin(self, layer: int, direction: int, rows: np.ndarray) -> None:
        """:meth:`exchange` up to its first wait: the first blocks' units sent (all of a layer's
        that fits one block); :meth:`end` does the rest. What comes down meanwhile waits in the
        socket's buffer."""
        if self._pending is not None:
            raise ExchangeError(f"worker {self.rank}: an exchange began before the last one ended")
        steps = self._steps(layer, direction, rows)
        next(steps)
        self._pending = steps

    def end(self) -> np.ndarray:
        """The sums of the exchange :meth:`begin` started (float32, the rows' shape)."""
        steps, self._pending = self._pending, None
        try:
            next(steps)
        except StopIteration as done:
            return done.value
        raise AssertionError("an exchange yields once")  # pragma: no cover

    def _steps(self, layer: int, direction: int, rows: np.ndarray):
        """The exchange as a generator: it yields once, when its first blocks' units are sent."""
        self.seq += 1
        rows = np.ascontiguousarray(rows, np.float32)
        out = np.zeros(rows.shape, np.float64)
        B = int(self.plans[layer]["num_blocks"])
        window = 2 if self.overlap else 1
        runs: dict[int, _Run] = {}
        first = 0  # the oldest block not finished
        chunks = max(1, -(-rows.shape[1] // VALUES))

        def handle(batch: _Batch) -> np.ndarray:
            stats = np.zeros(S_RUN + window, np.int64)
            sort(batch.b, batch.k, self.seq, first, len(runs), window, stats)
            self.counters["stale"] += int(stats[S_STALE])
            if stats[S_LATER]:
                self.early.extend(batch.b.rows[:batch.k][batch.b.pick[:batch.k] == LATER])
                # a packet of block first + window or later (or of the next exchange) exists only after
                # every worker's DONE of block `first`: its NEXT, whether it came or not
                if stats[S_NEXT_FIRST] and first in runs:
                    runs[first].next = True
            if stats[S_SATURATED]:
                raise ExchangeError(f"worker {self.rank}: the switch saturated a sum (layer {layer}); a value "
                                    "exceeds the fixed-point range")
            for b, run in list(runs.items()):
                if stats[S_RUN + b - first]:
                    run.handle(self, batch, b - first, rows, out)
            return stats

        def start(b):
            tag = dict(layer=layer, direction=direction, seq=self.seq, block=b, sender=self.rank)
            runs[b] = _Run(self._block(layer, b), tag, chunks, int(self.plans[layer]["num_workers"]), self.shards)
            runs[b].wait = self.retransmit_s
            if self.link_gbps > 0:  # the slowest sender's units of this block (and of the one before, in flight)
                p = self.plans[layer]
                most = np.diff(p["unit_ptr"]).reshape(-1, B)[:, max(0, b - window + 1):b + 1].sum(axis=1).max()
                runs[b].expected_s = float(most) * wire_bytes(rows.shape[1]) * 8 / (self.link_gbps * 1e9)
            early, self.early = self.early, []
            if early:  # validated when they came: their lengths are their counts'
                data = np.stack(early)
                handle(_Batch(data, HB + 4 * data[:, COUNT:COUNT + 2].copy().view("<u2").reshape(-1).astype(np.int64)))
            blk = runs[b].blk
            step = PACED if self.rate else BATCH
            for data, lengths in self._unit_packets(layer, direction, b, blk, chunks, rows):
                for at in range(0, len(data), step):  # up, receiving in between
                    if self.rate:  # wait for the rate, receiving meanwhile
                        now = time.monotonic()
                        until = now + self.rate.pace(now, 8 * int(lengths[at:at + step].sum()))
                        while (left := until - time.monotonic()) > 0:
                            self._receive(handle, left)
                    self._send_rows(data[at:at + step], lengths[at:at + step])
                    self._receive(handle, 0.0)
            if self.fast_pull:
                runs[b].signal(self, END)

        for b in range(min(window, B)):
            start(b)
        yield
        while first < B:
            now = time.monotonic()
            for run in runs.values():
                run.tick(self, now)
            run = runs[first]
            if run.finished:
                del runs[first]
                first += 1
                if first + window - 1 < B:
                    start(first + window - 1)
                continue
            if now - min(r.real for r in runs.values()) > self.timeout_s:
                raise ExchangeError(f"worker {self.rank}: block {first} of layer {layer} made no progress for "
                                    f"{self.timeout_s:g} s ({int((run.left > 0).sum())} of {run.left.size} cells "
                                    "missing)")
            self._receive(handle, min(self.retransmit_s / 4, 0.05))
        return out.astype(np.float32)

    def _unit_packets(self, layer, direction, b, blk, chunks, rows):
        """My UNIT packets of block ``b``: a row's chunks one a packet, or several whole rows a
        packet (``blk.packet_first``, ``blk.packet_rows``)."""
        if chunks > 1:
            cidx = np.tile(np.arange(chunks), blk.units.size)
            return self._packets(UNIT, layer, direction, b, np.repeat(blk.units, chunks),
                                 np.repeat(blk.unit_rows, chunks), cidx, rows=rows)
        parts = []
        for r in np.unique(blk.packet_rows).tolist():
            first = blk.packet_first[blk.packet_rows == r]
            values = rows[blk.unit_rows[first[:, None] + np.arange(r)]].reshape(first.size, r * rows.shape[1])
            parts.append(build(UNIT, layer=layer, direction=direction, seq=self.seq, block=b, sender=self.rank,
                               unit=blk.units[first], chunk=0, values=values))
        return parts

    def _packets(self, kind, layer, direction, b, units, unit_rows, chunks, *, rows, target=0):
        """Packets of ``units`` (rows ``unit_rows`` of ``rows``), chunk ``chunks[i]`` each."""
        dim = rows.shape[1]
        parts = []
        for c in np.unique(chunks).tolist():
            sel = chunks == c
            lo, hi = c * VALUES, min(dim, (c + 1) * VALUES)
            parts.append(build(kind, layer=layer, direction=direction, seq=self.seq, block=b, sender=self.rank,
                               unit=units[sel], chunk=c, values=rows[unit_rows[sel], lo:hi], target=target))
        return parts

    def _send(self, parts) -> None:
        for data, lengths in parts:
            for at in range(0, len(data), BATCH):
                self._send_rows(data[at:at + BATCH], lengths[at:at + BATCH])

    def _send_rows(self, data, lengths) -> None:
        batchio.send_batch(self.sock, data, lengths, self.switch, timeout_s=self.timeout_s)
        self.bytes["sent"] += int(lengths.sum())

    def _receive(self, handle, timeout_s: float) -> None:
        while True:
            k = batchio.recv_batch(self.sock, self.rows, self.lengths, timeout_s)
            if k <= 0:
                return
            self.counters["receive_batches"] += 1
            self.counters["received_packets"] += k
            batch = self.batch.of(k)
            stats = handle(batch)
            self.counters["ends"] += int(stats[S_ENDS])  # a late one too (its block done)
            self.bytes["received"] += int(stats[S_BYTES])
            if self.rate is not None and stats[S_RATE]:
                self._congestion(batch.packets()[0])
            if k < len(self.rows):
                return
            timeout_s = 0.0

    def _congestion(self, head) -> None:
        """§3.4's rate control on a received batch's headers: CNPs halve the rate; marked data
        packets get a CNP back to their senders."""
        kind = head["kind"]
        if (kind == CNP).any():
            self.rate.on_cnp(time.monotonic())
        marked = ((head["flags"] & ECN) != 0) & ((kind == SUM) | (kind == COPY) | (kind == RESEND))
        if marked.any():
            self.counters["marked"] += int(marked.sum())
            senders = np.unique(head["sender"][marked])
            senders = senders[senders != self.rank]
            if senders.size:
                none = np.zeros((senders.size, 0), np.float32)
                self._send([build(CNP, layer=0, direction=0, seq=0, block=0, sender=self.rank, unit=0, chunk=0,
                                  values=none, target=senders)])
                self.counters["cnps_sent"] += int(senders.size)

    # -- what comes down ----------------------------------------------------------------------------
    def _record(self, batch: _Batch, j: int, taken: np.ndarray, last: np.ndarray) -> None:
        """A probe's record of block ``j``'s SUMs in ``batch``: each row taken (``taken``: packet,
        first value, vertex, values) with its block, chunk and sender, and per SUM packet its
        block, sender and last row's vertex (``last``)."""
        k = batch.k
        sums = np.flatnonzero((batch.b.pick[:k] == j) & (batch.b.rows[:k, KIND] == SUM))
        head = batch.b.rows[sums, :HB].copy().view(HEADER).reshape(sums.size)
        self.record_last.append(np.stack([head["block"], head["sender"], last[sums]], axis=1).astype(np.int64))
        p, at, v, cnt = taken.T
        of = batch.b.rows[p, :HB].copy().view(HEADER).reshape(p.size)
        keys = np.stack([of["block"], v, of["chunk"], of["sender"]], axis=1).astype(np.int64)
        chunk = np.zeros((p.size, VALUES), np.float32)
        for i in range(p.size):  # a probe's record, not the data path
            chunk[i, :cnt[i]] = batch.b.values[p[i], W0 + at[i]:W0 + at[i] + cnt[i]]
        self.record.append((keys, chunk))

    # -- §3.4 -----------------------------------------------------------------------------------------
    def _pull(self, blk, chunks, mode, left, got, tag):
        missing = np.flatnonzero(left > 0)
        turn = missing[mode[missing] == 0]
        if turn.size:  # an aggregated cell becomes the host's: every contribution, one by one
            mode[turn] = 2
            left[turn] = blk.slot_need[turn // chunks]
        pairs = np.stack([blk.slot_v[missing // chunks], missing % chunks], axis=1).astype(np.uint32)
        per = VALUES // 2
        for at in range(0, len(pairs), per):
            part = pairs[at:at + per].reshape(1, -1)
            self._send([build(PULL, unit=0, chunk=0, values=part, target=self.rank, **tag)])
        self.counters["pulls"] += 1
        self.counters["pulled_cells"] += int(missing.size)

    def _serve_pulls(self, blk, head, data, layer, direction, b, rows):
        for i in range(head.size):  # one PULL packet carries up to 256 cells: a loop per packet, not per cell
            n = int(head["count"][i])
            pairs = np.ascontiguousarray(data[i, HB:HB + 4 * n]).view(np.uint32).reshape(-1, 2).astype(np.int64)
            lo = np.searchsorted(blk.pull_v, pairs[:, 0], "left")
            hi = np.searchsorted(blk.pull_v, pairs[:, 0], "right")
            e, which = edge_ranges(lo, hi)
            if not e.size:
                continue
            units, unit_rows, ch = blk.pull_unit[e], blk.pull_row[e], pairs[which, 1]
            key = units * 64 + ch
            _, first = np.unique(key, return_index=True)
            ok = first[ch[first] * VALUES < rows.shape[1]]
            self._send(self._packets(RESEND, layer, direction, b, units[ok], unit_rows[ok], ch[ok], rows=rows,
                                     target=int(head["target"][i])))
            self.counters["resends"] += int(ok.size)

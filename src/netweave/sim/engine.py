"""The event loop of the switch simulator (numba). See :mod:`netweave.sim.simulate` for the model.

Every event is one heap tuple ``(time, seq, event, node, kind, dst, a, b, block, size, origin,
spine, count, cover, vrow)``; a message in flight *is* its arrival event, so nothing else needs to
grow. Output queues are FIFO with a virtual finish time per link direction: a message enqueued at
``t`` leaves at ``free_at = max(free_at, t) + size / rate`` and arrives ``delay`` later, and the
backlog it finds is ``(free_at - t) * rate`` bytes.

Blocks are synchronised through the coordinating switch, with a barrier between blocks (the paper)
or, when the plan asks for ``overlap``, double-buffered: two consecutive blocks may be in flight,
so every piece of per-block state of the hosts (per destination) and of the switches (per
switch and destination) has a second copy, chosen by the block's parity ``block % 2``. Without
overlap there is one copy and the event sequence is the barrier's.
"""

from __future__ import annotations

import heapq

import numba
import numpy as np

# events
ARRIVE, SEND, TIMER, CNP, BG, SAMPLE = 0, 1, 2, 3, 4, 5
# message kinds
RAW, COPY, RESULT, PARTIAL, RESEND, FETCH, DONE, NEXT, BGPKT = 0, 1, 2, 3, 4, 5, 6, 7, 8
# edge states: pending, in a switch aggregator, bypassed in a copy, delivered, pulled by the host
PENDING, AGGREGATED, BYPASSED, CREDITED, PULLED = 0, 1, 2, 3, 4

# indices of the integer options array
O_M, O_L, O_S, O_F, O_CTRL, O_MTU, O_NB, O_RECOVER, O_CC, O_SEED, O_D, O_OVERLAP = range(12)
# indices of the float options array
P_BUFFER, P_ECN, P_LOSS, P_TIMEOUT, P_AI_STEP, P_AI_EVERY, P_DEC_EVERY, P_MIN_RATE, P_BG_GAP, P_DT, P_HORIZON, P_CNP_DELAY = range(12)


@numba.njit(cache=True)
def _push(heap, ctr, t, ev, node, kind, dst, a, b, blk, size, org, spn, cnt, cov, vrow):
    ctr[0] += 1
    heapq.heappush(heap, (t, ctr[0], ev, node, kind, dst, a, b, blk, size, org, spn, cnt, cov, vrow))


@numba.njit(cache=True)
def _transmit(heap, ctr, t, link, head, kind, dst, a, b, blk, size, org, spn, cnt, cov, vrow,
              free_at, rate, delay, lbytes, maxq, bins, fopt, iopt, stats):
    """Enqueue a message on ``link`` (towards node ``head``): tail drop, ECN marking, random loss."""
    m = iopt[O_M]
    backlog = max(free_at[link] - t, 0.0) * rate[link]
    data = kind <= RESEND
    if link >= m:  # a switch output port
        if backlog + size > fopt[P_BUFFER]:
            stats[0] += 1  # tail drop
            return
        q = backlog + size
        maxq[link] = max(maxq[link], q)
        k = min(int(t / fopt[P_DT]), bins.shape[0] - 1)
        bins[k, 3] = max(bins[k, 3], q)
        if iopt[O_CC] and backlog > fopt[P_ECN] and data and org >= 0:
            stats[2] += 1  # ECN mark, reflected to the origin as a CNP
            _push(heap, ctr, t + fopt[P_CNP_DELAY], CNP, org, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    free_at[link] = max(free_at[link], t) + size / rate[link]
    if kind == BGPKT:
        stats[9] += size
    elif data:
        lbytes[link] += size
    else:
        stats[8] += size
    if fopt[P_LOSS] > 0.0 and np.random.random() < fopt[P_LOSS]:
        stats[1] += 1  # lost on the wire
        return
    _push(heap, ctr, free_at[link] + delay[link], ARRIVE, head, kind, dst, a, b, blk, size, org, spn, cnt, cov, vrow)


@numba.njit(cache=True)
def _spread(bins, col, t0, t1, size, dt):
    """Add ``size`` bytes received evenly over ``[t0, t1]`` to column ``col`` of the bins they overlap.

    A message's bytes reach a host over its serialisation time on the last link. Counting all of
    them in the bin of the last byte made a bin that ends mid-message gain bytes the next bin
    loses, and a host's throughput could exceed its line rate (issue 15). Receptions on one link
    never overlap, so spread this way no bin gets more than ``rate * dt`` per host. The last bin
    also takes whatever falls past the horizon; the pieces always sum to ``size``.
    """
    last = bins.shape[0] - 1
    k0 = min(int(t0 / dt), last)
    k1 = min(int(t1 / dt), last)
    if k0 >= k1 or t1 <= t0:
        bins[k1, col] += size
        return
    given = 0.0
    for k in range(k0, k1):
        part = size * (min(t1, (k + 1) * dt) - max(t0, k * dt)) / (t1 - t0)
        bins[k, col] += part
        given += part
    bins[k1, col] += size - given


@numba.njit(cache=True)
def _route(x, dst, spn, iopt, leaf_of):
    """Next (link, head node) from node ``x`` towards host ``dst`` (-1: the coordinator)."""
    m, nl, ns = iopt[O_M], iopt[O_L], iopt[O_S]
    if x < m:
        return x, m + leaf_of[x]
    if x < m + nl:
        l = x - m
        if dst >= 0 and leaf_of[dst] == l:
            return m + dst, dst
        s = 0 if dst < 0 else spn
        return 2 * m + l * ns + s, m + nl + s
    s = x - m - nl
    return 2 * m + nl * ns + s * nl + leaf_of[dst], m + leaf_of[dst]


@numba.njit(cache=True)
def simulate_kernel(iopt, fopt, leaf_of, rate, delay, parts, dest_index, src, dst, need1, need2,
                    unit_lo, unit_hi, unit_to, unit_ptr, in_edges, dest_v, dest_lo, dest_hi, dest_ptr,
                    capacity, chunks, values, bg_size, bg_cdf, nbins, dvert, forward):
    """Run one layer (arguments: see :func:`netweave.sim.simulate.simulate`, which builds them;
    ``forward`` ``(C,)``: edges whose destination the plan forwards unaggregated).

    Returns ``(t_end, finish_t (M,), link bytes (links,), max backlog (links,), bins (nbins, 4),
    counters (12,), peak aggregators per switch, delivered sums (n, D))``.
    """
    m, nl, ns, fbytes, ctrl = iopt[O_M], iopt[O_L], iopt[O_S], iopt[O_F], iopt[O_CTRL]
    d, nb = iopt[O_D], iopt[O_NB]
    ov = iopt[O_OVERLAP] != 0
    npar = 2 if ov else 1  # copies of the per-block state: one per block parity with overlap
    nsw = nl + ns
    np.random.seed(iopt[O_SEED])
    coord = m if ns == 0 else m + nl
    nlinks = rate.size
    free_at = np.zeros(nlinks)
    lbytes = np.zeros(nlinks, dtype=np.int64)
    maxq = np.zeros(nlinks)
    bins = np.zeros((nbins, 4))  # delivered bytes, aggregated-result bytes, aggregator bytes, max queue
    stats = np.zeros(12, dtype=np.int64)
    # 0 drops, 1 lost, 2 marks, 3 pulled vertices, 4 fetches, 5 resends, 6 unaggregated, 7 results,
    # 8 control bytes, 9 background bytes, 10 events, 11 status (0 ok, 1 stalled, 2 horizon)
    nd = dest_index.max() + 1 if dest_index.size else 0
    n = parts.size
    estate = np.zeros(src.size, dtype=np.int8)
    # hosts: the block being sent (cur) and, per parity, the destinations still missing a sum
    cur = np.zeros(m, dtype=np.int64)
    ucur = np.zeros(m, dtype=np.int64)
    uend = np.zeros(m, dtype=np.int64)
    sent_all = np.zeros(m, dtype=np.bool_)
    remaining = np.zeros((m, npar), dtype=np.int64)
    waiting = np.zeros(m, dtype=np.bool_)
    finished = np.zeros(m, dtype=np.bool_)
    finish_t = np.zeros(m)
    line = rate[:m].copy()
    hrate = rate[:m].copy()
    last_dec = np.full(m, -1.0)
    last_inc = np.zeros(m)
    last_prog = np.zeros(m)
    done_t = np.zeros(m)
    tgen = np.zeros(m, dtype=np.int64)
    # overlap only: blocks < known[h] are globally complete as far as h has heard; hblk[h, p]: the
    # block whose sums parity p awaits (>= B: none left); rep[h, p]: the last block of parity p
    # whose sums were held and units sent (its DONE said, where some block waits for it)
    known = np.zeros(m, dtype=np.int64)
    hblk = np.zeros((m, npar), dtype=np.int64)
    rep = np.full((m, npar), -1, dtype=np.int64)
    # destinations, per block parity
    need_cur = np.zeros((npar, nd), dtype=np.int64)
    got = np.zeros((npar, nd), dtype=np.int64)
    ind = np.zeros((npar, nd), dtype=np.int64)
    pull_blk = np.full((npar, nd), -1, dtype=np.int64)
    agg = np.zeros((npar, nd, d))
    out = np.zeros((n, d))
    # switches, per block parity
    slot_of = np.full((nsw, npar, nd), -1, dtype=np.int32)
    opened = np.full((nsw, npar, nd), -1, dtype=np.int32)
    bmode = np.full((nsw, npar, nd), -1, dtype=np.int32)
    byp = np.zeros((nsw, npar, nd), dtype=np.int32)
    byp_blk = np.full((nsw, npar, nd), -1, dtype=np.int32)
    sbase = np.zeros(nsw + 1, dtype=np.int64)
    for s in range(nsw):
        sbase[s + 1] = sbase[s] + capacity[s]
    total = sbase[nsw]
    s_cnt = np.zeros(total, dtype=np.int64)
    s_cov = np.zeros(total, dtype=np.int64)
    s_need = np.zeros(total, dtype=np.int64)
    s_blk = np.zeros(total, dtype=np.int64)
    s_val = np.zeros((total if d > 0 else 0, d))
    fstack = np.zeros(total, dtype=np.int64)
    ftop = np.zeros(nsw, dtype=np.int64)
    for s in range(nsw):
        for i in range(capacity[s]):
            fstack[sbase[s] + i] = sbase[s] + capacity[s] - 1 - i
        ftop[s] = capacity[s]
    peak = np.zeros(nsw, dtype=np.int64)
    used = np.zeros(1, dtype=np.int64)
    vpool = np.zeros((((nsw * dest_v.size + 1) if d > 0 else 0), d))
    vnext = np.zeros(1, dtype=np.int64)
    # coordinator: cblk, the oldest block not every host holds; the barrier counts DONEs of cblk in
    # cdone/ccount, overlap counts every block's in cgot (B x M) / ccnt (B)
    cblk = np.zeros(1, dtype=np.int64)
    cdone = np.zeros(m, dtype=np.bool_)
    ccount = np.zeros(1, dtype=np.int64)
    cgot = np.zeros((nb if ov else 0) * m, dtype=np.bool_)
    ccnt = np.zeros(nb if ov else 0, dtype=np.int64)
    nfin = 0
    t_end = 0.0
    heap = [(0.0, np.int64(0), np.int64(0), np.int64(0), np.int64(0), np.int64(0), np.int64(0), np.int64(0),
             np.int64(0), np.int64(0), np.int64(0), np.int64(0), np.int64(0), np.int64(0), np.int64(0))]
    heap.pop()
    ctr = np.zeros(1, dtype=np.int64)

    for h in range(m):  # every host starts block 0 at t = 0
        if ov:  # and awaits the sums of blocks 0 and 1
            ucur[h], uend[h] = unit_ptr[h * nb], unit_ptr[h * nb + 1]
            sent_all[h] = ucur[h] == uend[h]
            for p in range(2):
                _ov_rx(h, p, p, iopt, hblk, remaining, dest_ptr, dest_v, dest_lo, dest_hi, dest_index, need_cur,
                       got, ind, agg)
            if not sent_all[h]:
                _push(heap, ctr, 0.0, SEND, h, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            if iopt[O_RECOVER]:
                tgen[h] = 1
                _push(heap, ctr, fopt[P_TIMEOUT], TIMER, h, 0, 0, tgen[h], 0, 0, 0, 0, 0, 0, 0, 0)
            continue
        _start_block(heap, ctr, 0.0, h, 0, iopt, fopt, cur, ucur, uend, sent_all, remaining, waiting, tgen,
                     last_prog, unit_ptr, dest_ptr, dest_v, dest_lo, dest_hi, dest_index, need_cur, got, ind, agg)
    if fopt[P_BG_GAP] > 0:
        for h in range(m):
            _push(heap, ctr, np.random.exponential(fopt[P_BG_GAP]), BG, h, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    _push(heap, ctr, 0.0, SAMPLE, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    for h in range(m):
        if ov:
            nfin += _ov_progress(heap, ctr, 0.0, 0.0, h, iopt, fopt, cur, ucur, uend, sent_all, remaining, waiting,
                                 finished, finish_t, done_t, known, hblk, rep, unit_ptr, dest_ptr, dest_v, dest_lo,
                                 dest_hi, dest_index, need_cur, got, ind, agg, free_at, rate, delay, lbytes, maxq,
                                 bins, stats, leaf_of)
        elif remaining[h, 0] == 0 and sent_all[h]:
            nfin += _block_done(heap, ctr, 0.0, h, iopt, fopt, cur, waiting, finished, finish_t, done_t, free_at,
                                rate, delay, lbytes, maxq, bins, stats, leaf_of)

    while heap and nfin < m:
        ev = heapq.heappop(heap)
        t, kind_ev, x = ev[0], ev[2], ev[3]
        kind, mdst, a, b, blk, size, org = ev[4], ev[5], ev[6], ev[7], ev[8], ev[9], ev[10]
        spn, cnt, cov, vrow = ev[11], ev[12], ev[13], ev[14]
        stats[10] += 1
        if t > fopt[P_HORIZON]:
            stats[11] = 2
            break
        if kind_ev == SEND:
            h = x
            if finished[h] or waiting[h] or sent_all[h] or ucur[h] >= uend[h]:
                continue
            k = ucur[h]
            ucur[h] += 1
            if unit_to[k] < 0:
                _transmit(heap, ctr, t, h, m + leaf_of[h], RAW, -1, unit_lo[k], unit_hi[k], cur[h], fbytes, h, 0, 0, 0, -1,
                          free_at, rate, delay, lbytes, maxq, bins, fopt, iopt, stats)
            else:
                w = unit_to[k]
                stats[6] += 1
                _transmit(heap, ctr, t, h, m + leaf_of[h], COPY, w, unit_lo[k], unit_hi[k], cur[h], fbytes, h,
                          (h + w) % max(ns, 1), 0, 0, -1, free_at, rate, delay, lbytes, maxq, bins, fopt, iopt, stats)
            if ucur[h] >= uend[h]:
                sent_all[h] = True
                if ov:  # the next block may follow at once, paced like the next unit of this one
                    nxt = max(t + fbytes / hrate[h], free_at[h] - fbytes / line[h])
                    nfin += _ov_progress(heap, ctr, t, nxt, h, iopt, fopt, cur, ucur, uend, sent_all, remaining,
                                         waiting, finished, finish_t, done_t, known, hblk, rep, unit_ptr, dest_ptr,
                                         dest_v, dest_lo, dest_hi, dest_index, need_cur, got, ind, agg, free_at, rate,
                                         delay, lbytes, maxq, bins, stats, leaf_of)
                elif remaining[h, 0] == 0:
                    nfin += _block_done(heap, ctr, t, h, iopt, fopt, cur, waiting, finished, finish_t, done_t, free_at,
                                        rate, delay, lbytes, maxq, bins, stats, leaf_of)
                continue
            if iopt[O_CC] and t - last_inc[h] >= fopt[P_AI_EVERY] and t - last_dec[h] >= fopt[P_AI_EVERY]:
                hrate[h] = min(line[h], hrate[h] + fopt[P_AI_STEP])  # additive increase (§3.4)
                last_inc[h] = t
            nxt = max(t + fbytes / hrate[h], free_at[h] - fbytes / line[h])
            _push(heap, ctr, nxt, SEND, h, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            continue
        if kind_ev == SAMPLE:  # the state at every bin start: aggregators in use, largest switch backlog
            k = min(int(t / fopt[P_DT] + 0.5), nbins - 1)
            bins[k, 2] = max(bins[k, 2], used[0] * chunks * 128.0)
            for lk in range(m, nlinks):
                bins[k, 3] = max(bins[k, 3], (free_at[lk] - t) * rate[lk])
            if heap:  # nothing else pending would be a stall: let the loop end and say so
                _push(heap, ctr, (k + 1) * fopt[P_DT], SAMPLE, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            continue
        if kind_ev == CNP:
            h = x
            if t - last_dec[h] >= fopt[P_DEC_EVERY] or last_dec[h] < 0:
                hrate[h] = max(hrate[h] / 2.0, fopt[P_MIN_RATE])  # halve on an ECN mark (§3.4)
                last_dec[h] = t
            continue
        if kind_ev == BG:
            h = x
            r = np.random.random()
            j = np.searchsorted(bg_cdf, r)
            fsize = bg_size[min(j, bg_size.size - 1)]
            w = np.random.randint(0, m - 1)
            w = w + 1 if w >= h else w
            fs = np.random.randint(0, max(ns, 1))
            left = fsize
            while left > 0:
                p = min(left, iopt[O_MTU])
                left -= p
                _transmit(heap, ctr, t, h, m + leaf_of[h], BGPKT, w, 0, 0, 0, p, -1, fs, 0, 0, -1,
                          free_at, rate, delay, lbytes, maxq, bins, fopt, iopt, stats)
            _push(heap, ctr, t + np.random.exponential(fopt[P_BG_GAP]), BG, h, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            continue
        if kind_ev == TIMER:
            h = x
            if a != tgen[h] or finished[h]:
                continue
            tmo = fopt[P_TIMEOUT]
            if ov:
                # pull every incomplete destination of every block the host awaits that may be in
                # flight (blocks <= known + 1); repeat DONE(cur - 1) while blocked on its NEXT
                pending = False
                for p in range(2):
                    if hblk[h, p] < nb and hblk[h, p] <= known[h] + 1 and remaining[h, p] > 0:
                        pending = True
                if pending and t >= last_prog[h] + tmo:
                    for p in range(2):
                        bp = hblk[h, p]
                        if bp < nb and bp <= known[h] + 1 and remaining[h, p] > 0:
                            _pull(heap, ctr, t, h, bp, p, iopt, fopt, dest_ptr, dest_v, dest_lo, dest_hi, dest_index,
                                  in_edges, src, parts, need_cur, got, ind, pull_blk, agg, estate, free_at, rate,
                                  delay, lbytes, maxq, bins, stats, leaf_of)
                    last_prog[h] = t
                dn = cur[h] - 1
                again = waiting[h] and rep[h, dn & 1] >= dn
                if again and t >= done_t[h] + tmo:  # the DONE or the NEXT was lost: say DONE again
                    _transmit(heap, ctr, t, h, m + leaf_of[h], DONE, -1, 0, 0, dn, ctrl, h, 0, 0, 0, -1,
                              free_at, rate, delay, lbytes, maxq, bins, fopt, iopt, stats)
                    done_t[h] = t
                nxt = t + tmo
                if pending:
                    nxt = last_prog[h] + tmo
                if again:
                    nxt = min(nxt, done_t[h] + tmo) if pending else done_t[h] + tmo
                _push(heap, ctr, nxt, TIMER, h, 0, 0, tgen[h], 0, 0, 0, 0, 0, 0, 0, 0)
                continue
            if waiting[h]:
                if t >= done_t[h] + tmo:  # the DONE or the NEXT was lost: say DONE again
                    _transmit(heap, ctr, t, h, m + leaf_of[h], DONE, -1, 0, 0, cur[h], ctrl, h, 0, 0, 0, -1,
                              free_at, rate, delay, lbytes, maxq, bins, fopt, iopt, stats)
                    done_t[h] = t
                _push(heap, ctr, done_t[h] + tmo, TIMER, h, 0, 0, tgen[h], 0, 0, 0, 0, 0, 0, 0, 0)
                continue
            if t >= last_prog[h] + tmo:  # deadlines compare sums, never differences (rounding)
                _pull(heap, ctr, t, h, cur[h], 0, iopt, fopt, dest_ptr, dest_v, dest_lo, dest_hi, dest_index,
                      in_edges, src, parts, need_cur, got, ind, pull_blk, agg, estate, free_at, rate, delay, lbytes,
                      maxq, bins, stats, leaf_of)
                last_prog[h] = t
            _push(heap, ctr, last_prog[h] + tmo, TIMER, h, 0, 0, tgen[h], 0, 0, 0, 0, 0, 0, 0, 0)
            continue
        # ARRIVE: message at node x
        if x < m:
            h = x
            if kind == BGPKT:
                continue
            if kind == FETCH:  # resend what the requester has not credited, marked as bypass
                for i in range(a, b):
                    e = in_edges[i]
                    if estate[e] != CREDITED:
                        stats[5] += 1
                        v = dst[e]
                        _transmit(heap, ctr, t, h, m + leaf_of[h], RESEND, parts[v], e, e + 1, blk, fbytes, h,
                                  v % max(ns, 1), 0, 0, -1, free_at, rate, delay, lbytes, maxq, bins, fopt, iopt, stats)
                continue
            if kind == NEXT:
                if ov:  # every block < blk is complete everywhere
                    if blk > known[h] and not finished[h]:
                        known[h] = blk
                        last_prog[h] = t
                        nfin += _ov_progress(heap, ctr, t, t, h, iopt, fopt, cur, ucur, uend, sent_all, remaining,
                                             waiting, finished, finish_t, done_t, known, hblk, rep, unit_ptr, dest_ptr,
                                             dest_v, dest_lo, dest_hi, dest_index, need_cur, got, ind, agg, free_at,
                                             rate, delay, lbytes, maxq, bins, stats, leaf_of)
                    continue
                if waiting[h] and blk == cur[h] + 1:
                    waiting[h] = False
                    _start_block(heap, ctr, t, h, blk, iopt, fopt, cur, ucur, uend, sent_all, remaining, waiting,
                                 tgen, last_prog, unit_ptr, dest_ptr, dest_v, dest_lo, dest_hi, dest_index, need_cur,
                                 got, ind, agg)
                    if remaining[h, 0] == 0 and sent_all[h]:
                        nfin += _block_done(heap, ctr, t, h, iopt, fopt, cur, waiting, finished, finish_t, done_t,
                                            free_at, rate, delay, lbytes, maxq, bins, stats, leaf_of)
                continue
            # data for this host: its bytes arrived over the last hop's serialisation time, not at t
            t0 = t - size / rate[m + h]
            _spread(bins, 0, t0, t, size, fopt[P_DT])
            if kind == RESULT and b == 1:
                _spread(bins, 1, t0, t, size, fopt[P_DT])
            if ov:
                p = blk & 1
                if blk - 1 > known[h] and not finished[h]:  # someone sends blk: its NEXT is late or lost
                    known[h] = blk - 1
                    last_prog[h] = t
                    nfin += _ov_progress(heap, ctr, t, t, h, iopt, fopt, cur, ucur, uend, sent_all, remaining,
                                         waiting, finished, finish_t, done_t, known, hblk, rep, unit_ptr, dest_ptr,
                                         dest_v, dest_lo, dest_hi, dest_index, need_cur, got, ind, agg, free_at, rate,
                                         delay, lbytes, maxq, bins, stats, leaf_of)
                if finished[h] or hblk[h, p] != blk:  # a block whose sums the host holds already
                    continue
            else:
                p = 0
                if waiting[h] and blk == cur[h] + 1:  # data of the next block: its NEXT is late or lost
                    waiting[h] = False
                    _start_block(heap, ctr, t, h, blk, iopt, fopt, cur, ucur, uend, sent_all, remaining, waiting,
                                 tgen, last_prog, unit_ptr, dest_ptr, dest_v, dest_lo, dest_hi, dest_index, need_cur,
                                 got, ind, agg)
                if blk != cur[h] or waiting[h] or finished[h]:
                    continue
            completed = 0
            if kind == RESULT:
                dv = a
                if pull_blk[p, dv] == blk:
                    continue
                last_prog[h] = t
                got[p, dv] += cnt
                for j in range(d):
                    agg[p, dv, j] += vpool[vrow, j]
                if got[p, dv] == need_cur[p, dv]:
                    completed += 1
                    _fold(p, dv, dvert, out, agg, d)
            else:  # COPY or RESEND: credit every carried edge once
                for e in range(a, b):
                    st = estate[e]
                    if st == CREDITED or (kind == COPY and st == AGGREGATED):
                        continue
                    estate[e] = CREDITED
                    last_prog[h] = t
                    v = dst[e]
                    dv = dest_index[v]
                    got[p, dv] += 1
                    ind[p, dv] += 1
                    u = src[e]
                    for j in range(d):
                        out[v, j] += values[u, j]
                    if got[p, dv] == need_cur[p, dv]:
                        completed += 1
                        _fold(p, dv, dvert, out, agg, d)
            if completed:
                remaining[h, p] -= completed
                if ov:
                    if remaining[h, p] == 0:
                        nfin += _ov_progress(heap, ctr, t, t, h, iopt, fopt, cur, ucur, uend, sent_all, remaining,
                                             waiting, finished, finish_t, done_t, known, hblk, rep, unit_ptr, dest_ptr,
                                             dest_v, dest_lo, dest_hi, dest_index, need_cur, got, ind, agg, free_at,
                                             rate, delay, lbytes, maxq, bins, stats, leaf_of)
                elif remaining[h, 0] == 0 and sent_all[h]:
                    nfin += _block_done(heap, ctr, t, h, iopt, fopt, cur, waiting, finished, finish_t, done_t,
                                        free_at, rate, delay, lbytes, maxq, bins, stats, leaf_of)
            continue
        # at a switch
        sw = x - m
        if kind == DONE and x == coord:
            if ov:
                if blk < cblk[0]:  # the host missed a NEXT
                    lk, hd = _route(x, org, 0, iopt, leaf_of)
                    _transmit(heap, ctr, t, lk, hd, NEXT, org, 0, 0, cblk[0], ctrl, -1, 0, 0, 0, -1,
                              free_at, rate, delay, lbytes, maxq, bins, fopt, iopt, stats)
                elif not cgot[blk * m + org]:
                    cgot[blk * m + org] = True
                    ccnt[blk] += 1
                    c0 = cblk[0]
                    while cblk[0] < nb and ccnt[cblk[0]] == m:
                        cblk[0] += 1
                    if cblk[0] > c0:  # every host holds the blocks < cblk: the block after next may go
                        for h in range(m):
                            lk, hd = _route(x, h, 0, iopt, leaf_of)
                            _transmit(heap, ctr, t, lk, hd, NEXT, h, 0, 0, cblk[0], ctrl, -1, 0, 0, 0, -1,
                                      free_at, rate, delay, lbytes, maxq, bins, fopt, iopt, stats)
                continue
            if blk == cblk[0] and not cdone[org]:
                cdone[org] = True
                ccount[0] += 1
                if ccount[0] == m:  # every host has its results: start the next block (§3.3)
                    cblk[0] += 1
                    ccount[0] = 0
                    for h in range(m):
                        cdone[h] = False
                        lk, hd = _route(x, h, 0, iopt, leaf_of)
                        _transmit(heap, ctr, t, lk, hd, NEXT, h, 0, 0, cblk[0], ctrl, -1, 0, 0, 0, -1,
                                  free_at, rate, delay, lbytes, maxq, bins, fopt, iopt, stats)
            elif blk < cblk[0]:  # the host missed its NEXT
                lk, hd = _route(x, org, 0, iopt, leaf_of)
                _transmit(heap, ctr, t, lk, hd, NEXT, org, 0, 0, cblk[0], ctrl, -1, 0, 0, 0, -1,
                          free_at, rate, delay, lbytes, maxq, bins, fopt, iopt, stats)
            continue
        p = blk & 1 if ov else 0
        # overlap: a block every host holds already (a late copy, or one overtaken by the pulls) is
        # forwarded and touches no aggregator state, which belongs to the block after next by now
        stale = ov and blk < cblk[0]
        if kind == RAW:  # multicast into the aggregators of the unit's destinations (level 1)
            e = a
            while e < b:
                w = parts[dst[e]]
                g = e
                while g < b and parts[dst[g]] == w:
                    g += 1
                nbyp = 0
                local = leaf_of[w] == sw
                for f in range(e, g):
                    if stale:
                        nbyp += 1
                        continue
                    if forward[f]:  # the plan forwards this destination: no aggregator, ride the copy
                        if estate[f] == PENDING:
                            estate[f] = BYPASSED
                        nbyp += 1
                        continue
                    dv = dest_index[dst[f]]
                    slot = _slot(sw, p, dv, blk, need1[f], slot_of, opened, bmode, s_cnt, s_cov, s_need, s_blk, s_val,
                                 fstack, ftop, sbase, peak, used, bins, t, fopt, nbins, chunks, d, cblk)
                    if byp_blk[sw, p, dv] != blk:
                        byp_blk[sw, p, dv] = blk
                        byp[sw, p, dv] = 0
                    if slot >= 0:
                        if estate[f] == PENDING:  # a pulled or delivered edge stays the host's business
                            estate[f] = AGGREGATED
                        s_cnt[slot] += 1
                        s_cov[slot] += 1
                        u = src[f]
                        for j in range(d):
                            s_val[slot, j] += values[u, j]
                    else:
                        if estate[f] == PENDING:
                            estate[f] = BYPASSED
                        nbyp += 1
                        byp[sw, p, dv] += 1
                        slot = _current(sw, p, dv, blk, slot_of, s_blk, fstack, ftop, sbase, used)
                    if slot >= 0 and s_cov[slot] + byp[sw, p, dv] == s_need[slot]:
                        _emit(heap, ctr, t, x, sw, p, dv, slot, local, dst[f], w, blk, org, need2[f], fbytes, iopt,
                              fopt, slot_of, s_cnt, s_need, s_val, fstack, ftop, sbase, used, vpool, vnext,
                              free_at, rate, delay, lbytes, maxq, bins, stats, leaf_of, d)
                    elif slot < 0 and not local and ns > 0 and byp[sw, p, dv] == need1[f] and bmode[sw, p, dv] != blk:
                        lk, hd = _route(x, w, dst[f] % ns, iopt, leaf_of)  # nothing aggregated here: tell the spine
                        _transmit(heap, ctr, t, lk, hd, PARTIAL, w, dv, need2[f], blk, ctrl, org, dst[f] % ns, 0,
                                  need1[f], -1, free_at, rate, delay, lbytes, maxq, bins, fopt, iopt, stats)
                if nbyp:
                    stats[6] += 1
                    lk, hd = _route(x, w, (org + w) % max(ns, 1), iopt, leaf_of)
                    _transmit(heap, ctr, t, lk, hd, COPY, w, e, g, blk, fbytes, org, (org + w) % max(ns, 1), 0, 0, -1,
                              free_at, rate, delay, lbytes, maxq, bins, fopt, iopt, stats)
                e = g
            continue
        if kind == RESEND and not stale:  # release the aggregator of the destination, bypass it from now on (§3.4)
            dv = dest_index[dst[a]]
            bmode[sw, p, dv] = blk
            slot = slot_of[sw, p, dv]
            if slot >= 0 and s_blk[slot] == blk:
                _release(sw, p, dv, slot, slot_of, fstack, ftop, sbase, used)
        if kind == PARTIAL and x >= m + nl:  # level 2 at the spine
            dv = a
            if stale:
                if cnt > 0:
                    stats[6] += 1
                    lk, hd = _route(x, mdst, 0, iopt, leaf_of)
                    _transmit(heap, ctr, t, lk, hd, RESULT, mdst, dv, 0, blk, fbytes, org, 0, cnt, 0, vrow,
                              free_at, rate, delay, lbytes, maxq, bins, fopt, iopt, stats)
                continue
            if byp_blk[sw, p, dv] != blk:
                byp_blk[sw, p, dv] = blk
                byp[sw, p, dv] = 0
            slot = -1
            if bmode[sw, p, dv] != blk:
                slot = _current(sw, p, dv, blk, slot_of, s_blk, fstack, ftop, sbase, used)
                if slot < 0 and cnt > 0:
                    slot = _slot(sw, p, dv, blk, b, slot_of, opened, bmode, s_cnt, s_cov, s_need, s_blk, s_val,
                                 fstack, ftop, sbase, peak, used, bins, t, fopt, nbins, chunks, d, cblk)
            if slot >= 0:
                s_cnt[slot] += cnt
                s_cov[slot] += cov
                for j in range(d):
                    s_val[slot, j] += vpool[vrow, j]
            else:
                byp[sw, p, dv] += cov
                slot = _current(sw, p, dv, blk, slot_of, s_blk, fstack, ftop, sbase, used)
                if cnt > 0:  # forward the partial sum unaggregated
                    stats[6] += 1
                    lk, hd = _route(x, mdst, 0, iopt, leaf_of)
                    _transmit(heap, ctr, t, lk, hd, RESULT, mdst, dv, 0, blk, fbytes, org, 0, cnt, 0, vrow,
                              free_at, rate, delay, lbytes, maxq, bins, fopt, iopt, stats)
            if slot >= 0 and s_cov[slot] + byp[sw, p, dv] == s_need[slot]:
                _emit(heap, ctr, t, x, sw, p, dv, slot, True, dvert[dv], mdst, blk, org, 0, fbytes, iopt, fopt,
                      slot_of, s_cnt, s_need, s_val, fstack, ftop, sbase, used, vpool, vnext,
                      free_at, rate, delay, lbytes, maxq, bins, stats, leaf_of, d)
            continue
        lk, hd = _route(x, mdst, spn, iopt, leaf_of)
        _transmit(heap, ctr, t, lk, hd, kind, mdst, a, b, blk, size, org, spn, cnt, cov, vrow,
                  free_at, rate, delay, lbytes, maxq, bins, fopt, iopt, stats)

    if nfin < m and stats[11] == 0:
        stats[11] = 1
    for h in range(m):
        t_end = max(t_end, finish_t[h])
    return t_end, finish_t, lbytes, maxq, bins, stats, peak * chunks, out


@numba.njit(cache=True)
def _fold(p, dv, dvert, out, agg, d):
    """Add the aggregated part of completed destination ``dv`` (block parity ``p``) into its output row."""
    v = dvert[dv]
    for j in range(d):
        out[v, j] += agg[p, dv, j]
        agg[p, dv, j] = 0.0


@numba.njit(cache=True)
def _release(sw, p, dv, slot, slot_of, fstack, ftop, sbase, used):
    """Free the aggregator ``slot`` of ``dv`` (block parity ``p``) at switch ``sw``."""
    slot_of[sw, p, dv] = -1
    fstack[sbase[sw] + ftop[sw]] = slot
    ftop[sw] += 1
    used[0] -= 1


@numba.njit(cache=True)
def _current(sw, p, dv, blk, slot_of, s_blk, fstack, ftop, sbase, used):
    """The open aggregator of ``dv`` at ``sw`` for block ``blk``, or -1. A stale one of an older block
    of the same parity is freed: that block is complete everywhere (with overlap, ``blk`` is in
    flight only once the block two before it is, so a stale one is never of a block in flight)."""
    slot = slot_of[sw, p, dv]
    if slot >= 0 and s_blk[slot] < blk:
        _release(sw, p, dv, slot, slot_of, fstack, ftop, sbase, used)
        return -1
    return slot if slot >= 0 and s_blk[slot] == blk else -1


@numba.njit(cache=True)
def _slot(sw, p, dv, blk, need, slot_of, opened, bmode, s_cnt, s_cov, s_need, s_blk, s_val, fstack, ftop, sbase,
          peak, used, bins, t, fopt, nbins, chunks, d, cblk):
    """The aggregator of ``dv`` at switch ``sw`` in block ``blk`` (parity ``p``), opened on first use if
    memory allows (an aggregator opens at most once per block and never for a bypassed destination);
    -1 if none."""
    if bmode[sw, p, dv] == blk:
        return -1
    slot = _current(sw, p, dv, blk, slot_of, s_blk, fstack, ftop, sbase, used)
    if slot >= 0:
        return slot
    if opened[sw, p, dv] == blk or ftop[sw] == 0 or blk < cblk[0]:  # cblk: the oldest block in flight
        return -1
    ftop[sw] -= 1
    slot = fstack[sbase[sw] + ftop[sw]]
    slot_of[sw, p, dv] = slot
    opened[sw, p, dv] = blk
    s_cnt[slot] = 0
    s_cov[slot] = 0
    s_need[slot] = need
    s_blk[slot] = blk
    for j in range(d):
        s_val[slot, j] = 0.0
    used[0] += 1
    peak[sw] = max(peak[sw], sbase[sw + 1] - sbase[sw] - ftop[sw])
    k = min(int(t / fopt[P_DT]), nbins - 1)
    bins[k, 2] = max(bins[k, 2], used[0] * chunks * 128.0)
    return slot


@numba.njit(cache=True)
def _emit(heap, ctr, t, x, sw, p, dv, slot, local, v, w, blk, org, need2, fbytes, iopt, fopt, slot_of, s_cnt, s_need,
          s_val, fstack, ftop, sbase, used, vpool, vnext, free_at, rate, delay, lbytes, maxq, bins, stats, leaf_of, d):
    """A complete aggregator: its sum goes to host ``w`` (``local``) or, as a partial sum, to the spine
    of ``v`` for the second level; the aggregator is released."""
    vrow = 0
    if d > 0:
        vrow = vnext[0]
        vnext[0] += 1
        for j in range(d):
            vpool[vrow, j] = s_val[slot, j]
    stats[7] += 1
    ns = iopt[O_S]
    if local:
        lk, hd = _route(x, w, 0, iopt, leaf_of)
        _transmit(heap, ctr, t, lk, hd, RESULT, w, dv, 1, blk, fbytes, org, 0, s_cnt[slot], 0, vrow,
                  free_at, rate, delay, lbytes, maxq, bins, fopt, iopt, stats)
    else:
        s = v % ns
        lk, hd = _route(x, w, s, iopt, leaf_of)
        _transmit(heap, ctr, t, lk, hd, PARTIAL, w, dv, need2, blk, fbytes, org, s, s_cnt[slot], s_need[slot], vrow,
                  free_at, rate, delay, lbytes, maxq, bins, fopt, iopt, stats)
    _release(sw, p, dv, slot, slot_of, fstack, ftop, sbase, used)


@numba.njit(cache=True)
def _start_block(heap, ctr, t, h, blk, iopt, fopt, cur, ucur, uend, sent_all, remaining, waiting, tgen, last_prog,
                 unit_ptr, dest_ptr, dest_v, dest_lo, dest_hi, dest_index, need_cur, got, ind, agg):
    """Barrier: host ``h`` enters block ``blk``: its units to send and the destinations it waits for."""
    nb = iopt[O_NB]
    cur[h] = blk
    waiting[h] = False
    ucur[h], uend[h] = unit_ptr[h * nb + blk], unit_ptr[h * nb + blk + 1]
    sent_all[h] = ucur[h] == uend[h]
    lo, hi = dest_ptr[h * nb + blk], dest_ptr[h * nb + blk + 1]
    remaining[h, 0] = hi - lo
    for k in range(lo, hi):
        dv = dest_index[dest_v[k]]
        need_cur[0, dv] = dest_hi[k] - dest_lo[k]
        got[0, dv] = 0
        ind[0, dv] = 0
        for j in range(agg.shape[2]):
            agg[0, dv, j] = 0.0
    last_prog[h] = t
    if not sent_all[h]:
        _push(heap, ctr, t, SEND, h, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    if iopt[O_RECOVER]:
        tgen[h] += 1
        _push(heap, ctr, t + fopt[P_TIMEOUT], TIMER, h, 0, 0, tgen[h], 0, 0, 0, 0, 0, 0, 0, 0)


@numba.njit(cache=True)
def _block_done(heap, ctr, t, h, iopt, fopt, cur, waiting, finished, finish_t, done_t, free_at, rate, delay,
                lbytes, maxq, bins, stats, leaf_of):
    """Barrier: host ``h`` has sent its units and holds every sum of its block: 1 if that was the last
    block, else it reports DONE to the coordinating switch and waits for the next block (§3.3)."""
    done_t[h] = t
    if cur[h] == iopt[O_NB] - 1:
        finished[h] = True
        finish_t[h] = t
        return 1
    waiting[h] = True
    m = iopt[O_M]
    _transmit(heap, ctr, t, h, m + leaf_of[h], DONE, -1, 0, 0, cur[h], iopt[O_CTRL], h, 0, 0, 0, -1,
              free_at, rate, delay, lbytes, maxq, bins, fopt, iopt, stats)
    return 0


@numba.njit(cache=True)
def _ov_rx(h, p, blk, iopt, hblk, remaining, dest_ptr, dest_v, dest_lo, dest_hi, dest_index, need_cur, got, ind, agg):
    """Overlap: parity ``p`` of host ``h`` now awaits the sums of block ``blk`` (nothing past the last)."""
    nb = iopt[O_NB]
    hblk[h, p] = blk
    remaining[h, p] = 0
    if blk >= nb:
        return
    lo, hi = dest_ptr[h * nb + blk], dest_ptr[h * nb + blk + 1]
    remaining[h, p] = hi - lo
    for k in range(lo, hi):
        dv = dest_index[dest_v[k]]
        need_cur[p, dv] = dest_hi[k] - dest_lo[k]
        got[p, dv] = 0
        ind[p, dv] = 0
        for j in range(agg.shape[2]):
            agg[p, dv, j] = 0.0


@numba.njit(cache=True)
def _ov_progress(heap, ctr, t, tsend, h, iopt, fopt, cur, ucur, uend, sent_all, remaining, waiting, finished,
                 finish_t, done_t, known, hblk, rep, unit_ptr, dest_ptr, dest_v, dest_lo, dest_hi, dest_index,
                 need_cur, got, ind, agg, free_at, rate, delay, lbytes, maxq, bins, stats, leaf_of):
    """Overlap: everything host ``h`` may do at ``t``. A parity whose block's sums are all held moves on
    to the block after next; block ``b`` is reported (DONE to the coordinator, where a block waits
    for it: ``b + 2 < B``) once its sums are held and its units sent; block ``c + 1`` starts (its
    first unit goes out at ``tsend``) once block ``c`` is sent and block ``c - 1`` is complete
    everywhere (``known[h] >= c``). 1 when the host has sent everything and holds every sum."""
    if finished[h]:
        return 0
    nb, m = iopt[O_NB], iopt[O_M]
    moved = True
    while moved:
        moved = False
        for p in range(2):
            while hblk[h, p] < nb and remaining[h, p] == 0:
                _ov_rx(h, p, hblk[h, p] + 2, iopt, hblk, remaining, dest_ptr, dest_v, dest_lo, dest_hi, dest_index,
                       need_cur, got, ind, agg)
        for blk in range(max(cur[h] - 1, 0), cur[h] + 1):
            p = blk & 1
            if rep[h, p] < blk and hblk[h, p] > blk and (blk < cur[h] or sent_all[h]):
                rep[h, p] = blk
                if blk + 2 < nb:
                    _transmit(heap, ctr, t, h, m + leaf_of[h], DONE, -1, 0, 0, blk, iopt[O_CTRL], h, 0, 0, 0, -1,
                              free_at, rate, delay, lbytes, maxq, bins, fopt, iopt, stats)
                    done_t[h] = t
        if sent_all[h] and cur[h] + 1 < nb and known[h] >= cur[h]:
            c = cur[h] + 1
            cur[h] = c
            ucur[h], uend[h] = unit_ptr[h * nb + c], unit_ptr[h * nb + c + 1]
            sent_all[h] = ucur[h] == uend[h]
            if not sent_all[h]:
                _push(heap, ctr, tsend, SEND, h, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            moved = True
    waiting[h] = sent_all[h] and cur[h] + 1 < nb and known[h] < cur[h]  # blocked on NEXT(cur)
    if sent_all[h] and cur[h] == nb - 1 and hblk[h, 0] >= nb and hblk[h, 1] >= nb:
        finished[h] = True
        finish_t[h] = t
        waiting[h] = False
        return 1
    return 0


@numba.njit(cache=True)
def _pull(heap, ctr, t, h, blk, p, iopt, fopt, dest_ptr, dest_v, dest_lo, dest_hi, dest_index, in_edges, src, parts,
          need_cur, got, ind, pull_blk, agg, estate, free_at, rate, delay, lbytes, maxq, bins, stats, leaf_of):
    """Timeout at host ``h`` (§3.4): every incomplete destination of block ``blk`` (parity ``p``) drops
    its aggregated partial sums and pulls the features it has not received from their owners, which
    resend them marked "bypass"."""
    nb, m, ns = iopt[O_NB], iopt[O_M], iopt[O_S]
    for k in range(dest_ptr[h * nb + blk], dest_ptr[h * nb + blk + 1]):
        dv = dest_index[dest_v[k]]
        if got[p, dv] >= need_cur[p, dv]:
            continue
        stats[3] += 1
        pull_blk[p, dv] = blk
        got[p, dv] = ind[p, dv]
        for j in range(agg.shape[2]):
            agg[p, dv, j] = 0.0
        i = dest_lo[k]
        while i < dest_hi[k]:
            owner = parts[src[in_edges[i]]]
            g = i
            missing = 0
            while g < dest_hi[k] and parts[src[in_edges[g]]] == owner:
                if estate[in_edges[g]] != CREDITED:
                    estate[in_edges[g]] = PULLED
                    missing += 1
                g += 1
            if missing:
                stats[4] += 1
                _transmit(heap, ctr, t, h, m + leaf_of[h], FETCH, owner, i, g, blk, iopt[O_CTRL], h,
                          (h + owner) % max(ns, 1), 0, 0, -1, free_at, rate, delay, lbytes, maxq, bins, fopt, iopt, stats)
            i = g

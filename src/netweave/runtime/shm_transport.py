"""Shared-memory transport of ``graph_allgather`` between ranks on one host (issue 20, goal 3).

On loopback, gloo moves every message twice through the kernel (sender to socket, socket to
receiver) and ``graph_allgather`` adds a gather of the sent rows and a scatter of the received
ones. Here every rank's ``(num_buffer, D)`` buffer lives in a shared-memory segment that its peers
have mapped, and a receiver copies the rows a peer would have sent it straight from that peer's
buffer into its own with one ``index_select`` (one ``index_add_`` after it, backward): each row
crosses memory once, and the sender does nothing but publish that its rows are ready.

Synchronisation is one shared ``int64`` control row per rank: ``progress`` = ``call · STRIDE +``
the number of this call's stages the rank has finished (its rows for stage ``i`` are final once
``progress ≥ call · STRIDE + i``), ``done`` = the last call it finished reading its peers in, its
pid and the buffer slot it uses in the current call. A rank waits (spinning with ``sched_yield``,
then sleeping; at most the process group's timeout, as gloo's own operations) only where it reads: for each message, on the sender's progress; before it
overwrites a buffer, on every peer's ``done`` of the previous call. x86's ordered stores make the
rows visible before the counter that announces them; other architectures use the process group.

Segments: ``/dev/shm/netweave-shm-<uuid>-…`` (a prefix drawn per process group). Each is created,
mapped by every rank of the group, and unlinked by its creator right after a barrier, inside
``try/finally``: once set up nothing is left in ``/dev/shm`` whichever way the processes end (the
mappings live as long as the processes or the tensors), and a set-up that fails removes what it
made. A rank waiting on a peer whose process is gone raises instead of hanging.

Which calls use it (collectively decided, so every rank takes the same path): CPU tensors, a gloo
group whose ranks share host, boot, and network/mount/IPC/pid namespaces (ranks in separate
network namespaces, as on the shaped testbed, talk over their links), x86-64, tables where no row
is read by a peer in a stage in which its owner still writes it, and a free buffer slot on every
rank (otherwise that call goes through the process group).
"""

from __future__ import annotations

import mmap
import os
import platform
import socket
import time
import uuid
import weakref

import numpy as np
import torch
import torch.distributed as dist

SHM_DIR = "/dev/shm"
PREFIX = "netweave-shm-"
SLOTS = 4  # shared buffers per (tables, width, dtype) and rank, as the process-group path's pool keeps
STRIDE = 1 << 20  # progress units per call (more than any plan's stages)
WAIT_TIMEOUT_S = 600.0  # where the process group's own timeout cannot be read
_PROGRESS, _DONE, _PID, _SLOT = 0, 1, 2, 3
_CTRL_WIDTH = 8  # int64 per rank: 64 bytes, one cache line


def _ns_inode(kind: str) -> int:
    try:
        return os.stat(f"/proc/self/ns/{kind}").st_ino
    except OSError:
        return -1


def locality_key() -> tuple | None:
    """What ranks that can share memory have in common; None where this process cannot."""
    if platform.machine().lower() not in ("x86_64", "amd64") or not os.access(SHM_DIR, os.W_OK):
        return None
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        return None
    return (socket.gethostname(), boot, os.getuid(), *(_ns_inode(k) for k in ("net", "mnt", "ipc", "pid")))


def _create(name: str, size: int) -> tuple[int, mmap.mmap]:
    fd = os.open(os.path.join(SHM_DIR, name), os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        os.ftruncate(fd, max(size, 1))
        return fd, mmap.mmap(fd, max(size, 1))
    except BaseException:
        os.close(fd)
        _unlink(name)
        raise


def _open(name: str, size: int) -> mmap.mmap:
    fd = os.open(os.path.join(SHM_DIR, name), os.O_RDWR)
    try:
        return mmap.mmap(fd, max(size, 1))
    finally:
        os.close(fd)


def _unlink(name: str) -> None:
    try:
        os.unlink(os.path.join(SHM_DIR, name))
    except FileNotFoundError:
        pass


def _tensor(mm: mmap.mmap, rows: int, width: int, dtype: torch.dtype) -> torch.Tensor:
    raw = torch.from_numpy(np.frombuffer(mm, dtype=np.uint8, count=rows * width * _itemsize(dtype)))
    return raw.view(dtype).view(rows, width)


def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty(0, dtype=dtype).element_size()


class ShmGroup:
    """The control rows of one process group's ranks, mapped by all of them."""

    def __init__(self, group, prefix: str, rank: int, ranks: list[int], ctrl: mmap.mmap):
        self.group, self.prefix, self.rank = group, prefix, rank
        self.index = {g: i for i, g in enumerate(ranks)}  # global rank -> row
        self.ranks = list(ranks)  # row -> global rank
        self._mm = ctrl
        self.ctrl = np.frombuffer(ctrl, dtype=np.int64).reshape(len(ranks), _CTRL_WIDTH)
        self.me = self.index[rank]
        self.call = 0
        self.pools = 0  # pools set up so far: the same sequence on every rank (set-up is collective)
        self.ctrl[self.me, _PID] = os.getpid()
        self.timeout_s = _group_timeout_s(group)

    def wait(self, row: int, field: int, target: int) -> None:
        """Until ``ctrl[row, field] ≥ target``; raises if that peer's process is gone or time runs out."""
        ctrl = self.ctrl
        if ctrl[row, field] >= target:
            return
        spins, start = 0, time.monotonic()
        while ctrl[row, field] < target:
            spins += 1
            if spins < 2000:
                os.sched_yield()
                continue
            time.sleep(5e-5)
            if spins % 2000 == 0:
                pid = int(ctrl[row, _PID])
                if not _alive(pid):
                    if ctrl[row, field] >= target:  # it got there, then ended, since the last look
                        return
                    raise RuntimeError(f"graph_allgather (shared memory): rank {self.ranks[row]}'s process "
                                       f"{pid} is gone")
                if time.monotonic() - start > self.timeout_s:
                    raise RuntimeError(f"graph_allgather (shared memory): rank {self.ranks[row]} did not answer "
                                       f"within the process group's timeout ({self.timeout_s:g} s)")


def _group_timeout_s(group) -> float:
    """The process group's timeout, which a wait on a peer honours as gloo's own operations do."""
    try:
        pg = group if group is not None else dist.distributed_c10d._get_default_group()
        return pg._get_backend(torch.device("cpu")).options._timeout.total_seconds()
    except Exception:  # a private API: where it moved, the module's default
        return WAIT_TIMEOUT_S


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (an exited process its parent has not reaped yet counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


_GROUPS: dict = {}


def shm_group(group) -> ShmGroup | None:
    """This group's shared control rows, set up on the first call (collective: every rank of the
    group calls it at the same point), or None when its ranks cannot share memory."""
    key = group if group is not None else dist.group.WORLD
    if key in _GROUPS:
        return _GROUPS[key]
    state = None
    if dist.get_backend(group) == "gloo":
        world, me = dist.get_world_size(group), dist.get_rank(group)
        local = locality_key()
        prefix = f"{PREFIX}{uuid.uuid4().hex[:16]}-" if me == 0 else None
        name, size = None, world * _CTRL_WIDTH * 8
        made = None
        try:
            if me == 0 and local is not None:
                name = prefix + "ctrl"
                fd, made = _create(name, size)
                os.close(fd)
            info: list = [None] * world
            dist.all_gather_object(info, (local, prefix, dist.get_rank()), group=group)
            if info[0][0] is not None and all(i[0] == info[0][0] for i in info) and info[0][1] is not None:
                prefix = info[0][1]
                ctrl = made if me == 0 else _open(prefix + "ctrl", size)
                state = ShmGroup(group, prefix, dist.get_rank(), [i[2] for i in info], ctrl)
                dist.barrier(group=group)  # every rank has mapped it
        finally:
            if name is not None:
                _unlink(name)
    _GROUPS[key] = state
    return state


def _peer_sends(stages) -> dict[int, list[tuple[int, np.ndarray]]]:
    """Per receiving peer, the (local stage, send rows) of every message to it, in posting order."""
    out: dict[int, list] = {}
    for i, messages in enumerate(stages):
        for peer, send, _ in messages:
            if len(send):
                out.setdefault(peer, []).append((i, np.asarray(send.cpu() if isinstance(send, torch.Tensor) else send,
                                                               dtype=np.int64)))
    return out


def _race_free(stages, num_rows: int) -> bool:
    """No row is sent in a stage at or before one in which it is still written (then a peer could
    read it while its owner writes it); true of every plan the planners make."""
    last_written = np.full(num_rows, -1)
    first_sent = np.full(num_rows, len(stages))
    for i, messages in enumerate(stages):
        for _, send, recv in messages:
            if len(recv):
                last_written[np.asarray(recv)] = i
            if len(send):
                s = np.asarray(send)
                first_sent[s] = np.minimum(first_sent[s], i)
    return bool(np.all(last_written < first_sent))


def _as_range(rows: torch.Tensor) -> tuple[int, int] | None:
    if len(rows) and bool(torch.equal(rows, torch.arange(int(rows[0]), int(rows[0]) + len(rows), dtype=rows.dtype))):
        return int(rows[0]), len(rows)
    return None


class _Receive:
    """One message as its receiver runs it: read ``src`` rows of ``peer``'s buffer after its stage ``stage``."""

    __slots__ = ("row", "stage", "src", "src_span", "dst", "dst_span")

    def __init__(self, row, stage, src, dst, accumulate):
        self.row, self.stage = row, stage
        self.src = torch.from_numpy(src)
        self.src_span = _as_range(self.src)
        self.dst = torch.as_tensor(dst, dtype=torch.int64)
        self.dst_span = None if accumulate else _as_range(self.dst)


class ShmPool:
    """One rank's shared buffers for one (tables, width, dtype), its peers' buffers mapped, and
    each direction's receives with the sender's rows; set up collectively (``ShmPool.make``)."""

    def __init__(self, state: ShmGroup, rows: int, width: int, dtype: torch.dtype):
        self.state, self.rows, self.width, self.dtype = state, rows, width, dtype
        self.nbytes = rows * width * _itemsize(dtype)
        self.slots: list[tuple[torch.Tensor, int]] = []  # (buffer, its storage refs when idle)
        self.fds: list[int] = []
        self.committed = [False] * SLOTS
        self.peer_slots: dict[int, list[torch.Tensor]] = {}
        self.receives: dict[str, list[list[_Receive]]] = {}
        self.sent_rows: dict[str, int] = {}
        self.scratch = torch.empty((0, width), dtype=dtype)
        weakref.finalize(self, _close_all, self.fds)

    @staticmethod
    def make(state: ShmGroup, tables, width: int, dtype: torch.dtype, eligible: bool) -> "ShmPool | None":
        """Collective: every rank of the group calls it in the same call. None (on every rank)
        when some rank cannot take this path."""
        group = state.group
        world = len(state.index)
        serial = state.pools
        state.pools += 1
        rows = tables.buffer_ids.size
        eligible = eligible and _race_free(tables.forward, rows) and _race_free(tables.backward, rows)
        pool = ShmPool(state, rows, width, dtype)
        names = []
        try:
            if eligible:
                for k in range(SLOTS):
                    name = f"{state.prefix}p{serial}-r{state.rank}-s{k}"
                    fd, mm = _create(name, pool.nbytes)
                    names.append(name)
                    pool.fds.append(fd)
                    buf = _tensor(mm, rows, width, dtype)
                    pool.slots.append((buf, _storage_refs(buf)))
            mine = {"eligible": eligible and all(idle is not None for _, idle in pool.slots), "rows": rows,
                    "forward": _peer_sends(tables.forward), "backward": _peer_sends(tables.backward)}
            info: list = [None] * world
            dist.all_gather_object(info, (state.rank, mine), group=group)
            if not all(i[1]["eligible"] for i in info):
                pool._close()
                return None
            for peer, theirs in info:
                if peer != state.rank:
                    pool.peer_slots[peer] = [
                        _tensor(_open(f"{state.prefix}p{serial}-r{peer}-s{k}", theirs["rows"] * width * _itemsize(dtype)),
                                theirs["rows"], width, dtype) for k in range(SLOTS)]
            sends = {peer: theirs for peer, theirs in info}
            for direction in ("forward", "backward"):
                stages = getattr(tables, direction)
                pool.receives[direction] = pool._match(stages, sends, direction, direction == "backward")
                pool.sent_rows[direction] = sum(len(s) for messages in stages for _, s, _ in messages)
            most = max((sum(len(r.dst) for r in stage if r.dst_span is None) for d in pool.receives.values()
                        for stage in d), default=0)
            pool.scratch = torch.empty((most, width), dtype=dtype)
            dist.barrier(group=group)  # every peer has mapped our segments
            return pool
        finally:
            for name in names:
                _unlink(name)

    def _match(self, stages, sends, direction, accumulate) -> list[list[_Receive]]:
        state, taken, out = self.state, {}, []
        for messages in stages:
            stage = []
            for peer, _, recv in messages:
                if not len(recv):
                    continue
                k = taken.get(peer, 0)
                theirs = sends[peer][direction].get(state.rank, [])
                if k >= len(theirs) or len(theirs[k][1]) != len(recv):
                    raise RuntimeError(f"graph_allgather (shared memory): rank {state.rank}'s receive {k} from "
                                       f"{peer} ({direction}) has no matching send of {len(recv)} rows")
                taken[peer] = k + 1
                stage.append(_Receive(state.index[peer], theirs[k][0], theirs[k][1],
                                      recv.cpu() if isinstance(recv, torch.Tensor) else recv, accumulate))
            out.append(stage)
        for peer, k in taken.items():
            if k != len(sends[peer][direction].get(state.rank, [])):
                raise RuntimeError(f"graph_allgather (shared memory): rank {peer} sends rank {state.rank} more "
                                   f"{direction} messages than it receives")
        return out

    def _close(self) -> None:
        _close_all(self.fds)
        self.fds.clear()
        self.slots.clear()

    def free_slot(self) -> int:
        """A slot no tensor outside the pool references, its memory committed; -1 if none."""
        for k, (buf, idle) in enumerate(self.slots):
            if _storage_refs(buf) == idle:
                if not self.committed[k]:
                    try:  # pages now, so a full /dev/shm is an error here rather than SIGBUS later
                        os.posix_fallocate(self.fds[k], 0, max(self.nbytes, 1))
                    except OSError:
                        continue
                    self.committed[k] = True
                return k
        return -1

    def begin(self) -> tuple[int, list[int]]:
        """Open a call: wait until every peer has finished reading in the previous call, take a
        slot and announce it. Returns (call, every rank's slot, -1 where a rank has none); until
        :meth:`publish` ``(call, 0)`` no peer reads this rank's buffer."""
        state = self.state
        previous = state.call
        for row in range(len(state.index)):
            if row != state.me:
                state.wait(row, _DONE, previous)
        state.call = call = previous + 1
        slot = self.free_slot()
        state.ctrl[state.me, _SLOT] = slot
        return call, slot

    def publish(self, call: int, stages_done: int) -> None:
        self.state.ctrl[self.state.me, _PROGRESS] = call * STRIDE + stages_done

    def slots_of_all(self, call: int) -> list[int]:
        """After everyone published ``(call, 0)``: every rank's slot for this call."""
        state = self.state
        for row in range(len(state.index)):
            if row != state.me:
                state.wait(row, _PROGRESS, call * STRIDE)
        return [int(s) for s in state.ctrl[:, _SLOT]]

    def finish(self, call: int) -> None:
        self.state.ctrl[self.state.me, _DONE] = call

    def run(self, buffer: torch.Tensor, call: int, slots: list[int], direction: str, accumulate: bool,
            counter) -> None:
        """Every stage of ``direction``: read each message from its sender's buffer once the sender
        has finished the stages before the one that sends it."""
        state, scratch = self.state, self.scratch
        peers = {row: None for row in range(len(slots))}
        for i, stage in enumerate(self.receives[direction]):
            used = 0
            for r in stage:
                state.wait(r.row, _PROGRESS, call * STRIDE + r.stage)
                source = peers[r.row]
                if source is None:
                    source = peers[r.row] = self.peer_slots[state.ranks[r.row]][slots[r.row]]
                if r.dst_span is not None:
                    out = buffer.narrow(0, *r.dst_span)
                    if r.src_span is not None:
                        out.copy_(source.narrow(0, *r.src_span))
                    else:
                        torch.index_select(source, 0, r.src, out=out)
                    continue
                rows = scratch.narrow(0, used, len(r.dst))
                used += len(r.dst)
                if r.src_span is not None:
                    rows = source.narrow(0, *r.src_span)
                else:
                    torch.index_select(source, 0, r.src, out=rows)
                if accumulate:
                    buffer.index_add_(0, r.dst, rows)
                else:
                    buffer.index_copy_(0, r.dst, rows)
            self.publish(call, i + 1)
        if counter is not None:
            counter.bytes_sent += self.sent_rows[direction] * self.width * _itemsize(self.dtype)


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _storage_refs(t: torch.Tensor) -> int | None:
    use_count = getattr(torch._C, "_storage_Use_Count", None)
    return None if use_count is None else use_count(t.untyped_storage()._cdata)

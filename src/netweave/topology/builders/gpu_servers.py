"""GPU servers of DGCL's evaluation: DGX-1 (hybrid cube-mesh), two DGX-1 over InfiniBand, and an
8-GPU PCIe-only server.

Link speeds are DGCL Table 1 (GB/s, measured) converted to Gb/s (× 8):

======== ======= ========
link     GB/s    Gb/s
======== ======= ========
NV2      48.35   386.80
NV1      24.22   193.76
PCIe     11.13   89.04
QPI      9.56    76.48
IB       6.37    50.96
Ethernet 3.12    24.96
======== ======= ========

DGX-1 (V100) NVLink wiring, as ``nvidia-smi topo -m`` reports it (each GPU has 6 NVLinks):
GPUs 0–3 and 4–7 form two fully connected quads (with NV1/NV2 mixes) and GPU i is joined to
GPU i+4. GPUs hang in pairs (0,1), (2,3), (4,5), (6,7) under four PCIe switches; switches 0–1 sit
on CPU0 and 2–3 on CPU1, and the CPUs are joined by QPI. So GPUs of different quads without an
NVLink talk over PCIe-QPI-PCIe (dgcl.txt §3, Figure 3).
"""

from __future__ import annotations

from ...errors import NetweaveError
from ..topology import Topology
from .net import Net

GBPS = {"NV2": 48.35 * 8, "NV1": 24.22 * 8, "PCIe": 11.13 * 8, "QPI": 9.56 * 8, "IB": 6.37 * 8,
        "Ethernet": 3.12 * 8}

# (gpu, gpu, link type) of the DGX-1 hybrid cube-mesh.
DGX1_NVLINKS = (
    (0, 1, "NV1"), (0, 2, "NV1"), (0, 3, "NV2"), (0, 4, "NV2"),
    (1, 2, "NV2"), (1, 3, "NV1"), (1, 5, "NV2"),
    (2, 3, "NV2"), (2, 6, "NV1"),
    (3, 7, "NV1"),
    (4, 5, "NV1"), (4, 6, "NV1"), (4, 7, "NV2"),
    (5, 6, "NV2"), (5, 7, "NV1"),
    (6, 7, "NV2"),
)


def _server(net: Net, m: int, nvlinks: bool, used: int = 8) -> tuple[list[str], list[str]]:
    """Add one 8-GPU, 2-socket server (machine ``m``) of which the first ``used`` GPUs take part;
    return their names and the PCIe-switch names."""
    server = f"M{m}"
    gpus = [net.node(f"G{8 * m + i}", "gpu", server=server) for i in range(used)]
    cpus = [net.node(f"CPU{2 * m + s}", "cpu", server=server) for s in range(2)]
    pcie = [net.node(f"PX{4 * m + p}", "pcie", server=server) for p in range(4)]
    for i, gpu in enumerate(gpus):
        net.link(gpu, pcie[i // 2], GBPS["PCIe"], label="PCIe")
    for p, px in enumerate(pcie):
        net.link(px, cpus[p // 2], GBPS["PCIe"], label="PCIe")
    net.link(cpus[0], cpus[1], GBPS["QPI"], label="QPI")
    if nvlinks:
        for a, b, kind in DGX1_NVLINKS:
            if b < used:
                net.link(gpus[a], gpus[b], GBPS[kind], latency_us=0.5, label=kind)
    return gpus, pcie


def dgx1(gpus: int = 8) -> Topology:
    """One DGX-1: 8 GPUs, NVLink hybrid cube-mesh, PCIe-QPI-PCIe between the quads. With ``gpus`` < 8,
    a job on its first ``gpus`` GPUs (the others idle and absent), as in DGCL's Figure 8."""
    if not 2 <= gpus <= 8:
        raise NetweaveError(f"dgx1 gpus={gpus}: a job on one DGX-1 uses 2 to 8 of its GPUs")
    net = Net("dgx1" if gpus == 8 else f"dgx1-{gpus}gpu")
    _server(net, 0, nvlinks=True, used=gpus)
    return net.build()


def dgx1x2() -> Topology:
    """Two DGX-1 joined by InfiniBand; each box reaches the IB fabric through one NIC on its
    first PCIe switch (dgcl.txt §7: "the GPUs on one machine communicate with peers on the other
    machine using the same IB NIC card")."""
    net = Net("dgx1x2")
    nics = []
    for m in range(2):
        _, pcie = _server(net, m, nvlinks=True)
        nics.append(net.node(f"NIC{m}", "nic", server=f"M{m}"))
        net.link(pcie[0], nics[-1], GBPS["PCIe"], label="PCIe")
    net.link(nics[0], nics[1], GBPS["IB"], latency_us=2.0, label="IB")
    return net.build()


def pcie8() -> Topology:
    """An 8-GPU server without NVLink (DGCL's 1080-Ti machine): PCIe switches, two sockets, QPI."""
    net = Net("pcie8")
    _server(net, 0, nvlinks=False)
    return net.build()

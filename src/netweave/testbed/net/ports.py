"""The testbed's wire constants in one place: its MTU, the UDP/TCP ports of every role, and the
payload a datagram can carry.

Every link of the emulated cluster carries jumbo frames (:data:`MTU`, as data-centre clusters
use): a packet of 256 fp32 values (2,048 B in int64 containers) and its headers exceed 1,500 B, and
veth's native XDP takes frames up to about 3.5 KB (a page less headroom). A datagram's payload is
the MTU less the IPv4 and UDP headers (:func:`datagram_payload`).
"""

from __future__ import annotations

MTU = 3000  # bytes of an IP packet on every link of the cluster
IPV4_HEADER, UDP_HEADER = 20, 8  # bytes, IPv4 without options

# gradient aggregation (testbed.agg)
AGGREGATION = 47000  # UDP: DATA/RESULT/NACK packets between workers, switches and the PS
CONTROL = 47001  # TCP: the PS's step headers and the workers' answers; gloo's rendezvous for the ring
RESULTS = 47002  # UDP: the complete sums of the streaming aggregation, multicast down to every worker
PARAMETERS = 47100  # UDP: the parameters, multicast from the PS
# the SwitchGNN exchange (testbed.gnn)
GNN_SWITCH = 47200  # TCP: the workers' streams to the switch agent
GNN_PEER = 47201  # TCP: the workers' full mesh (peer-to-peer exchange)
GNN_DATA = 47202  # UDP: embeddings up to the switch's kernel data plane
GNN_DOWN = 47203  # UDP: sums, copies and block signals down to the workers
# any job
BACKGROUND = 47300  # UDP: background flows between hosts (testbed.net.background)


def datagram_payload(mtu: int = MTU) -> int:
    """Bytes of UDP payload one IPv4 packet of ``mtu`` bytes carries (2,972 at the testbed's MTU)."""
    return mtu - IPV4_HEADER - UDP_HEADER

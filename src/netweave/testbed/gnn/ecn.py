"""ECN marking at the switch's ports (``gnn/bpf/ecn_mark.bpf.c``; switchgnn.txt §3.4, §4): a
SwitchGNN packet that leaves through a port whose queue is longer than ``threshold_bytes`` gets
its header's ECN flag. The queue is emulated beside the port's HTB class (a phantom backlog
draining at the port's rate: the testbed's kernel has no RED or CoDel to mark with).

The switch agent (:mod:`.switch`) loads it beside the kernel data plane when its ``ecn_bytes`` is
set; the workers answer a marked packet with a CNP and halve their rate (:mod:`.rate`).
"""

from __future__ import annotations

import socket
import struct

from ..net.bpf import TcObject, compile_program

SOURCE = "gnn/bpf/ecn_mark.bpf.c"
COUNTERS = ("seen", "marked", "unmarkable")  # the counters enum of the bpf source
QUEUE = struct.Struct("<IIQQQ")  # lock, threshold, rate_kbit, backlog, last_ns


class EcnMarker(TcObject):
    """The marker at the tc egress of ``interfaces`` (the switch's ports, in the current
    namespace), each with the queue threshold ``threshold_bytes`` and its rate ``rate_kbit``
    (interface → kbit/s, the HTB class's)."""

    def __init__(self, rates_kbit: dict[str, int], threshold_bytes: int):
        super().__init__(compile_program(SOURCE), "ecn_mark", [], None, "the switch's ECN marking")
        try:
            for dev, kbit in rates_kbit.items():
                self.update("queues", struct.pack("<I", socket.if_nametoindex(dev)),
                            QUEUE.pack(0, int(threshold_bytes), int(kbit), 0, 0))
            self.attach_tc(list(rates_kbit), egress=True, priority=1)  # before the impairments' program
        except BaseException:
            self.close()
            raise

    def counters(self) -> dict[str, int]:
        return self.percpu_counters("ecn_counters", COUNTERS)

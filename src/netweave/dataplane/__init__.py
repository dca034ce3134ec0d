"""Aggregation data planes: PAHInA's two-map aggregation service (pahina.txt §IV-B) with its packet
format, fixed-point arithmetic and an asyncio UDP implementation on loopback."""

from .aggregation import AggregationState, Counters
from .packet import DATA, NACK, RESULT, Packet, PacketError, decode
from .service import Faults, run_service

__all__ = ["AggregationState", "Counters", "DATA", "NACK", "RESULT", "Packet", "PacketError", "decode", "Faults",
           "run_service"]

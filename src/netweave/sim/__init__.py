"""Simulation of in-network multicast and aggregation (switchgnn.txt): the network as the simulator
sees it, the event-driven engine and its named state, background traffic, and the timeline."""

from .network import SimNetwork, sim_network
from .simulate import SimConfig, SimResult, simulate

__all__ = ["SimNetwork", "sim_network", "SimConfig", "SimResult", "simulate"]

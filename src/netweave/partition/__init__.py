"""Partitions of a graph across workers and the communication they imply."""

from .by_method import METHODS, partition_by_method
from .comm_relation import CommRelation, LocalGraph, comm_relation
from .hierarchical import hierarchical_partition
from .metis import metis_partition
from .partition import Partition, load_partition
from .random import random_partition
from .range import range_partition, range_split_points
from .stats import PartitionStats, partition_stats

__all__ = ["Partition", "load_partition", "metis_partition", "random_partition", "range_partition",
           "range_split_points", "hierarchical_partition", "CommRelation", "LocalGraph",
           "comm_relation", "partition_stats", "PartitionStats", "METHODS", "partition_by_method"]

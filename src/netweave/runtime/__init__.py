"""Distributed full-graph GNN training that executes DGCL-style plans (needs the ``train`` extra)."""

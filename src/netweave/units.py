"""Sizes every layer shares (the lowest layer: imports nothing from netweave).

Embeddings and features travel as float32: one value is :data:`BYTES_PER_VALUE` bytes, and the
bytes of an embedding always follow from its width by :func:`feature_bytes`.
"""

BYTES_PER_VALUE = 4  # float32


def feature_bytes(dim: int) -> int:
    """Bytes of one embedding of ``dim`` float32 values."""
    return BYTES_PER_VALUE * int(dim)

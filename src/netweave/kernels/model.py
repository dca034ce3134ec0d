"""MGG's performance/resource model (mgg.txt §6, equations 1–3) and its search space.

``WPW = 2 · ps · D · dist`` (work per warp), ``SMEM = ps · wpb · IntS + 2 · wpb · D · FloatS``
(bytes of shared memory per block), ``numWarps = ceil(max(local, remote) / dist)``,
``numBlocks = ceil(numWarps / wpb)``, ``blocksPerSM = numBlocks / numSMs``. A configuration is
feasible when its shared memory fits a block's limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from .layout import Config

INT_S = FLOAT_S = 4
PS_VALUES = (1, 2, 4, 8, 16, 32)
DIST_VALUES = WPB_VALUES = (1, 2, 4, 8, 16)


@dataclass(frozen=True)
class Hardware:
    """The limits that matter: SMs and shared memory per block (bytes). Defaults: an A100 (§6)."""

    num_sms: int = 108
    smem_per_block: int = 164 * 1024

    @classmethod
    def from_device(cls, device=None) -> "Hardware":
        """Read the limits of a CUDA device (needs torch with CUDA)."""
        import torch

        p = torch.cuda.get_device_properties(device or 0)
        smem = getattr(p, "shared_memory_per_block_optin", 0) or getattr(p, "shared_memory_per_block", 0) or 48 * 1024
        return cls(p.multi_processor_count, int(smem))


def wpw(c: Config, dim: int) -> int:
    return 2 * c.ps * dim * c.dist  # eq. 1


def smem(c: Config, dim: int) -> int:
    return c.ps * c.wpb * INT_S + 2 * c.wpb * dim * FLOAT_S  # eq. 1


def launch(c: Config, local: int, remote: int, hw: Hardware = Hardware()) -> dict:
    """Eqs. 2–3 for a GPU with ``local`` LNPs and ``remote`` RNPs."""
    warps = -(-max(local, remote) // c.dist)
    blocks = -(-warps // c.wpb)
    return {"num_warps": warps, "num_blocks": blocks, "blocks_per_sm": blocks / hw.num_sms}


def feasible(c: Config, dim: int, hw: Hardware = Hardware()) -> bool:
    return smem(c, dim) <= hw.smem_per_block

"""``python -m netweave`` (used by ``torchrun -m netweave train …``)."""

from .cli import main

main()

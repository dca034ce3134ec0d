"""The models the testbed trains (PAHInA §VI-B: LeNet-5 and ResNet-50 on CIFAR-10).

* :func:`lenet5` — LeCun et al. 1998 with ReLU and max pooling, for 32×32 inputs of 1 or 3 channels.
* :func:`resnet` — He et al. 2016's residual networks in their CIFAR form (a 3×3 stem, no max
  pooling, stages of 64/128/256/512 channels at strides 1/2/2/2): ``resnet18`` (basic blocks
  2-2-2-2, 11.2 M parameters) and ``resnet50`` (bottlenecks 3-4-6-3, 23.5 M).
  One change from the paper: GroupNorm (Wu & He 2018, 32 groups) replaces BatchNorm, because in
  parameter-server training only parameters travel; BatchNorm's running statistics are buffers
  that no worker would send and the PS would evaluate with untouched ones.

:func:`build` makes one by name; every model maps ``(N, C, 32, 32)`` float32 to ``(N, 10)`` logits.
"""

from __future__ import annotations

from ...errors import NetweaveError

MODELS = ("lenet5", "resnet18", "resnet50")
CLASSES = 10


def lenet5(channels: int = 1):
    import torch.nn as nn

    return nn.Sequential(nn.Conv2d(channels, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
                         nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, CLASSES))


def _norm(c: int):
    import torch.nn as nn

    return nn.GroupNorm(min(32, c), c)


def _blocks():
    import torch.nn as nn

    class Basic(nn.Module):
        """Two 3×3 convolutions and the identity (or a strided 1×1 projection): ResNet-18/34."""

        expansion = 1

        def __init__(self, cin: int, c: int, stride: int):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(cin, c, 3, stride, 1, bias=False), _norm(c), nn.ReLU(),
                                      nn.Conv2d(c, c, 3, 1, 1, bias=False), _norm(c))
            self.skip = (nn.Identity() if stride == 1 and cin == c else
                         nn.Sequential(nn.Conv2d(cin, c, 1, stride, bias=False), _norm(c)))

        def forward(self, x):
            return (self.body(x) + self.skip(x)).relu()

    class Bottleneck(nn.Module):
        """1×1 reduce, 3×3, 1×1 expand (×4) and the identity or a projection: ResNet-50 and deeper."""

        expansion = 4

        def __init__(self, cin: int, c: int, stride: int):
            super().__init__()
            out = 4 * c
            self.body = nn.Sequential(nn.Conv2d(cin, c, 1, bias=False), _norm(c), nn.ReLU(),
                                      nn.Conv2d(c, c, 3, stride, 1, bias=False), _norm(c), nn.ReLU(),
                                      nn.Conv2d(c, out, 1, bias=False), _norm(out))
            self.skip = (nn.Identity() if stride == 1 and cin == out else
                         nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False), _norm(out)))

        def forward(self, x):
            return (self.body(x) + self.skip(x)).relu()

    return Basic, Bottleneck


def resnet(depth: int, channels: int = 3):
    """ResNet-``depth`` (18 or 50) for 32×32 inputs (see the module docstring)."""
    import torch.nn as nn

    basic, bottleneck = _blocks()
    block, counts = {18: (basic, (2, 2, 2, 2)), 50: (bottleneck, (3, 4, 6, 3))}[depth]
    layers = [nn.Conv2d(channels, 64, 3, 1, 1, bias=False), _norm(64), nn.ReLU()]
    cin = 64
    for stage, (c, n) in enumerate(zip((64, 128, 256, 512), counts)):
        for i in range(n):
            layers.append(block(cin, c, 2 if stage and i == 0 else 1))
            cin = c * block.expansion
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, CLASSES)]
    return nn.Sequential(*layers)


def build(name: str, channels: int):
    """The model ``name`` (one of :data:`MODELS`) for inputs of ``channels`` channels."""
    if name == "lenet5":
        return lenet5(channels)
    if name in ("resnet18", "resnet50"):
        return resnet(int(name[6:]), channels)
    raise NetweaveError(f"--model {name!r}: use one of {', '.join(MODELS)}")

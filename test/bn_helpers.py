"""Shared helper of the BatchNorm tests (fold-batch-norm, lift-params, the vision importer)."""

from __future__ import annotations

import torch


def randomize_batch_norm(model: torch.nn.Module, seed: int, var_spread: float = 1.5) -> torch.nn.Module:
    """Eval-mode BatchNorm2d statistics and affine parameters that are not the identity:
    mean and bias in [-0.5, 0.5), variance in [0.5, 0.5 + var_spread), weight in [0.5, 1.5)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                c = m.num_features
                m.running_mean.copy_(torch.rand(c, generator=g) - 0.5)
                m.running_var.copy_(torch.rand(c, generator=g) * var_spread + 0.5)
                m.weight.copy_(torch.rand(c, generator=g) + 0.5)
                m.bias.copy_(torch.rand(c, generator=g) - 0.5)
    return model.eval()

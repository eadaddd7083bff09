"""The settings of scoring layers (`ScoringConfig`: the entropy alpha, the augmented views, the seed and each
metric's constants), free of torch so that the command line's options read their defaults without importing it
(`selection.scoring` scores)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from layerpick.errors import LayerpickError

# Two views: what dime and infonce (the default rule's metric) use. LiDAR reads every view; with 2 its per-layer
# curve has Spearman 0.94 against 16 views on minilm-l6, 1.00 with 4 (benchmarks/results/lidar_views_minilm.md),
# and each extra view is one more forward pass over the calibration set: `--views 4` when LiDAR matters.
DEFAULT_VIEWS = 2


@dataclass(frozen=True)
class ScoringConfig:
    alpha: float = 1.0
    views: int = DEFAULT_VIEWS
    seed: int = 0
    dime_permutations: int = 10
    infonce_temperature: float = 0.1
    lidar_delta: float = 1e-4

    def check(self) -> "ScoringConfig":
        """One-line errors for settings no metric can use, before any model is loaded."""
        if not (math.isfinite(self.alpha) and self.alpha > 0):
            raise LayerpickError(f"--alpha must be a positive number (got {self.alpha})")
        if self.views < 1:
            raise LayerpickError(f"--views must be at least 1 (got {self.views})")
        if self.dime_permutations < 1 or not self.infonce_temperature > 0 or not self.lidar_delta > 0:
            raise LayerpickError("dime_permutations, infonce_temperature and lidar_delta must be positive")
        return self

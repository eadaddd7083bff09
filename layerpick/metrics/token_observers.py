"""Streaming per-text metric accumulators fed during one forward pass.

This module owns the :class:`TokenObserver` protocol and the observers that
average a per-text token metric (prompt entropy, curvature) over texts, layer
by layer, without keeping hidden states around. Observers know nothing of
models: they receive already-chosen float32 states plus a real-token mask.
"""

from __future__ import annotations

from typing import Callable, Protocol, runtime_checkable

from torch import Tensor

from layerpick.metrics.curvature import curvature
from layerpick.metrics.entropy import prompt_entropy


@runtime_checkable
class TokenObserver(Protocol):
    """Receives every (batch, layer) of token states; reports per-layer means."""

    def observe(self, layer: int, states: Tensor, mask: Tensor) -> None:
        """Consume one batch at one layer.

        Args:
            layer: layer index in ``0..L``.
            states: (B, T, D) float32 token representations.
            mask: (B, T) bool, True on real tokens (padding on either side).
        """
        ...

    def result(self) -> list[float | None]:
        """Return L + 1 per-layer means over texts; None where no text counted."""
        ...


class _PerTextMeanObserver:
    """Averages ``metric(tokens (T, D)) -> float`` over texts, per layer.

    Texts with fewer than ``min_tokens`` real tokens are skipped; ``skipped``
    counts them once, at layer 0.
    """

    def __init__(self, num_layers: int, metric: Callable[[Tensor], float], min_tokens: int) -> None:
        if num_layers < 0:
            raise ValueError(f"num_layers must be >= 0, got {num_layers}")
        self.num_layers = num_layers
        self.skipped = 0
        self._metric = metric
        self._min_tokens = min_tokens
        self._sums = [0.0] * (num_layers + 1)
        self._counts = [0] * (num_layers + 1)

    def observe(self, layer: int, states: Tensor, mask: Tensor) -> None:
        """Add each qualifying text of the batch; states (B, T, D), mask (B, T)."""
        self._check(layer, states, mask)
        keep = mask.bool()
        for row in range(states.shape[0]):
            tokens = states[row][keep[row]]
            if tokens.shape[0] < self._min_tokens:
                if layer == 0:
                    self.skipped += 1
                continue
            self._sums[layer] += self._metric(tokens)
            self._counts[layer] += 1

    def result(self) -> list[float | None]:
        """Per-layer mean over counted texts, length L + 1."""
        return [s / c if c else None for s, c in zip(self._sums, self._counts)]

    def _check(self, layer: int, states: Tensor, mask: Tensor) -> None:
        """Validate layer index and (B, T, D) / (B, T) shapes."""
        if not 0 <= layer <= self.num_layers:
            raise ValueError(f"layer {layer} outside 0..{self.num_layers}")
        if states.ndim != 3 or tuple(mask.shape) != tuple(states.shape[:2]):
            raise ValueError(
                f"expected states (B, T, D) and mask (B, T), got {tuple(states.shape)} and {tuple(mask.shape)}"
            )


class PromptEntropyObserver(_PerTextMeanObserver):
    """Mean prompt entropy per layer; skips texts with fewer than 2 tokens."""

    def __init__(self, num_layers: int, alpha: float = 1.0) -> None:
        """num_layers: L, giving layers 0..L; alpha: Renyi order."""
        super().__init__(num_layers, lambda t: prompt_entropy(t, alpha), min_tokens=2)
        self.alpha = alpha


class CurvatureObserver(_PerTextMeanObserver):
    """Mean token-trajectory curvature per layer; skips texts with fewer than 3 tokens."""

    def __init__(self, num_layers: int) -> None:
        """num_layers: L, giving layers 0..L."""
        super().__init__(num_layers, curvature, min_tokens=3)

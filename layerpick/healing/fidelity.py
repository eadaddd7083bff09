"""Label-free fidelity of a cut to its teacher on the same texts: the mean cosine of each text's two vectors, and
the mean overlap of each text's k nearest neighbours (among the same texts) under the two encoders.

Pure tensor maths on (N, D) float vectors; nothing here touches a model.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

NEIGHBOURS = 10


@dataclass(frozen=True)
class Fidelity:
    """How closely one encoder reproduces another on `texts` texts (1.0 is identical)."""

    cosine: float  # mean cosine of a text's vector to its teacher vector
    knn_overlap: float  # mean share of a text's k nearest neighbours that both encoders agree on
    k: int
    texts: int


def fidelity(student: torch.Tensor, teacher: torch.Tensor, k: int = NEIGHBOURS) -> Fidelity:
    """The fidelity of `student` (N, D) to `teacher` (N, D'), row i the same text in both; k is capped at N - 1."""
    if student.shape[0] != teacher.shape[0] or student.shape[0] < 2:
        raise ValueError(f"fidelity needs the same N >= 2 texts in both (got {student.shape[0]}, {teacher.shape[0]})")
    k = min(k, student.shape[0] - 1)
    cosine = mean_cosine(student, teacher) if student.shape[1] == teacher.shape[1] else float("nan")
    return Fidelity(cosine, knn_overlap(student, teacher, k), k, int(student.shape[0]))


def mean_cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    return torch.nn.functional.cosine_similarity(a.double(), b.double(), dim=-1).mean().item()


def neighbours(vectors: torch.Tensor, k: int) -> torch.Tensor:
    """(N, k) indices of each row's k most cosine-similar other rows."""
    unit = torch.nn.functional.normalize(vectors.double(), dim=-1)
    similarity = unit @ unit.T
    similarity.fill_diagonal_(-torch.inf)
    return similarity.topk(k, dim=-1).indices


def knn_overlap(a: torch.Tensor, b: torch.Tensor, k: int) -> float:
    """The mean over rows of |kNN_a(i) & kNN_b(i)| / k."""
    left, right = neighbours(a, k), neighbours(b, k)
    shared = (left.unsqueeze(-1) == right.unsqueeze(-2)).any(-1).sum(-1)
    return (shared.double() / k).mean().item()

"""Which device a model runs on: the device names layerpick takes (`DEVICES`) and `resolve_device`, which settles
`auto` (CUDA, else MPS, else the CPU) and refuses a device this machine lacks. Free of torch at import (torch is
asked only when a device is resolved), so `LoadOptions.check` and the command line use it without loading torch."""

from __future__ import annotations

from layerpick.errors import DeviceUnavailableError, LayerpickError

DEVICES = ("cpu", "cuda", "mps", "auto")


def resolve_device(device: str) -> str:
    """The device to run on: `auto` is CUDA, else MPS, else the CPU; a device this machine lacks is an error."""
    if device not in DEVICES:
        raise LayerpickError(f"unknown device {device!r}; choose one of {', '.join(DEVICES)}")
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "mps" if _mps_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise DeviceUnavailableError("CUDA is not available here; use --device cpu or auto")
    if device == "mps" and not _mps_available():
        raise DeviceUnavailableError("MPS is not available here; use --device cpu or auto")
    return device


def _mps_available() -> bool:
    import torch

    backend = getattr(torch.backends, "mps", None)
    return bool(backend and backend.is_available())

"""How a model is loaded (`LoadOptions`: revision, dtype, device, device map, remote code, pickle, GGUF file), and
the parsing of `--max-memory`: the settings every model-loading command takes, free of torch so that the command
line's options read their defaults without importing it (`core.models` loads)."""

from __future__ import annotations

from dataclasses import dataclass

from layerpick._util.numerals import is_ascii_number
from layerpick.core.devices import resolve_device
from layerpick.errors import LayerpickError

DTYPE_NAMES = ("float32", "bfloat16", "float16")


@dataclass(frozen=True)
class LoadOptions:
    """How to load a model; the defaults are safe (no remote code, safetensors only, float32) and use the GPU
    when there is one (`device="auto"`)."""

    revision: str | None = None
    dtype: str = "float32"
    device: str = "auto"
    device_map: str | None = None
    max_memory: str | None = None  # with device_map: the most each device may hold, e.g. "0=20GiB,1=20GiB,cpu=64GiB"
    trust_remote_code: bool = False
    allow_pickle: bool = False
    gguf_file: str | None = None

    def check(self) -> "LoadOptions":
        """Refuse an unknown dtype or device, or a device this machine does not have, before any loading."""
        if self.dtype not in DTYPE_NAMES:
            raise LayerpickError(f"unknown dtype {self.dtype!r}; choose one of {', '.join(DTYPE_NAMES)}")
        resolve_device(self.device)  # whether the device is here: torch's to say
        if self.max_memory is not None:
            if not self.device_map:
                raise LayerpickError("--max-memory applies to a model spread over devices: add --device-map auto")
            parse_max_memory(self.max_memory)
        return self

    def cli_flags(self) -> list[str]:
        """The command-line flags that give these options (only those that differ from the defaults)."""
        default = LoadOptions()
        flags = [
            word
            for name in ("revision", "dtype", "device", "device_map", "max_memory", "gguf_file")
            if getattr(self, name) != getattr(default, name)
            for word in (f"--{name.replace('_', '-')}", str(getattr(self, name)))
        ]
        return flags + [
            flag
            for flag, on in (("--trust-remote-code", self.trust_remote_code), ("--allow-pickle", self.allow_pickle))
            if on
        ]


def parse_max_memory(text: str) -> dict[int | str, int]:
    """`--max-memory` as accelerate takes it, in bytes: "0=20GiB,cpu=64GiB" -> {0: 21474836480, "cpu": ...} (a GPU
    by its index, or cpu, mps, disk; sizes in bytes or with GiB, MiB, KiB, GB, MB, KB); a one-line error else."""
    from accelerate.utils import convert_file_size_to_int

    parts = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, _, size = (word.strip() for word in item.partition("="))
        try:
            if not (is_ascii_number(key) or key in ("cpu", "mps", "disk")):
                raise ValueError(key)
            device = int(key) if is_ascii_number(key) else key
            parts[device] = convert_file_size_to_int(int(size) if is_ascii_number(size) else size)
        except ValueError:
            raise LayerpickError(
                f"--max-memory {text!r}: write DEVICE=SIZE pairs separated by commas, the device a "
                "GPU index or cpu, mps, disk, the size like 20GiB or 500MB (e.g. 0=20GiB,cpu=64GiB)"
            ) from None
    if not parts:
        raise LayerpickError("--max-memory is empty; e.g. 0=20GiB,cpu=64GiB")
    return parts

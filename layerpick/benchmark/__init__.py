"""The bench stage: an export against its full model, side by side in one process.

`run` composes the pieces: `config`, the full-model `baseline`, interleaved `timing`, and peak `memory`
measured in a child process.

Names are imported on first use (`_util.lazy`), so a light submodule imports without the heavy ones.
"""

from layerpick._util.lazy import lazy_names

_HOMES = {
    "BenchConfig": "config",
    "BenchError": "config",
    "BenchResult": "run",
    "run_bench": "run",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)

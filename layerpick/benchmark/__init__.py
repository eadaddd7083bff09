"""The bench stage: an export against its full model, side by side in one process.

`run` composes the pieces: `config`, the full-model `baseline`, interleaved `timing`, and peak `memory`
measured in a child process.

Names are imported on first use (`_util.lazy`), so a light submodule imports without the heavy ones.
"""

from layerpick._util.lazy import lazy_names

__all__, __getattr__, __dir__ = lazy_names(__name__, config="BenchConfig BenchError", run="BenchResult run_bench")

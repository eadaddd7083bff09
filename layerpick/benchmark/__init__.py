"""The bench stage: an export against its full model, side by side in one process.

`run` composes the pieces: `config`, the full-model `baseline`, interleaved `timing`, and peak `memory`
measured in a child process.
"""

from layerpick.benchmark.config import BenchConfig, BenchError
from layerpick.benchmark.run import BenchResult, run_bench

__all__ = ["BenchConfig", "BenchError", "BenchResult", "run_bench"]

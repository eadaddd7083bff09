"""A full model's ONNX float32 and int8 graphs made the way a sentence-transformers user makes them.

Runs in the venv of `benchmarks/peers_setup.sh` (sentence-transformers with optimum-onnx, which pins transformers
< 4.58 and so cannot live beside layerpick). `SentenceTransformer(SOURCE, backend="onnx")` finds no ONNX file in the
local folder and exports one (optimum); `save_pretrained` writes the folder with `onnx/model.onnx`; then
`export_dynamic_quantized_onnx_model(model, CONFIG, OUTPUT)` adds `onnx/model_qint8_<CONFIG>.onnx` (optimum's
dynamic quantisation). Prints one JSON line: the files written and the versions used.

    WORK/st-onnx-venv/bin/python benchmarks/peers_st_onnx.py SOURCE OUTPUT [avx2|avx512|avx512_vnni|arm64]
"""

from __future__ import annotations

import json
import os
import sys
import time
from importlib.metadata import version
from pathlib import Path


def main() -> None:
    source, output = sys.argv[1], Path(sys.argv[2])
    config = sys.argv[3] if len(sys.argv) > 3 else "avx2"
    import torch
    from sentence_transformers import SentenceTransformer, export_dynamic_quantized_onnx_model

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    began = time.perf_counter()
    model = SentenceTransformer(source, backend="onnx", device="cpu")
    model.save_pretrained(str(output))
    exported = time.perf_counter() - began
    export_dynamic_quantized_onnx_model(model, config, str(output))
    graphs = sorted(str(p.relative_to(output)) for p in (output / "onnx").glob("*.onnx"))
    # optimum names the file after the weight type its config picks: model_quint8_avx2.onnx for avx2 (uint8),
    # model_qint8_<config>.onnx for the others
    int8 = [graph for graph in graphs if graph.endswith(f"8_{config}.onnx")]
    print(
        json.dumps(
            {
                "output": str(output),
                "graphs": graphs,
                "float_file": "onnx/model.onnx",
                "int8_file": int8[0],
                "quantization_config": config,
                "export_s": round(exported, 1),
                "total_s": round(time.perf_counter() - began, 1),
                "versions": {
                    name: version(name)
                    for name in (
                        "sentence-transformers",
                        "optimum",
                        "optimum-onnx",
                        "transformers",
                        "onnxruntime",
                        "torch",
                    )
                },
            }
        )
    )


if __name__ == "__main__":
    main()

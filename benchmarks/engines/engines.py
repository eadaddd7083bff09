"""Do real serving engines give an export's vectors? Three steps, run by check_engines.sh in two environments.

  export WORK   (project venv)  export smollm2-135m and minilm-l6 with --format onnx --quantize int8 into WORK,
                                and write the reference vectors: the project's sentence-transformers on the texts
  compare WORK  (engines venv)  infinity-emb 0.0.78 serves each export over HTTP (torch engine; optimum engine
                                on the float and the int8 ONNX graph) and sentence-transformers' own
                                backend="onnx" loads onnx/model.onnx; every vector set is compared with the
                                reference after L2 normalisation (infinity always normalises)
  report WORK   (project venv)  the markdown table, on stdout

The engines venv cannot be the project's: infinity-emb 0.0.78 pins sentence-transformers<4 and numpy<2, and
sentence-transformers' ONNX backend needs optimum (1.x, or optimum-onnx for 2.x), which pins transformers below 5.
An export whose int8 graph `export --quantize int8` refuses is exported without it, and its int8 rows say so.
The prompted export (`--prompt eol`) carries its template in tokenizer.json; its reference vectors are the
project's sentence-transformers on the plain texts, which the export itself checked, before it was moved into
place, against layer K of the full model on the wrapped texts.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

EXPORTS = {  # name -> (model, layer, prompt template or None, post-pooling transform or None)
    "smollm2-135m-k28": ("smollm2-135m", 28, None, None),
    "minilm-l6-k4": ("minilm-l6", 4, None, None),
    # the template lives in tokenizer.json's post-processor: plain text sent to an engine must come back prompted
    "smollm2-135m-k29-eol": ("smollm2-135m", 29, "eol", None),
    # the transform is a Dense module (2_Dense) after the pooling, and inside the root model.onnx graph
    "smollm2-135m-k2-whiten-256": ("smollm2-135m", 2, None, "whiten-256"),
    "minilm-l6-k4-whiten-256": ("minilm-l6", 4, None, "whiten-256"),
    # a healed cut (`layerpick heal`, trained weights) exported again whole with its ONNX graphs
    "minilm-l6-k3-healed": ("minilm-l6", 3, None, None),
}
HEALED = {"minilm-l6-k3-healed"}  # healed first (1 epoch on 300 calibration texts: the weights change, that is all)
if os.environ.get("ENGINES_ONLY"):  # a comma-separated subset of EXPORTS
    EXPORTS = {name: EXPORTS[name] for name in os.environ["ENGINES_ONLY"].split(",")}
COSINE_REQUIRED = 0.9999  # engines that serve the same weights; int8 is reported, not held to it
TEXTS = [
    "The cat sat on the mat.",
    "A dog slept in the sun all afternoon.",
    "How do I reset my password?",
    "Quarterly revenue rose 12% on strong demand for cloud services.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "Le chat dort sur le canapé.",
    "def fibonacci(n): return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)",
    "Hello!",
    "The committee postponed the vote until more evidence on the long-term effects of the policy was available.",
    "Paris is the capital of France.",
    "What is the boiling point of water at sea level?",
    "Stocks fell sharply after the announcement.",
]


def export(work: Path) -> None:
    from sentence_transformers import SentenceTransformer

    from layerpick.exporting.config import ExportConfig
    from layerpick.exporting.job import export_model
    from layerpick.exporting.onnx.step import OnnxParityError

    work.mkdir(parents=True, exist_ok=True)
    (work / "texts.json").write_text(json.dumps(TEXTS, ensure_ascii=False))
    refusals_file = work / "int8_refusals.json"
    refusals = json.loads(refusals_file.read_text()) if refusals_file.is_file() else {}
    for name, (model, layer, prompt, transform) in EXPORTS.items():
        out, reference = work / name, work / f"{name}.reference.json"
        if reference.is_file():  # exported by an earlier run (delete it to export again)
            continue
        settings = dict(overwrite=True, progress=False, format="onnx", prompt=prompt, transform=transform)
        if name in HEALED:
            model = heal(model, layer, work / f"{name}.heal")
        try:
            export_model(model, layer, out, ExportConfig(**settings, quantize="int8"))
        except OnnxParityError as refusal:  # the int8 graph strays too far: export the float graph alone
            refusals[name] = str(refusal)
            export_model(model, layer, out, ExportConfig(**settings))
        vectors = SentenceTransformer(str(out), device="cpu").encode(TEXTS, convert_to_numpy=True, batch_size=4)
        reference.write_text(json.dumps(vectors.tolist()))
        refusals_file.write_text(json.dumps(refusals))
        print(f"exported {out}", flush=True)


def heal(model: str, layer: int, folder: Path) -> str:
    """`model` cut at `layer` and healed briefly into `folder` (reused when there); the folder, as a model."""
    from layerpick.healing import HealConfig, heal_model

    if not (folder / "layerpick.json").is_file():
        config = HealConfig(layer=layer, max_texts=300, epochs=1, batch_size=32, progress=False, overwrite=True)
        heal_model(model, layer, folder, config)
    return str(folder)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _post(url: str, payload: dict) -> dict:
    request = urllib.request.Request(url, json.dumps(payload).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read())


def serve_infinity(directory: Path, engine_flags: list[str], texts: list[str], log: Path) -> list[list[float]]:
    """Start `infinity_emb v2` on `directory`, embed `texts` over HTTP, stop it."""
    port = _free_port()
    command = [
        str(Path(sys.executable).parent / "infinity_emb"),
        "v2",
        "--model-id",
        str(directory),
        "--device",
        "cpu",
        "--port",
        str(port),
        "--host",
        "127.0.0.1",
        "--no-model-warmup",
        "--log-level",
        "warning",
        *engine_flags,
    ]
    with open(log, "w") as stream:
        server = subprocess.Popen(
            command, stdout=stream, stderr=subprocess.STDOUT, env={**os.environ, "INFINITY_ANONYMOUS_USAGE_STATS": "0"}
        )
        try:
            deadline = time.time() + 900
            while True:
                if server.poll() is not None:
                    raise RuntimeError(f"infinity exited with {server.returncode}; see {log}")
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5)
                    break
                except OSError:
                    if time.time() > deadline:
                        raise RuntimeError(f"infinity did not come up; see {log}") from None
                    time.sleep(2)
            answer = _post(f"http://127.0.0.1:{port}/embeddings", {"model": str(directory), "input": texts})
            return [item["embedding"] for item in sorted(answer["data"], key=lambda item: item["index"])]
        finally:
            server.terminate()
            server.wait(timeout=60)


def st_onnx(directory: Path, texts: list[str], file_name: str) -> list[list[float]]:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(directory), device="cpu", backend="onnx", model_kwargs={"file_name": file_name})
    return model.encode(texts, convert_to_numpy=True, batch_size=4).tolist()


def mapped_graph(directory: Path, texts: list[str]) -> list[list[float]]:
    """What an engine that pools the graph output and skips modules.json (TEI's ONNX backend) computes from the
    mapped graph (onnx/model_mapped.onnx, given to it as its model.onnx): mean, last-token or CLS pooling of its
    token states, as 1_Pooling/config.json says."""
    import numpy as np
    import onnxruntime as ort
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(directory))
    session = ort.InferenceSession(str(directory / "onnx" / "model_mapped.onnx"), providers=["CPUExecutionProvider"])
    pooling = json.loads((directory / "1_Pooling" / "config.json").read_text())
    names = [node.name for node in session.get_inputs()]
    out = []
    for text in texts:
        batch = tokenizer([text], return_tensors="np")
        feed = {
            name: batch[name].astype(np.int64) if name in batch else np.zeros_like(batch["input_ids"]) for name in names
        }
        states = session.run(["last_hidden_state"], feed)[0][0]
        if pooling.get("pooling_mode_cls_token"):
            vector = states[0]
        elif pooling.get("pooling_mode_lasttoken"):
            vector = states[-1]
        else:
            vector = states.mean(axis=0)
        out.append(vector.tolist())
    return out


def _cosines(got, want) -> list[float]:
    import numpy as np

    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    got = got / np.linalg.norm(got, axis=1, keepdims=True)
    want = want / np.linalg.norm(want, axis=1, keepdims=True)
    return [float(value) for value in (got * want).sum(axis=1)]


def _reason(error: Exception, log: Path) -> str:
    """The error in one line: the server log's last exception line when the server died."""
    lines = log.read_text(errors="replace").splitlines() if log.is_file() else []
    raised = [line.strip() for line in lines if line and not line.startswith(" ") and "Error" in line.split(":")[0]]
    text = raised[-1] if raised else f"{type(error).__name__}: {(str(error).splitlines() or [''])[0]}"
    return text.replace(str(log.parent) + "/", "").replace("|", "/")[:300]


def compare(work: Path) -> None:
    from importlib import metadata

    texts = json.loads((work / "texts.json").read_text())
    versions = {}
    for name in (
        "infinity-emb",
        "sentence-transformers",
        "transformers",
        "torch",
        "onnxruntime",
        "optimum",
        "optimum-onnx",
        "numpy",
    ):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    print(json.dumps({"versions": versions, "python": platform.python_version()}), flush=True)
    runs = {
        "infinity --engine torch": lambda d, log: serve_infinity(
            d, ["--engine", "torch", "--no-bettertransformer"], texts, log
        ),
        "infinity --engine optimum (onnx/model.onnx)": lambda d, log: serve_infinity(
            d, ["--engine", "optimum", "--onnx-do-not-prefer-quantized", "--onnx-disable-optimize"], texts, log
        ),
        "infinity --engine optimum (onnx/model_quantized.onnx, int8)": lambda d, log: serve_infinity(
            d, ["--engine", "optimum", "--onnx-disable-optimize"], texts, log
        ),
        'sentence-transformers backend="onnx" (onnx/model.onnx)': lambda d, log: st_onnx(d, texts, "model.onnx"),
        "onnxruntime: onnx/model_mapped.onnx (transform inside), pooled without Dense": lambda d, log: mapped_graph(
            d, texts
        ),
    }
    refusals = json.loads((work / "int8_refusals.json").read_text())
    for name in EXPORTS:
        directory = work / name
        reference = json.loads((work / f"{name}.reference.json").read_text())
        for index, (engine, run) in enumerate(runs.items()):
            log = work / f"{name}.{index}.log"
            row = {"export": name, "engine": engine, "texts": len(texts)}
            if "model_mapped" in engine and not (directory / "onnx" / "model_mapped.onnx").is_file():
                continue  # only an export with a transform has the mapped graph
            if "int8" in engine and name in refusals:
                row["refused"] = refusals[name]
                print(json.dumps(row), flush=True)
                continue
            try:
                cosines = _cosines(run(directory, log), reference)
                row.update(
                    min_cosine=min(cosines),
                    mean_cosine=sum(cosines) / len(cosines),
                    required=None if "int8" in engine else COSINE_REQUIRED,
                )
            except Exception as error:  # noqa: BLE001 - a failing engine is a result to report
                row["error"] = _reason(error, log)
            print(json.dumps(row), flush=True)


def prompt_lines(work: Path) -> list[str]:
    """What each prompted export proved about itself before it was moved into place (its layerpick.json)."""
    lines = []
    for name, (_, layer, prompt, _transform) in EXPORTS.items():
        metadata = work / name / "layerpick.json"
        if prompt is None or not metadata.is_file():
            continue
        facts = json.loads(metadata.read_text())
        parity, template = facts["parity"], facts["prompt"]
        lines += [
            "",
            f"`{name}`: the template `{template['template']}` is applied by the {template['applied_by']} "
            f"({template['tokens_added']} tokens). Before the export was moved into place, its "
            f"sentence-transformers vectors for the plain parity texts matched {parity['reference']} on "
            f"the wrapped texts: max abs difference {parity['max_abs_diff']:.2g} over {parity['texts']} "
            f"texts (tolerance {parity['tolerance']:.2g}). So infinity, sent plain text, returns the "
            "prompted embedding of layer " + f"{layer}.",
        ]
    return lines


def report(work: Path) -> None:
    lines = [json.loads(line) for line in (work / "results.jsonl").read_text().splitlines() if line.strip()]
    header, rows = lines[0], lines[1:]
    versions = ", ".join(f"{name} {version}" for name, version in header["versions"].items())
    out = [
        "# Serving engines: do they give an export's vectors?",
        "",
        "Each export (made with `layerpick export MODEL --layer K --format onnx --quantize int8`, or without "
        "`--quantize` when the export refuses the int8 graph; `-eol`: with `--prompt eol`, the template inside "
        "the tokenizer, and the engines are sent the plain texts) is served by "
        "infinity-emb over HTTP (`infinity_emb v2 --model-id DIR --device cpu ...`) and loaded by "
        "sentence-transformers' own ONNX backend in a separate virtual environment; the vectors of "
        f"{rows[0]['texts']} texts are compared with the project's sentence-transformers on the same directory "
        "(torch), after L2 normalisation (infinity always normalises). Required: cosine at least "
        f"{COSINE_REQUIRED} for every text where the engine runs the same float32 weights; the int8 graph "
        "is reported (its own check at export time is cosine >= 0.99 to the float graph).",
        "",
        f"Engines environment: Python {header['python']}, {versions}.",
        "",
        "| export | engine | min cosine | mean cosine | holds |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        if "refused" in row:
            out.append(f"| {row['export']} | {row['engine']} | - | - | no int8 graph: {row['refused']} |")
            continue
        if "error" in row:
            out.append(f"| {row['export']} | {row['engine']} | - | - | failed: {row['error']} |")
            continue
        required = row["required"]
        holds = "reported (int8)" if required is None else ("yes" if row["min_cosine"] >= required else "NO")
        out.append(
            f"| {row['export']} | {row['engine']} | {row['min_cosine']:.6f} | {row['mean_cosine']:.6f} | {holds} |"
        )
    out += prompt_lines(work)
    out += ["", "Produced by:", "", "```bash", "bash benchmarks/engines/check_engines.sh", "```"]
    print("\n".join(out))


if __name__ == "__main__":
    step, work = sys.argv[1], Path(sys.argv[2])
    {"export": export, "compare": compare, "report": report}[step](work)

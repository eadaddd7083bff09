"""Heal on a GPU: the heal stage's CUDA/bf16 path, and how far healing a trained embedder goes with more epochs
than this CPU can give (issue 31, items 1 and 6). Exploration, not the committed MTEB evidence: SciFact nDCG@10
here is a plain re-implementation (cosine top-10, linear gains, documents as "title text"), checked against the
full model's published 0.6451; the numbers that count are re-measured with `layerpick validate` on the CPU.

    python benchmarks/heal_gpu.py --model DIR --scifact DIR --generic FILE --work DIR --out DIR [--plan smoke|main]
    python benchmarks/heal_gpu.py assemble OUT CUT_EXPORT HEALED   # the kept weights as an export, on the CPU

Each run heals through `layerpick.heal` (the product's code path) with a trainer callback that scores the student
on SciFact after every epoch, symmetric (queries and documents by the cut) and asymmetric (queries by the cut,
documents by the full model). One JSON line per run goes to OUT/heal_gpu.jsonl as soon as it ends; runs that would
not fit in --budget seconds are skipped. With --keep K, the last K-layer run's weights come back as float16
safetensors in parts under 15 MB (OUT/weights-*.safetensors) to be validated on the CPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from pathlib import Path

import torch
from sentence_transformers import SentenceTransformer
from transformers import TrainerCallback

from layerpick.core.models import LoadOptions
from layerpick.healing import HealConfig, heal_model

PART_BYTES = 15 * 2**20 + 2**19


def read_scifact(folder: Path):
    corpus = [json.loads(line) for line in (folder / "corpus.jsonl").open(encoding="utf-8")]
    queries = [json.loads(line) for line in (folder / "queries.jsonl").open(encoding="utf-8")]
    qrels: dict[str, dict[str, int]] = {}
    for number, line in enumerate((folder / "qrels.tsv").open(encoding="utf-8")):
        if number == 0:
            continue
        query, doc, score = line.rstrip("\n").split("\t")
        qrels.setdefault(query, {})[doc] = int(score)
    queries = [q for q in queries if q["_id"] in qrels]
    docs = [f"{d.get('title', '')} {d['text']}".strip() for d in corpus]
    return [d["_id"] for d in corpus], docs, [q["_id"] for q in queries], [q["text"] for q in queries], qrels


def encode(model, texts):
    with torch.no_grad():
        vectors = model.encode(texts, batch_size=256, convert_to_tensor=True, show_progress_bar=False)
    return torch.nn.functional.normalize(vectors.float(), dim=-1)


def ndcg_at_10(query_vectors, doc_vectors, query_ids, doc_ids, qrels) -> float:
    top = (query_vectors @ doc_vectors.T).topk(10, dim=1).indices.cpu().tolist()
    total = 0.0
    for query, ranked in zip(query_ids, top):
        relevant = qrels[query]
        dcg = sum(relevant.get(doc_ids[i], 0) / math.log2(rank + 2) for rank, i in enumerate(ranked))
        ideal = sorted(relevant.values(), reverse=True)[:10]
        total += dcg / sum(g / math.log2(rank + 2) for rank, g in enumerate(ideal))
    return total / len(query_ids)


def score(model, task, full_docs) -> dict:
    """SciFact nDCG@10 of `model`, symmetric and asymmetric (documents by the full model)."""
    doc_ids, docs, query_ids, queries, qrels = task
    q = encode(model, queries)
    return {
        "asymmetric": round(ndcg_at_10(q, full_docs, query_ids, doc_ids, qrels), 4),
        "symmetric": round(ndcg_at_10(q, encode(model, docs), query_ids, doc_ids, qrels), 4),
    }


class SciFactScore(TrainerCallback):
    """Scores the student after every epoch (the trainer hands it the SentenceTransformer as `model`)."""

    def __init__(self, task, full_docs, log):
        self.task, self.full_docs, self.log, self.started = task, full_docs, log, time.monotonic()

    def on_epoch_end(self, args, state, control, model=None, **kwargs):
        was_training = model.training
        model.eval()
        row = {"epoch": round(state.epoch or 0, 2), "seconds": round(time.monotonic() - self.started, 1)}
        row |= score(model, self.task, self.full_docs)  # under the trainer's bf16 autocast on a GPU
        model.train(was_training)
        self.log.append(row)
        print("   ", row, flush=True)


def plans(scifact: str, generic: str):
    main = [  # (K, texts, epochs, learning rate, batch)
        (3, scifact, 10, 2e-4, 64),
        (3, generic, 6, 2e-4, 64),
        (2, scifact, 10, 2e-4, 64),
        (4, scifact, 10, 2e-4, 64),
        (3, scifact, 10, 5e-4, 64),
        (1, scifact, 10, 2e-4, 64),
        (5, scifact, 10, 2e-4, 64),
        (3, None, 10, 2e-4, 32),
    ]
    return {"smoke": [(3, None, 1, 1e-4, 32)], "main": main}


def save_parts(export: Path, out: Path, prefix: str) -> list[str]:
    from safetensors.torch import load_file, save_file

    tensors = {}
    for file in sorted(export.glob("*.safetensors")):
        tensors.update({name: t.half().contiguous() for name, t in load_file(str(file)).items()})
    parts, current, size = [], {}, 0
    for name, tensor in tensors.items():
        nbytes = tensor.numel() * 2
        if current and size + nbytes > PART_BYTES:
            parts.append(current)
            current, size = {}, 0
        if nbytes > PART_BYTES:  # one tensor too big: split by rows
            rows = max(1, PART_BYTES // (tensor[0].numel() * 2))
            for index, start in enumerate(range(0, tensor.shape[0], rows)):
                parts.append({f"{name}@@{index}": tensor[start : start + rows].contiguous()})
            continue
        current[name] = tensor
        size += nbytes
    if current:
        parts.append(current)
    names = []
    for index, part in enumerate(parts):
        name = f"{prefix}-{index}.safetensors"
        save_file(part, str(out / name))
        names.append(name)
    return names


def assemble(parts_dir: Path, cut: Path, output: Path) -> None:
    """A CPU copy of the kept GPU export: the cut's export folder (`layerpick export MODEL --layer K`) with the
    parts' weights, back in float32 (the float16 round trip moves vectors by about 1e-3 of their scale)."""
    import shutil

    from safetensors.torch import load_file, save_file

    tensors, pieces = {}, {}
    for name in json.loads((parts_dir / "kept.json").read_text())["parts"]:
        for key, tensor in load_file(str(parts_dir / name)).items():
            if "@@" in key:
                base, index = key.split("@@")
                pieces.setdefault(base, {})[int(index)] = tensor
            else:
                tensors[key] = tensor
    for base, rows in pieces.items():
        tensors[base] = torch.cat([rows[i] for i in sorted(rows)])
    shutil.copytree(cut, output)
    (output / "model.safetensors").unlink()
    save_file({k: v.float().contiguous() for k, v in tensors.items()}, str(output / "model.safetensors"))


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "assemble":
        assemble(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--scifact", required=True)
    parser.add_argument("--generic", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--plan", default="main")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--budget", type=float, default=420)
    parser.add_argument("--keep", type=int, default=3)
    args = parser.parse_args()
    started = time.monotonic()
    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    log_file = out / "heal_gpu.jsonl"
    task = read_scifact(Path(args.scifact))
    full = SentenceTransformer(args.model, device=args.device)
    full_docs = encode(full, task[1])
    reference = ndcg_at_10(encode(full, task[3]), full_docs, task[2], task[0], task[4])
    header = {"device": torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu", "torch": torch.__version__}
    header |= {"full_model_ndcg_at_10": round(reference, 4), "dtype": str(next(full.parameters()).dtype)}
    print(header, flush=True)
    with log_file.open("a") as handle:
        handle.write(json.dumps(header) + "\n")
    del full
    last_seconds, kept, best = 0.0, None, None
    for number, (layer, texts, epochs, lr, batch) in enumerate(plans(args.scifact, args.generic)[args.plan]):
        if time.monotonic() - started + 1.2 * last_seconds > args.budget:
            print(f"skipped (budget): K={layer} texts={texts} epochs={epochs} lr={lr}", flush=True)
            continue
        run_started, curve = time.monotonic(), []
        output = work / f"run{number}-k{layer}"
        config = HealConfig(
            fit_texts=texts, epochs=epochs, learning_rate=lr, batch_size=batch, progress=False, overwrite=True
        )
        try:
            report = heal_model(
                args.model,
                layer,
                output,
                config,
                load_options=LoadOptions(device=args.device),
                callbacks=[SciFactScore(task, full_docs, curve)],
            )
            row = {
                "layer": layer,
                "texts": texts or "calibration",
                "train_texts": report.texts.get("train"),
                "epochs": epochs,
                "learning_rate": lr,
                "batch": batch,
                "bf16": report.training.get("bf16"),
                "before": dataclasses.asdict(report.before),
                "after": dataclasses.asdict(report.after),
                "minutes": report.training.get("minutes"),
                "final_loss": report.final_loss,
                "curve": curve,
                "final": score(SentenceTransformer(str(output), device=args.device), task, full_docs),
            }
            if layer == args.keep and (best is None or row["final"]["symmetric"] > best):
                kept, best = output, row["final"]["symmetric"]
        except Exception as error:  # noqa: BLE001 - an exploration: one failed run must not lose the others
            row = {"layer": layer, "texts": texts, "error": f"{type(error).__name__}: {error}"}
            if number == 0:  # the first run failing says the set-up is wrong: stop, do not spend the GPU
                print(row, flush=True)
                raise
        last_seconds = time.monotonic() - run_started
        row["seconds"] = round(last_seconds, 1)
        print(row, flush=True)
        with log_file.open("a") as handle:
            handle.write(json.dumps(row, default=str) + "\n")
    if kept is not None:
        parts = save_parts(kept, out, "weights")
        (out / "kept.json").write_text(json.dumps({"export": str(kept), "symmetric": best, "parts": parts}))


if __name__ == "__main__":
    main()

"""The markdown tables of benchmarks/scale.py: measured cells, growth exponents, and the extrapolated 8B row.

python benchmarks/scale_report.py /tmp/layerpick-scale/scale.json
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

# Llama-3-8B's shape: 32 blocks of width 4096 (intermediate 14336, 8 KV heads), 7.50 B non-embedding of 8.03 B
EIGHT_B = {"params": 8.03e9, "non_embedding": 7.50e9, "layers": 32, "hidden": 4096}
EIGHT_B_TEXTS, EIGHT_B_TOKENS, BATCH = 1000, 128, 16
PASSES = 4  # the default select: main pass, 2 views per text (--views 2), and auto's fit pass over the same texts


def slope(points: list[tuple[float, float]]) -> float:
    """The log-log slope between the two largest points, where the leading term dominates: the growth exponent."""
    (x0, y0), (x1, y1) = sorted(points)[-2:]
    return math.log(y1 / y0) / math.log(x1 / x0)


def at(points: list[tuple[float, float]], x: float) -> float:
    """The value at `x`, interpolated (or extended) along the log-log line of the two points nearest above it."""
    ordered = sorted(points)
    upper = next((i for i, (px, _) in enumerate(ordered) if px >= x), len(ordered) - 1)
    (x0, y0), (x1, y1) = ordered[max(upper - 1, 0)], ordered[max(upper, 1)]
    return y0 * (x / x0) ** (math.log(y1 / y0) / math.log(x1 / x0))


def table(header: list[str], rows: list[list]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(str(cell) for cell in row) + " |" for row in rows
    ]


def forward_section(results: dict) -> list[str]:
    rows = results["forward"]
    params = results["params"]
    body = [
        [
            r["model"],
            r["dtype"],
            r["texts"],
            r["tokens"],
            f"{r['seconds']:.2f}",
            f"{r['texts'] * r['tokens'] / r['seconds']:.0f}",
            f"{2 * params[r['model']]['non_embedding'] * r['texts'] * r['tokens'] / r['seconds'] / 1e9:.0f}",
            f"{r['peak_rss_mb']:.0f}",
            f"{r['loaded_rss_mb']:.0f}",
        ]
        for r in rows
    ]
    lines = [
        "## Forward pass (layerpick's pass: every layer pooled, batch 16)",
        "",
        *table(
            [
                "model",
                "dtype",
                "texts N",
                "tokens T",
                "s",
                "tokens/s",
                "GFLOP/s (2 x non-emb params)",
                "process peak RSS so far MB",
                "RSS after load MB",
            ],
            body,
        ),
        "",
        "Cells of one (model, dtype) run in one process in the order listed, so the peak column is the "
        "process's peak up to that cell; the model's weights are mapped from safetensors and count once "
        "touched.",
        "",
    ]
    return (
        lines
        + ["Growth (exponent of time between the two largest points of each axis):", ""]
        + [f"- {line}" for line in forward_growth(rows, params)]
    )


def cell(rows, **where) -> dict:
    return next(r for r in rows if all(r[k] == v for k, v in where.items()))


def forward_growth(rows: list[dict], params: dict) -> list[str]:
    texts = [
        (r["texts"], r["seconds"])
        for r in rows
        if (r["model"], r["dtype"], r["tokens"]) == ("bert-base", "float32", 32)
    ]
    lines = [f"in texts N (bert-base, float32, T = 32, N {texts[0][0]}-{texts[-1][0]}): **N^{slope(texts):.2f}**"]
    for model, dtype in sorted({(r["model"], r["dtype"]) for r in rows}):
        lengths = sorted(
            (r["tokens"], r["seconds"]) for r in rows if (r["model"], r["dtype"], r["texts"]) == (model, dtype, 32)
        )
        if len(lengths) > 1:
            lines.append(
                f"in length T ({model}, {dtype}, N = 32, T {lengths[0][0]}-{lengths[-1][0]}): "
                f"**T^{slope(lengths):.2f}**"
            )
    depth = sorted(
        (params[m]["layers"], cell(rows, model=m, dtype="bfloat16", texts=32, tokens=128)["seconds"])
        for m in ("llama-1b-L4", "llama-1b-L8", "llama-1b")
    )
    lines.append(
        f"in layers L (1B width, bfloat16, 32 x 128 tokens, L {depth[0][0]}-{depth[-1][0]}): **L^{slope(depth):.2f}**"
    )
    size = sorted(
        (params[m]["non_embedding"], cell(rows, model=m, dtype="bfloat16", texts=32, tokens=128)["seconds"])
        for m in ("bert-base", "llama-0.5b", "llama-1b")
    )
    (p0, t0), (p1, t1) = size[0], size[-1]

    def gflops(m):
        seconds = cell(rows, model=m, dtype="bfloat16", texts=32, tokens=128)["seconds"]
        return 2 * params[m]["non_embedding"] * 32 * 128 / seconds / 1e9

    efficiency = ", ".join(f"{m} {gflops(m):.0f}" for m in ("bert-base", "llama-0.5b", "llama-1b"))
    lines.append(
        f"in non-embedding parameters (bfloat16, 32 x 128 tokens, {p0 / 1e6:.0f}M-{p1 / 1e6:.0f}M): "
        f"**P^{math.log(t1 / t0) / math.log(p1 / p0):.2f}** end to end, P^{slope(size):.2f} between the two "
        f"largest: throughput per parameter differs with the shape (GFLOP/s at 32 x 128: {efficiency})"
    )
    for model in ("bert-base", "llama-0.5b", "llama-1b"):
        fp32 = cell(rows, model=model, dtype="float32", texts=32, tokens=128)["seconds"]
        bf16 = cell(rows, model=model, dtype="bfloat16", texts=32, tokens=128)["seconds"]
        lines.append(f"bfloat16 over float32 ({model}, 32 x 128 tokens): **{fp32 / bf16:.2f}x** faster")
    return lines


def metrics_section(results: dict) -> list[str]:
    rows = results["metrics"]
    pooled = sorted({r["metric"] for r in rows if "texts" in r})
    sizes = sorted({r["texts"] for r in rows if "texts" in r})
    widths = sorted({r["dim"] for r in rows})
    body = []
    for name in pooled:
        largest = [(dim, cell(rows, metric=name, dim=dim, texts=sizes[-1])["seconds"]) for dim in widths]
        for dim in widths:
            cells = [cell(rows, metric=name, dim=dim, texts=n)["seconds"] for n in sizes]
            body.append(
                [
                    name,
                    dim,
                    *[f"{s:.3f}" for s in cells],
                    f"N^{slope(list(zip(sizes, cells))):.2f}",
                    f"D^{slope(largest):.2f}" if dim == widths[-1] else "",
                    _mb(cell(rows, metric=name, dim=dim, texts=sizes[-1])),
                ]
            )
    lengths = sorted({r["tokens"] for r in rows if "tokens" in r})
    token_body = []
    for name in ("prompt-entropy", "curvature"):
        for dim in widths:
            cells = [cell(rows, metric=name, dim=dim, tokens=t)["seconds"] * 1000 for t in lengths]
            token_body.append(
                [
                    name,
                    dim,
                    *[f"{s:.2f}" for s in cells],
                    f"T^{slope(list(zip(lengths, cells))):.2f}",
                    _mb(cell(rows, metric=name, dim=dim, tokens=lengths[-1])),
                ]
            )
    return [
        "## Metrics on ONE layer (synthetic states; multiply by L + 1 for a select)",
        "",
        "RSS growth is the most a cell raised the process's resident memory, sampled by a thread every "
        "millisecond during the timed cell (a shorter peak can be missed); the sampler shares the 2 cores, so "
        "these times ran up to a third above those of the same cells without it.",
        "",
        "Pooled and view metrics, seconds per layer as the texts N grow (2 views):",
        "",
        *table(
            [
                "metric",
                "width D",
                *[f"N = {n}" for n in sizes],
                "growth in N",
                f"growth in D (N = {sizes[-1]})",
                f"RSS growth MB at N = {sizes[-1]}",
            ],
            body,
        ),
        "",
        "Token-level metrics, milliseconds per text per layer as its length T grows:",
        "",
        *table(
            ["metric", "width D", *[f"T = {t}" for t in lengths], "growth", f"RSS growth MB at T = {lengths[-1]}"],
            token_body,
        ),
        *peak_line(results, "metrics"),
    ]


def _mb(row: dict) -> str:
    """The most a cell raised the process's RSS, sampled every millisecond ('n/a' for a run before it was kept)."""
    return "n/a" if row.get("rss_growth_mb") is None else f"{row['rss_growth_mb']:.0f}"


def peak_line(results: dict, part: str) -> list[str]:
    peak = results.get(f"{part}_peak_rss_mb")
    return (
        []
        if peak is None
        else ["", f"Peak RSS of the process that ran every cell above: {peak:.0f} MB (its largest cell sets it)."]
    )


def fit_section(results: dict) -> list[str]:
    rows = results["fit"]
    body = [[r["dim"], r["texts"], f"{r['seconds']:.3f}", _mb(r)] for r in rows]
    return [
        "## Transform fit (whiten-256 on ONE layer: a thin SVD of the N x D fit states, O(N D min(N, D)))",
        "",
        *table(["width D", "fit texts N", "s", "RSS growth MB"], body),
        *peak_line(results, "fit"),
    ]


def export_section(results: dict) -> list[str]:
    largest = results["export"][-1]
    full_mb = results["params"][largest["model"]]["params"] * 2 / 2**20
    body = [
        [r["model"], r["dtype"], r["layer"], f"{r['seconds']:.1f}", f"{r['peak_rss_mb']:.0f}", f"{r['size_mb']:.0f}"]
        for r in results["export"]
    ]
    return [
        "## Export (`layerpick export --layer L/2`: load, cut, save, parity check; own process)",
        "",
        *table(["model", "dtype", "layer", "s", "peak RSS MB", "exported MB"], body),
        "",
        "Export reads the whole model and writes the cut: time and memory grow linearly with the weights. "
        f"Peak RSS is about twice the cut's weights and more ({largest['model']}: {largest['peak_rss_mb']:,.0f} MB "
        f"for a {largest['size_mb']:,.0f} MB cut of {full_mb:,.0f} MB): at the parity check the cut is held "
        f"twice, in memory (the ONNX and static steps still use it) and "
        "reloaded from disk as sentence-transformers reads it.",
    ]


def activation_bytes(results: dict) -> float:
    """Bytes of peak RSS per element of one batch's captured layers ((L + 1) x batch x longest x D), measured on
    the 1B select: its peak less the weights and the pooled states."""
    run, params = results["select_1b"], results["params"]["llama-1b"]
    rest = run["peak_rss_mb"] * 2**20 - params["params"] * 2 - pooled_bytes(params, run["texts"])
    return rest / ((params["layers"] + 1) * BATCH * 512 * params["hidden"])


def pooled_bytes(params: dict, texts: int) -> float:
    """The pooled states a default select keeps: every layer, float32, main pass + 2 views + the fit pass."""
    return (params["layers"] + 1) * texts * PASSES * params["hidden"] * 4


def select_section(results: dict) -> list[str]:
    run, params = results["select_1b"], results["params"]["llama-1b"]
    timings = run.get("timings") or {}
    lines = [
        "## Select on a 1B-parameter model (random weights, bfloat16, own process)",
        "",
        "`layerpick select` with its defaults (`--views 2`, `--transform auto`: none and whiten-256, fitted on the "
        "same 512 texts) over 512 texts: 64 of 512 tokens, 448 from the embedded set (at most ~130 tokens).",
        "",
        *table(
            [
                "texts",
                "wall s",
                "peak RSS MB",
                "weights MB (bf16)",
                "pooled states MB (float32)",
                "the rest MB",
                "selected layer (random weights: no meaning)",
            ],
            [
                [
                    run["texts"],
                    f"{run['seconds']:.0f}",
                    f"{run['peak_rss_mb']:.0f}",
                    f"{params['params'] * 2 / 2**20:.0f}",
                    f"{pooled_bytes(params, run['texts']) / 2**20:.0f}",
                    f"{run['peak_rss_mb'] - (params['params'] * 2 + pooled_bytes(params, run['texts'])) / 2**20:.0f}",
                    run["selected_layer"],
                ]
            ],
        ),
    ]
    if timings:
        lines += [
            "",
            "Inside it (seconds): "
            + ", ".join(f"{k} {v:.1f}" for k, v in timings.items() if isinstance(v, (int, float))),
        ]
    return lines + [
        "",
        "The pass keeps pooled states only (`core.collect`); the rest is one batch's captured layers, "
        f"the forward pass's own buffers and the libraries: {activation_bytes(results):.1f} bytes per "
        "element of (L + 1) x batch x longest text x D, the figure the 8B estimate below uses. "
        "`tests/selection/test_memory_growth.py` checks that peak memory does not grow with layers x "
        "texts x tokens.",
    ]


def extrapolation_section(results: dict) -> list[str]:
    params, metrics = results["params"]["llama-1b"], results["metrics"]
    measured = cell(results["forward"], model="llama-1b", dtype="bfloat16", texts=32, tokens=128)
    rate = params["non_embedding"] * 32 * 128 / measured["seconds"]  # non-embedding parameter-tokens per second
    layers = EIGHT_B["layers"] + 1
    forward_s = EIGHT_B["non_embedding"] * EIGHT_B_TEXTS * EIGHT_B_TOKENS * PASSES / rate
    pooled_s = (
        sum(
            at([(r["texts"], r["seconds"]) for r in metrics if r["metric"] == m and r["dim"] == 4096], EIGHT_B_TEXTS)
            for m in ("dataset-entropy", "dime", "infonce", "lidar")
        )
        * layers
    )
    token_s = (
        sum(
            at([(r["tokens"], r["seconds"]) for r in metrics if r["metric"] == m and r["dim"] == 4096], EIGHT_B_TOKENS)
            for m in ("prompt-entropy", "curvature")
        )
        * EIGHT_B_TEXTS
        * layers
    )
    fit_s = at([(r["texts"], r["seconds"]) for r in results["fit"] if r["dim"] == 4096], EIGHT_B_TEXTS) * layers
    weights = EIGHT_B["params"] * 2
    pooled = pooled_bytes(EIGHT_B, EIGHT_B_TEXTS)
    batch = activation_bytes(results) * layers * BATCH * EIGHT_B_TOKENS * EIGHT_B["hidden"]
    gib = 2**30
    return [
        "## EXTRAPOLATED (not measured): select on an 8B model, 1,000 texts of 128 tokens, bfloat16",
        "",
        "Llama-3-8B's shape (32 blocks, width 4096, 7.50 B non-embedding parameters of 8.03 B), `select --limit "
        "1000` with its defaults, on this 2-core CPU:",
        "",
        *table(
            ["part", "estimate", "from"],
            [
                [
                    "forward passes (main, 2 views, fit: 4,000 texts)",
                    f"~{forward_s / 3600:.1f} h",
                    f"llama-1b bf16 at 32 x 128 ({rate / 1e9:.0f} G parameter-tokens/s), linear in P and N, "
                    "T^1 at 128 tokens",
                ],
                ["pooled and view metrics, 33 layers", f"~{pooled_s:.0f} s", "measured at D = 4096 (N 1024-2048)"],
                ["token metrics, 33 layers", f"~{token_s:.0f} s", "measured at D = 4096, T = 128, per text"],
                ["whiten-256 fit, 33 layers", f"~{fit_s:.0f} s", "measured at D = 4096 (N 512-2048)"],
                [
                    "peak memory",
                    f"~{(weights + pooled + batch) / gib:.0f} GiB",
                    f"weights {weights / gib:.1f} + pooled states {pooled / gib:.1f} + one batch "
                    f"{batch / gib:.1f} (the 1B select's bytes per element)",
                ],
            ],
        ),
        "",
        "The forward passes dominate at every size measured: metrics and fit add "
        f"{(pooled_s + token_s + fit_s) / forward_s:.0%} to them here. LiDAR grows as D^2 (its D x D scatter "
        "matrices) and is the costliest metric at D = 4096; DiME grows fastest in N (N x N "
        "eigendecompositions). On a GPU the passes are what `benchmarks/gpu_check.sh` measures.",
    ]


def render(results: dict, command: str | None = None) -> str:
    runs = [
        f"    {results['commands'][parts]}    # load average {before} before, {after} after"
        for parts, (before, after) in results.get("load", {}).items()
        if parts in results.get("commands", {})
    ]
    lines = [
        "# Scale: how each stage's cost grows",
        "",
        "Commands (each alone on the machine, one after the other):",
        "",
        *(runs or [f"    {command}"]),
        "",
        f"Machine: {results['machine']}, torch on CPU. Random-weight models from real configurations:",
        "",
        *table(
            ["model", "params", "non-embedding", "layers", "width"],
            [
                [m, f"{p['params'] / 1e6:.0f}M", f"{p['non_embedding'] / 1e6:.0f}M", p["layers"], p["hidden"]]
                for m, p in results["params"].items()
            ],
        ),
        "",
    ]
    for key, section in (
        ("forward", forward_section),
        ("metrics", metrics_section),
        ("fit", fit_section),
        ("export", export_section),
        ("select_1b", select_section),
    ):
        if key in results:
            lines += section(results) + [""]
    if "forward" in results and "metrics" in results:
        lines += extrapolation_section(results) + [""]
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(json.loads(Path(sys.argv[1]).read_text())))

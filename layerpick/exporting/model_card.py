"""The model card `README.md` an export writes beside the weights: its prose.

Owns: what the card says (front matter, the model it is and which blocks it keeps, for a healed export what it was
trained to reproduce and its fidelity, for a static export what the table is and its cosine to the cut it was
distilled from, the prompt template, how K was chosen, usage and the command that reproduces it); its tables are
`card_tables`. Pure rendering from `ExportFacts` (`facts`); nothing here touches a model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from layerpick.core import registry
from layerpick.exporting.card_tables import details_section, number, speed_section, validation_section
from layerpick.exporting.facts import ExportFacts, healed_from
from layerpick.exporting.metadata import describe_kept

CARD_FILE = "README.md"


def render_model_card(facts: ExportFacts) -> str:
    """The README.md: sentence-transformers front matter, then what the model is and how it was made."""
    sections = [
        _front_matter(facts),
        _intro(facts),
        _heal(facts),
        _static(facts),
        _prompt(facts),
        _choice(facts),
        validation_section(facts),
        speed_section(facts),
        details_section(facts),
        _usage(facts),
        _reproduce(facts),
    ]
    return "\n".join(section for section in sections if section)


def _front_matter(facts: ExportFacts) -> str:
    lines = ["---", "library_name: sentence-transformers", "pipeline_tag: sentence-similarity", "tags:"]
    lines += [
        f"- {tag}"
        for tag in (
            "sentence-transformers",
            "feature-extraction",
            "sentence-similarity",
            "layerpick",
            "truncated",
            *(("model2vec", "static-embeddings") if facts.static else ()),
            *(("healed", "distillation") if facts.heal else ()),
        )
    ]
    base = registry.hub_id(facts.model) or (facts.model if _looks_like_hub_id(facts.model) else None)
    if base:
        lines.append(f"base_model: {base}")
    return "\n".join(lines + ["---", ""])


def _looks_like_hub_id(name: str) -> bool:
    return name.count("/") == 1 and not name.startswith((".", "/", "~"))


def _intro(facts: ExportFacts) -> str:
    if facts.static:
        return _static_intro(facts)
    kept = facts.params_cut / max(facts.params_full, 1)
    blocks = (facts.heal or {}).get("teacher", {}).get("blocks")
    layers = describe_kept(facts.layer, facts.num_layers, blocks, noun=" layers")
    return (
        f"# {_short_name(facts.model)}, {layers}\n\n"
        f"A sentence embedding model made of **{'the ' if layers.startswith('first') else ''}{layers}** of "
        f"`{facts.model}` ({facts.architecture}), cut by layerpick: {_removed(facts)}, so it keeps "
        f"{facts.params_cut:,} of {facts.params_full:,} parameters ({kept:.0%}). "
        f"Its output is {facts.pooling} pooling over {_representation_words(facts)}"
        f"{_transform_clause(facts.transform)}{', L2-normalised' if facts.normalize else ''}.\n"
    )


def _heal(facts: ExportFacts) -> str:
    """A healed export: what it was trained to reproduce, on what, and its fidelity before and after."""
    heal = facts.heal
    if not heal:
        return ""
    texts, before, after = heal.get("texts", {}), heal["before"], heal["after"]
    epochs = heal.get("training", {}).get("epochs")
    kept = describe_kept(facts.layer, facts.num_layers, healed_from(facts), noun=" layers")
    return (
        "## Healed\n\n"
        f"After the cut, the {kept} were trained by `layerpick heal` to reproduce "
        f"{heal.get('teacher', {}).get('description', 'the full model')} on {texts.get('count')} unlabelled texts "
        f"({texts.get('source')}, sha256 `{texts.get('sha256')}`), {epochs} epoch{'' if epochs == 1 else 's'}: "
        "its vectors are no longer layer K's (the parity below was measured on the plain cut of the first K "
        f"blocks, before healing). On {after.get('texts')} held-out texts, mean cosine to the teacher "
        f"{before['cosine']:.4f} -> {after['cosine']:.4f}, overlap of the {after.get('k')} nearest neighbours "
        f"{before['knn_overlap']:.4f} -> {after['knn_overlap']:.4f}."
        + (" The Reproduce section below is the heal's command." if facts.command == heal.get("command") else "")
        + "\n"
    )


def _static_intro(facts: ExportFacts) -> str:
    table, variance = facts.static, facts.static.get("variance_kept")
    reduced = (
        f"reduced by PCA to {table['pca_dims']} of {table['hidden_size']} dimensions ({variance:.0%} of the "
        "variance kept)"
        if variance is not None
        else "not reduced (PCA not applied)"
    )
    return (
        f"# {_short_name(facts.model)}, static embeddings from layer {facts.layer} of {facts.num_layers}\n\n"
        f"A **static** embedding model: a table of {table['vocabulary']['rows']:,} token rows distilled by model2vec "
        f"from **the first {facts.layer} of {facts.num_layers} layers** of `{facts.model}` ({facts.architecture}), "
        f"cut by layerpick and proven equal to layer {facts.layer} of the full model. Every token of the model's "
        f"own vocabulary was passed once through the cut model ({table['token_pooling']} of its outputs), the rows "
        f"{reduced} and weighted by SIF. A text's embedding is the mean of its tokens' rows"
        f"{', L2-normalised' if facts.normalize else ''}: no transformer runs, and no text is too long.\n"
    )


def _static(facts: ExportFacts) -> str:
    if not facts.static:
        return ""
    table, parity = facts.static, facts.static["parity"]
    return (
        "## Static model\n\n"
        f"model2vec and sentence-transformers (`StaticEmbedding`) read the same files (`{table['file']}`, "
        f"`tokenizer.json`, `config.json`, `modules.json`) and give the same vectors (max abs diff "
        f"{parity['readers_max_abs_diff']:.1e} on the parity texts). Distillation took "
        f"{table['distill_seconds']:.1f} s.\n\n"
        "It is not the cut model: a token's row is computed without the text around it. On the "
        f"{parity['texts']} parity texts, the static embedding's cosine to the cut model's embedding (seen in the "
        f"table's coordinates: centred and projected by the distillation's own PCA) is {parity['mean_cosine']:.4f} "
        f"on average and at least {parity['min_cosine']:.4f}. It is measured, not a threshold: nothing is refused "
        "on it.\n"
    )


def _prompt(facts: ExportFacts) -> str:
    if not facts.prompt:
        return ""
    lines = [
        "## Prompt\n",
        f"Every text is wrapped in the template `{facts.prompt['template']}` by the tokenizer itself (a "
        "post-processor in `tokenizer.json` adds the template's tokens before and after the text's, after "
        "truncation, so the end of the template is never cut off). Send plain text: sentence-transformers, "
        "TEI, vLLM and infinity all apply it.\n",
    ]
    edges = facts.prompt.get("edges")
    if edges:
        lines.append(
            f"The text is tokenized on its own, so a token that would merge across the text's edge in the wrapped "
            f'string (`mat."` is one token `."` in some vocabularies) stays two: '
            f"{edges['texts_tokenized_differently']} "
            f"of {edges['texts']} check texts tokenize differently from the wrapped string"
            f"{_truncated_words(edges)}{_cosine_words(edges)}.\n"
        )
    return "\n".join(lines)


def _transform_clause(transform: dict[str, Any] | None) -> str:
    if not transform:
        return ""
    return (
        f", then a {transform['name']} transform ({transform['output_dim']} dimensions) fitted on "
        f"{transform['fit']['count']} unlabelled texts"
    )


def _truncated_words(edges: dict[str, Any]) -> str:
    count = edges.get("texts_truncated") or 0
    return f" ({count} of them longer than max_seq_length, where the wrapped string loses its end)" if count else ""


def _cosine_words(edges: dict[str, Any]) -> str:
    cosine = edges.get("min_cosine_vs_wrapped_string")
    return "" if cosine is None else f"; where it fits, the two embeddings have a cosine of at least {cosine:.4f}"


def _removed(facts: ExportFacts) -> str:
    """Which blocks the cut lacks: the last ones, or for a cut healed from other blocks of its teacher (`heal
    --blocks spread`, counted from 1) those between the ones kept."""
    kept = healed_from(facts)
    if kept:
        removed = [block for block in range(1, facts.num_layers + 1) if block not in kept]
        return f"{_blocks(removed)} {'is' if len(removed) == 1 else 'are'} removed ({_blocks(kept)} kept)"
    dropped = facts.num_layers - facts.layer
    if dropped == 0:
        return "no block is removed"
    return "the last block is removed" if dropped == 1 else f"the last {dropped} blocks are removed"


def _blocks(numbers: list[int]) -> str:
    """`block 4`, `blocks 2 and 5`, `blocks 2, 4 and 5`."""
    words = [str(number) for number in numbers]
    listed = words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"
    return f"block{'' if len(words) == 1 else 's'} {listed}"


def _short_name(model: str) -> str:
    return model if registry.hub_id(model) is not None or _looks_like_hub_id(model) else (Path(model).name or model)


def _representation_words(facts: ExportFacts) -> str:
    if facts.representation == "raw":
        return f"the residual stream after block {facts.layer}"
    return f"layer {facts.layer} as the cut model outputs it (after the model's final norm, if it has one)"


def _choice(facts: ExportFacts) -> str:
    if facts.report is None:
        return f"## How K was chosen\n\nManually: `--layer {facts.layer}` (no selection report).\n"
    report = facts.report
    lines = [
        "## How K was chosen\n",
        f"By the selection rule `{report.get('rule')}` of `layerpick select` "
        f"(report `{facts.report_path}`), which picked layer {report.get('selected_layer')}.\n",
    ]
    scores = report.get("scores") or {}
    rows = [
        (name, values[facts.layer])
        for name, values in scores.items()
        if isinstance(values, (list, tuple)) and len(values) > facts.layer
    ]
    if rows:
        lines += ["| metric | score at layer K |", "|---|---|"]
        lines += [f"| {name} | {number(value)} |" for name, value in rows]
    return "\n".join(lines) + "\n"


def _usage(facts: ExportFacts) -> str:
    if facts.static:
        return (
            "## Usage\n\n```python\nfrom model2vec import StaticModel\n\n"
            'model = StaticModel.from_pretrained("path/to/this/directory")\n'
            'embeddings = model.encode(["a sentence", "another one"])\n\n'
            "from sentence_transformers import SentenceTransformer\n\n"
            'model = SentenceTransformer("path/to/this/directory")  # StaticEmbedding: the same vectors\n'
            'embeddings = model.encode(["a sentence", "another one"])\n```\n'
        )
    text = (
        "## Usage\n\n```python\nfrom sentence_transformers import SentenceTransformer\n\n"
        'model = SentenceTransformer("path/to/this/directory")\n'
        'embeddings = model.encode(["a sentence", "another one"])\n```\n'
    )
    if facts.onnx:
        text += (
            f"\nThe ONNX graph `{facts.onnx['file']}` (float32; inputs {', '.join(facts.onnx['inputs'])}; "
            f"output {facts.onnx['output']}) is what text-embeddings-inference's ONNX Runtime backend and "
            'infinity\'s optimum engine load; sentence-transformers loads it with `backend="onnx"` where '
            "optimum-onnx is installed, and `layerpick serve DIR --backend onnx` runs it with onnxruntime.\n"
        )
    return text


def _reproduce(facts: ExportFacts) -> str:
    return f"## Reproduce\n\n```bash\n{facts.command}\n```\n"

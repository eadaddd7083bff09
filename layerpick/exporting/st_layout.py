"""The sentence-transformers directory an export writes, in the legacy-compatible form every reader accepts.

Owns: building the modules (Transformer + Pooling [+ Normalize]) through sentence-transformers' public API
around a cut model and its tokenizer, saving them, and rewriting the saved files so that old readers
(sentence-transformers 3.x-5.x with transformers 4.x) and TEI load them too. sentence-transformers 6 writes
compact configs with class paths older versions cannot import; it still reads the legacy forms, and the
parity check in `layerpick.exporting.job` loads the rewritten directory with the current version to prove it.
`layout_problems` lists what a directory lacks, so the export (and the tests) can check every required key.
`atomic_directory` writes the directory beside its target under a temporary name and renames it at the end,
so a failed or interrupted export leaves nothing half-written.
"""

from __future__ import annotations

import json
import logging
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from torch import nn

from layerpick._util import atomic
from layerpick._util.filenames import METADATA_FILE
from layerpick._util.outputs import check_replaceable
from layerpick.core.st_source import Pipeline
from layerpick.errors import LayerpickError

logger = logging.getLogger(__name__)


# layerpick pooling name -> the legacy boolean key that turns it on in 1_Pooling/config.json
POOLING_FLAGS = {
    "cls": "pooling_mode_cls_token",
    "mean": "pooling_mode_mean_tokens",
    "max": "pooling_mode_max_tokens",
    "mean_sqrt_len_tokens": "pooling_mode_mean_sqrt_len_tokens",
    "weightedmean": "pooling_mode_weightedmean_tokens",
    "lasttoken": "pooling_mode_lasttoken",
}
LEGACY_CLASSES = {
    "Transformer": "sentence_transformers.models.Transformer",
    "Pooling": "sentence_transformers.models.Pooling",
    "Normalize": "sentence_transformers.models.Normalize",
    "Dense": "sentence_transformers.models.Dense",
}
WEIGHTS_INDEX = "model.safetensors.index.json"  # sharded weights, for models too large for one file
# transformers 5 saves the state of the tokenizer's last call (and where it was loaded from) as init kwargs
CALL_STATE_KEYS = ("max_length", "stride", "truncation_strategy", "pad_to_multiple_of", "is_local", "local_files_only")
CHAT_TEMPLATE_FILES = ("chat_template.jinja", "chat_template.json")
REQUIRED_FILES = (
    "modules.json",
    "config.json",
    "config_sentence_transformers.json",
    "sentence_bert_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "model.safetensors",
    "1_Pooling/config.json",
)


def prepare_tokenizer(tokenizer, max_seq_length: int):
    """Make the tokenizer what an embedder needs: right padding, a pad token, no chat template.

    sentence-transformers 6 adds a "message" modality whenever the processor has a chat template and then
    routes plain strings through it (system prompt and all), so the template must go."""
    tokenizer.padding_side = "right"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    if tokenizer.pad_token is None:
        raise LayerpickError("the tokenizer has no pad, eos or unk token to pad batches with")
    tokenizer.chat_template = None
    tokenizer.model_max_length = max_seq_length
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:  # forget the last call's truncation/padding, or tokenizer.json keeps it (TEI reads it)
        backend.no_truncation()
        backend.no_padding()
    return tokenizer


def save_sentence_transformer(
    staging: Path, output: Path, *, pooling: str, normalize: bool, max_seq_length: int, dense=None
) -> None:
    """Build Transformer + Pooling (+ `dense`, a Dense module) (+ Normalize) from the model saved in `staging`
    and save them to `output`."""
    from sentence_transformers import SentenceTransformer

    transformer_cls, pooling_cls, normalize_cls = _module_classes()
    transformer = transformer_cls(str(staging), max_seq_length=max_seq_length)
    if "message" in getattr(transformer, "modality_config", {}):
        raise LayerpickError("the tokenizer still carries a chat template; refusing to export")
    modules = [transformer, pooling_cls(transformer.get_embedding_dimension(), pooling_mode=pooling)]
    if dense is not None:
        modules.append(dense)
    if normalize:
        modules.append(normalize_cls())
    model = SentenceTransformer(modules=modules, device="cpu")
    model.save(str(output), create_model_card=False)


def _module_classes():
    try:  # sentence-transformers >= 6
        from sentence_transformers.sentence_transformer.modules import (
            Normalize,
            Pooling,
            Transformer,
        )
    except ImportError:  # 5.x
        from sentence_transformers.models import Normalize, Pooling, Transformer
    return Transformer, Pooling, Normalize


def rewrite_legacy(
    directory: Path, model: nn.Module, tokenizer, *, pooling: str, max_seq_length: int, pipeline: Pipeline = Pipeline()
) -> None:
    """Rewrite the saved files of `directory` into the legacy-compatible form; the source's lower-casing and
    prompts (its sentence-transformers `pipeline`) carry over."""
    _rewrite_modules(directory)
    _write_pooling_config(directory, pooling)
    _write_json(
        directory / "sentence_bert_config.json",
        {"max_seq_length": max_seq_length, "do_lower_case": pipeline.do_lower_case},
    )
    _rewrite_model_config(directory, type(model).__name__)
    _rewrite_tokenizer_config(directory, max_seq_length, list(tokenizer.model_input_names))
    _rewrite_st_config(directory, pipeline)
    _remove_unwanted_files(directory)
    from layerpick.exporting.transformed import write_legacy_dense_weights

    write_legacy_dense_weights(directory, _read_json(directory / "modules.json"))


def _rewrite_modules(directory: Path) -> None:
    modules = _read_json(directory / "modules.json")
    for entry in modules:
        class_name = entry["type"].rsplit(".", 1)[-1]
        if class_name not in LEGACY_CLASSES:
            raise LayerpickError(f"unexpected sentence-transformers module {entry['type']!r} in modules.json")
        entry["type"] = LEGACY_CLASSES[class_name]
        entry.pop("kwargs", None)
    _write_json(directory / "modules.json", modules)
    from layerpick.exporting.transformed import rewrite_dense_configs

    rewrite_dense_configs(directory, modules)


def _write_pooling_config(directory: Path, pooling: str) -> None:
    saved = _read_json(directory / "1_Pooling" / "config.json")
    dimension = saved.get("embedding_dimension", saved.get("word_embedding_dimension"))
    config: dict[str, Any] = {"word_embedding_dimension": dimension}
    config.update({flag: mode == pooling for mode, flag in POOLING_FLAGS.items()})
    config["include_prompt"] = True
    _write_json(directory / "1_Pooling" / "config.json", config)


def _rewrite_model_config(directory: Path, architecture: str) -> None:
    """architectures = the bare *Model class; add the keys transformers 4.x reads instead of v5's forms."""
    config = _read_json(directory / "config.json")
    config["architectures"] = [architecture]
    if "dtype" in config:
        config.setdefault("torch_dtype", config["dtype"])
    config.update({key: value for key, value in legacy_rope_keys(config).items() if key not in config})
    _write_json(directory / "config.json", config)


def legacy_rope_keys(config: dict[str, Any]) -> dict[str, Any]:
    """transformers 5 writes `rope_parameters`; transformers 4 reads `rope_theta` (and Gemma 3 its
    `rope_local_base_freq` for sliding layers) and ignores the new key, silently using its defaults."""
    params = config.get("rope_parameters")
    if not isinstance(params, dict):
        return {}
    if "full_attention" in params or "sliding_attention" in params:
        keys = {}
        if "rope_theta" in params.get("full_attention", {}):
            keys["rope_theta"] = params["full_attention"]["rope_theta"]
        if "rope_theta" in params.get("sliding_attention", {}):
            keys["rope_local_base_freq"] = params["sliding_attention"]["rope_theta"]
        scaling = _rope_scaling(params.get("full_attention", {}))
        return keys | ({"rope_scaling": scaling} if scaling else {})
    keys = {"rope_theta": params["rope_theta"]} if "rope_theta" in params else {}
    scaling = _rope_scaling(params)
    return keys | ({"rope_scaling": scaling} if scaling else {})


def _rope_scaling(params: dict[str, Any]) -> dict[str, Any] | None:
    if params.get("rope_type", "default") == "default":
        return None
    return {key: value for key, value in params.items() if key != "rope_theta"}


def _rewrite_tokenizer_config(directory: Path, max_seq_length: int, model_input_names: list[str]) -> None:
    """Class name transformers 4 knows, right padding, the length, the inputs, and no chat template.

    transformers 4's generic fast tokenizer also returns token_type_ids unless told otherwise: GPT-2 adds
    them to its embeddings (other vectors) and Mamba's forward rejects them, so the inputs are written down."""
    path = directory / "tokenizer_config.json"
    config = _read_json(path)
    if config.get("tokenizer_class") in (None, "TokenizersBackend"):
        config["tokenizer_class"] = "PreTrainedTokenizerFast"  # v5's generic class, under its v4 name
    config["model_input_names"] = model_input_names
    config["padding_side"] = "right"
    config["model_max_length"] = max_seq_length
    for key in ("chat_template", *CALL_STATE_KEYS):
        config.pop(key, None)
    _write_json(path, config)


def _rewrite_st_config(directory: Path, pipeline: Pipeline) -> None:
    path = directory / "config_sentence_transformers.json"
    config = _read_json(path) if path.is_file() else {}
    config["prompts"] = {**(config.get("prompts") or {}), **pipeline.prompts}
    config["default_prompt_name"] = pipeline.default_prompt_name
    config["similarity_fn_name"] = "cosine"
    _write_json(path, config)


def _remove_unwanted_files(directory: Path) -> None:
    for path in directory.rglob("*"):
        if path.suffix in (".bin", ".pt", ".pth") or path.name in CHAT_TEMPLATE_FILES:
            path.unlink()


def layout_problems(directory: Path) -> list[str]:
    """Everything `directory` lacks to be read by old and new sentence-transformers and TEI; [] when none."""
    problems = [
        f"missing {name}"
        for name in REQUIRED_FILES
        if not (directory / name).is_file()
        and not (name == "model.safetensors" and (directory / WEIGHTS_INDEX).is_file())
    ]
    if problems:
        return problems
    problems += _module_problems(_read_json(directory / "modules.json"))
    pooling = _read_json(directory / "1_Pooling" / "config.json")
    needed = ["word_embedding_dimension", "include_prompt", *POOLING_FLAGS.values()]
    problems += [f"1_Pooling/config.json lacks {key}" for key in needed if key not in pooling]
    if sum(bool(pooling.get(flag)) for flag in POOLING_FLAGS.values()) != 1:
        problems.append("1_Pooling/config.json must turn on exactly one pooling mode")
    st_config = _read_json(directory / "sentence_bert_config.json")
    problems += [
        f"sentence_bert_config.json lacks {key}" for key in ("max_seq_length", "do_lower_case") if key not in st_config
    ]
    problems += _tokenizer_problems(_read_json(directory / "tokenizer_config.json"))
    architectures = _read_json(directory / "config.json").get("architectures") or []
    if len(architectures) != 1 or not architectures[0].endswith("Model"):
        problems.append(f"config.json architectures should be one bare *Model class, not {architectures}")
    dense = {
        directory / entry["path"] / "pytorch_model.bin"
        for entry in _read_json(directory / "modules.json")
        if entry["type"].rsplit(".", 1)[-1] == "Dense"
    }  # sentence-transformers 2.x's Dense reads only it
    problems += [f"unexpected pickle weights {p.name}" for p in directory.rglob("*.bin") if p not in dense]
    problems += [f"unexpected chat template {p.name}" for p in directory.rglob("chat_template.*")]
    return problems


def _tokenizer_problems(config: dict[str, Any]) -> list[str]:
    problems = [
        f"tokenizer_config.json lacks {key}"
        for key in ("tokenizer_class", "model_input_names", "pad_token")
        if not config.get(key)
    ]
    if config.get("tokenizer_class") == "TokenizersBackend":
        problems.append("tokenizer_config.json: transformers 4 has no class TokenizersBackend")
    if config.get("padding_side") != "right":
        problems.append("tokenizer_config.json must pad on the right")
    return problems


def _module_problems(modules: list[dict[str, Any]]) -> list[str]:
    types = [entry.get("type") for entry in modules]
    problems = [f"modules.json: {t!r} is not a legacy class path" for t in types if t not in LEGACY_CLASSES.values()]
    if types[:2] != [LEGACY_CLASSES["Transformer"], LEGACY_CLASSES["Pooling"]]:
        problems.append("modules.json must start with Transformer then Pooling")
    return problems


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def check_output(output: Path, overwrite: bool) -> None:
    """Refuse an existing output unless it is empty or (with `overwrite`) an earlier export."""
    check_replaceable(output, overwrite=overwrite, owned=lambda path: (path / METADATA_FILE).is_file(), what="export")


@contextmanager
def atomic_directory(target: Path, overwrite: bool, needed: int | None = None) -> Iterator[Path]:
    """Yield a work directory beside `target`; its `export` subdirectory becomes `target` on success.
    On any failure (or interrupt) the work directory, and any parent this created, are removed (`needed`: the
    bytes expected, named when the disk fills)."""
    with atomic.staging_directory(target, needed) as work:
        yield work
        atomic.publish(work / "export")
        check_output(target, overwrite)
        atomic.swap_into_place(work / "export", target, work / "previous")

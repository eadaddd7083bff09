"""What a validation run encodes with: a model's every layer (one pass, stored), or an exported
sentence-transformers directory (its own output, one layer; a static export's table too), behind the same store
and per-layer encoder; and the static exports (`--static`) scored beside a model's layers."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from mteb.models.model_meta import ModelMeta

from layerpick._util.cache import cache_root
from layerpick._util.filenames import METADATA_FILE
from layerpick.exporting.metadata import ExportMetadata
from layerpick.core.collect import CollectConfig
from layerpick.core.cost import layer_costs
from layerpick.core.load_errors import loading
from layerpick.core.devices import resolve_device
from layerpick.core.models import DTYPES, LoadOptions, load_model
from layerpick.core.pooling import check_pooling
from layerpick.core.prompts import PLAIN, Prompt, default_pooling
from layerpick.core.transform import AffineMap
from layerpick.errors import ModelNotFoundError
from layerpick.validation.errors import StaticExportError
from layerpick.validation.encoder import (
    CollectRepresenter,
    DocumentRouter,
    LayerEncoder,
    LayerSource,
    SentenceTransformerRepresenter,
    layer_model_meta,
    model_label,
    weights_fingerprint,
)
from layerpick.validation.store import RepresentationStore, StoreKey

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SourceOptions:
    load_options: LoadOptions = LoadOptions()
    pooling: str | None = None
    representation: str = "exported"
    batch_size: int = 32
    max_length: int | None = None
    normalize: bool | None = None  # None: as the model's own sentence-transformers pipeline (Normalize module)
    store_dir: Path | None = None
    prompt: Prompt = PLAIN


@dataclass
class Setup:
    """The layer source plus everything the report says about it; `slots` maps report layer -> store layer."""

    source: LayerSource
    label: str
    revision: str
    num_layers: int
    slots: dict[int, int]
    normalize: bool
    experiment: dict[str, Any]
    embed_dim: int | None
    max_tokens: int | None
    facts: dict[str, Any] = field(default_factory=dict)
    suffix: str = ""
    batch_size: int = 32
    transforms: dict[int, AffineMap | None] | None = None  # report layer -> its fitted post-pooling map
    documents: Setup | None = None  # `--documents-by`: the encoder of retrieval tasks' documents

    @property
    def variant(self) -> str:
        """The (template, transform) label results are listed under: `none`, `eol`, `none+whiten-256`."""
        name = self.facts.get("prompt", {}).get("name", "none")
        transform = (self.facts.get("transform") or {}).get("name", "none")
        return name if transform == "none" else f"{name}+{transform}"

    def meta(self, layer: int) -> ModelMeta:
        """Results are named by what made them: an asymmetric pair's apart from the symmetric ones."""
        name = f"exported-layer-{layer}" if self.suffix == "exported" else layer
        label, experiment = self.label, self.experiment
        if self.documents is not None:
            label = f"{label}__docs-{self.documents.label}-{self.documents.revision}"
            experiment = {**experiment, "documents_by": self.documents.facts["exported_dir"]}
        return layer_model_meta(
            label, name, self.revision, embed_dim=self.embed_dim, max_tokens=self.max_tokens, experiment=experiment
        )

    def encoder(self, layer: int) -> LayerEncoder | DocumentRouter:
        transform = self.transforms.get(layer) if self.transforms else None
        own = LayerEncoder(self.source, self.slots[layer], self.meta(layer), self.normalize, transform)
        if self.documents is None:
            return own
        return DocumentRouter(own, self.documents.encoder(next(iter(self.documents.slots))), self.meta(layer))


def model_setup(model: str, options: SourceOptions) -> Setup:
    """Load `model`; every layer comes from one forward pass per distinct text, kept in the store."""
    return model_setups(model, options, (options.prompt,))[0]


def model_setups(model: str, options: SourceOptions, prompts: tuple[Prompt, ...]) -> list[Setup]:
    """Load `model` once; one setup per prompt template, each with its own pass, store and result names."""
    began = time.perf_counter()
    loaded = load_model(model, options.load_options)
    load_s = time.perf_counter() - began
    fingerprint = weights_fingerprint(loaded.model)
    return [_prompt_setup(model, loaded, fingerprint, options, prompt, load_s) for prompt in prompts]


def _prompt_setup(model: str, loaded, fingerprint: str, options: SourceOptions, prompt: Prompt, load_s: float) -> Setup:
    from layerpick.core.prompt_tokenizer import check_room, prompted_tokenizer
    from layerpick.core.models import resolve_max_seq_length  # one rule for validate and export

    pooling = check_pooling(options.pooling or default_pooling(loaded.default_pooling, prompt))
    max_length = resolve_max_seq_length(loaded, options.max_length)
    check_room(prompted_tokenizer(loaded.tokenizer, prompt), prompt, max_length)
    config = CollectConfig(
        pooling, options.representation, options.batch_size, max_length, progress=False, prompt=prompt
    )
    normalize = loaded.pipeline.normalize if options.normalize is None else options.normalize
    key = StoreKey(
        model,
        loaded.path,
        fingerprint,
        options.load_options.revision,
        options.representation,
        pooling,
        max_length,
        options.load_options.dtype,
        prompt.template,
    )
    store = RepresentationStore(store_root(options.store_dir), key)
    experiment = {
        "representation": options.representation,
        "pooling": pooling,
        "max_length": max_length,
        "dtype": options.load_options.dtype,
        "normalize": normalize,
    }
    if not prompt.is_plain:
        experiment["prompt"] = prompt.template
    num_layers = loaded.num_layers
    facts = {
        "model": model,
        "model_path": loaded.path,
        "exported_dir": None,
        "family": loaded.family.name,
        "device": str(loaded.device),
        **experiment,
        "prompt": prompt.to_json(),
        "num_layers": num_layers,
        "store": str(store.directory),
        "notes": list(loaded.notes),
        "cost": layer_costs(loaded.model).to_json(),
        "load_s": load_s,
    }
    return Setup(
        LayerSource(CollectRepresenter(loaded, config, key), store, chunk_size=_chunk(options)),
        prompt_label(model_label(model), prompt),
        options.load_options.revision or fingerprint[:12],
        num_layers,
        {k: k for k in range(num_layers + 1)},
        normalize,
        experiment,
        _hidden_size(loaded.model),
        max_length,
        facts,
        batch_size=options.batch_size,
    )


def prompt_label(label: str, prompt: Prompt) -> str:
    """The model label of a template's per-layer results, so templates never share a result file."""
    if prompt.is_plain:
        return label
    if prompt.name != "custom":
        return f"{label}__prompt-{prompt.name}"
    import hashlib

    return f"{label}__prompt-{hashlib.sha256(prompt.template.encode()).hexdigest()[:10]}"


def exported_setup(exported_dir: Path, options: SourceOptions) -> Setup:
    """An exported sentence-transformers directory: its output is the one layer, placed at the layer its
    layerpick.json names (so its scores line up with the source model's layer k)."""
    from sentence_transformers import SentenceTransformer

    path = Path(exported_dir).expanduser()
    if not path.is_dir():
        raise ModelNotFoundError(f"exported directory not found: {path}")
    began = time.perf_counter()
    info = _export_info(path)
    load = options.load_options
    device = resolve_device(load.device)
    with loading(path, what="exported model"):
        model = SentenceTransformer(
            str(path),
            device=device,
            trust_remote_code=load.trust_remote_code,
            model_kwargs={"dtype": DTYPES[load.dtype]},
        )
    fingerprint = weights_fingerprint(model)
    length = _finite_length(model.max_seq_length)  # None: a static table, which takes every token
    key = StoreKey(
        str(path.resolve()),
        str(path.resolve()),
        fingerprint,
        None,
        "sentence-transformers",
        "own",
        length or 0,
        load.dtype,
    )
    store = RepresentationStore(store_root(options.store_dir), key)
    layer, num_layers = (info.layer, info.num_layers) if info else (0, 0)
    experiment = {"representation": "sentence-transformers", "dtype": load.dtype}
    origin = info.source if info else {}
    facts = {
        "model": origin.get("model") or path.name,
        "model_path": origin.get("path"),
        "exported_dir": str(path),
        "device": str(model.device),
        **experiment,
        "pooling": info.pooling if info else None,
        "max_length": length,
        "normalize": info.normalize if info else None,
        "num_layers": num_layers,
        "exported_layer": layer,
        "store": str(store.directory),
        "notes": _export_notes(info),
        "load_s": time.perf_counter() - began,
    }
    source = LayerSource(
        SentenceTransformerRepresenter(model, options.batch_size, key), store, chunk_size=_chunk(options)
    )
    if info is not None and info.static:
        facts["static"] = {key: info.static.get(key) for key in ("pca_dims", "token_pooling", "vocabulary")}
    return Setup(
        source,
        model_label(str(path)),
        fingerprint[:12],
        num_layers,
        {layer: 0},
        False,
        experiment,
        _dimension(model),
        length,
        facts,
        suffix="exported",
        batch_size=options.batch_size,
    )


def check_static_exports(paths: Sequence[Path]) -> None:
    """Each `--static` folder is a layerpick static export, or a one-line error naming it (before any loading)."""
    for given in paths:
        path = Path(given).expanduser()
        info = _export_info(path) if (path / "modules.json").is_file() else None
        if info is None or not info.is_static:
            raise StaticExportError(
                f"--static {given} is not a layerpick static export (make one with layerpick export MODEL "
                "--layer K --format static)"
            )


def static_setups(paths: Sequence[Path], options: SourceOptions, num_layers: int) -> list[Setup]:
    """The `--static` exports as sources of one layer each, at the layer they were distilled from; a table
    distilled from a model of another depth is refused (its layer would not line up with the model's)."""
    setups = [exported_setup(path, options) for path in paths]
    for given, setup in zip(paths, setups):
        if setup.num_layers != num_layers:
            raise StaticExportError(
                f"--static {given} was distilled from a model with {setup.num_layers} layers; the model "
                f"validated has {num_layers}"
            )
    return setups


def _finite_length(value) -> int | None:
    """A model's max_seq_length as an int; None where it has none (a StaticEmbedding's is infinite)."""
    return int(value) if isinstance(value, (int, float)) and value and value != float("inf") else None


def _export_info(path: Path) -> ExportMetadata | None:
    """The export's layerpick.json (a one-line error when it is there but not one); None without one."""
    file = path / METADATA_FILE
    return ExportMetadata.read(file) if file.is_file() else None


def _export_notes(info: ExportMetadata | None) -> list[str]:
    if info is None:
        return [f"no {METADATA_FILE}: the export's scores are listed as layer 0"]
    if isinstance(info.static, dict):
        return [
            f"a static table distilled from layer {info.layer} of {info.num_layers}: its scores sit at that "
            "layer, but it is not that layer's representation (a text is the mean of its tokens' rows)"
        ]
    return [f"exported layer {info.layer} of {info.num_layers}: its scores sit at that layer"]


def store_root(store_dir: Path | None) -> Path:
    """Where representations are stored: `--store`, else the layerpick cache."""
    return Path(store_dir) if store_dir else cache_root() / "store"


def _chunk(options: SourceOptions) -> int:
    return max(64, 4 * options.batch_size)


def _hidden_size(model) -> int | None:
    config = getattr(model, "config", None)
    return getattr(config, "hidden_size", None) or getattr(config, "n_embd", None)


def _dimension(model) -> int | None:
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return getter()

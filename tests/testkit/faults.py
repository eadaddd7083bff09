"""The fault matrix's records and inputs (tests/cli/test_fault_matrix.py): the faults every model-loading command
carries, the rows built from them, the check that no (command, fault) pair is missing, and the broken models and
files the rows name.

A row's line names fixtures in braces (`{tiny}`, `{random}`, `{ws}`...): `build_fixtures` makes them, the test
fills them in.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Callable, NamedTuple, Sequence

from tests.testkit.tasks import classification_folder, retrieval_folder, sentence, sts_folder, write_jsonl
from tests.testkit.tiny import make_model, make_tokenizer

USER, USAGE = 1, 2  # the exit codes of a user's error and of a command line the parser refuses
RO = "/sys/layerpick-fault-matrix"  # /sys refuses new files, also to root


class Fault(NamedTuple):
    """A fault several commands carry: `arg` is the model a model fault names, or the options an option fault adds
    (device, dtype, transform); the command must exit `code` with a message holding every one of `words`."""

    case: str
    arg: str
    code: int
    words: Sequence[str]


class Row(NamedTuple):
    """One case of the matrix: `layerpick <line>` exits `code`, its one-line message holds every one of `words`, and
    nothing is written. `command` is the command the row belongs to ("usage" for the command line's own errors);
    `fault` is the shared fault the row carries (None for a command's own case)."""

    command: str
    case: str
    line: str
    code: int
    words: Sequence[str]
    fault: Fault | None = None

    @property
    def id(self) -> str:
        return f"{self.command}:{self.case}"


# The commands that load a model: each takes a MODEL argument and the load options (`@opt.with_load_options`);
# the matrix checks this list against the CLI, so a new one cannot be left out.
MODEL_LOADING_COMMANDS = ("select", "collect", "export", "heal", "validate", "run")
TRANSFORM_COMMANDS = ("select", "validate", "export", "run")  # the ones that fit a transform (not collect)

MODEL_FAULTS = (  # a broken or wrong model: every model-loading command refuses it in one line
    Fault("truncated-weights", "{trunc}", USER, ["model.safetensors is truncated"]),
    Fault("random-weights", "{random}", USER, ["model.safetensors is not a safetensors file"]),
    Fault("empty-weights", "{empty}", USER, ["model.safetensors is empty"]),
    Fault("not-gguf", "{notgguf}", USER, ["model.gguf", "not a GGUF file"]),
    Fault("broken-tokenizer", "{badtok}", USER, ["tokenizer.json is not valid JSON"]),
    Fault("broken-config", "{badconfig}", USER, ["config.json is not valid JSON"]),
    Fault(  # a BERT whose tokenizer.json and vocab.txt were left out: a 5-token tokenizer, every word [UNK]
        "missing-vocabulary",
        "{novocab}",
        USER,
        ["its tokenizer has 5 tokens for the model's 320 embedding rows", "vocab.txt, tokenizer.json are missing"],
    ),
    Fault("missing-path", "./no/such/model", USER, ["model path not found"]),
    Fault("alias-typo", "minilm-l7", USER, ["unknown model alias 'minilm-l7'", "did you mean 'minilm-l6'"]),
    Fault("hub-typo-offline", "minilm/l6", USER, ["'minilm/l6'", "HF_HUB_OFFLINE", "did you mean 'minilm-l6'"]),
    Fault("unsupported-architecture", "{t5}", USER, ["unsupported architecture 't5'"]),
    Fault("pickle-weights", "{pickle}", USER, ["--allow-pickle"]),
)
DEVICE_FAULTS = (  # a device or dtype this machine cannot give: checked before the ({random}) weights are read
    Fault("no-cuda", "--device cuda", USER, ["CUDA is not available here; use --device cpu or auto"]),
    Fault("no-mps", "--device mps", USER, ["MPS is not available here; use --device cpu or auto"]),
    Fault("unknown-device", "--device gpu", USER, ["unknown device 'gpu'"]),
    Fault("unknown-dtype", "--dtype float64", USER, ["unknown dtype 'float64'"]),
)
TRANSFORM_FAULTS = (  # select, validate, export and run: checked before the ({random}) weights are read
    Fault("transform-unknown", "--transform whitten", USER, ["unknown transform 'whitten'", "did you mean 'whiten'"]),
    Fault("transform-size-not-a-number", "--transform whiten-x", USER, ["must be a positive integer"]),
    Fault("transform-size-odd-numeral", "--transform whiten-\u00b2", USER, ["must be a positive integer"]),
    Fault(
        "transform-above-hidden-size",
        "--transform whiten-64",
        USER,
        ["whiten-64: 64 output dimensions is more than the model's hidden size (32)"],
    ),
    Fault(
        "transform-removes-everything",
        "--transform abtt-32",
        USER,
        ["abtt-32 removes all 32 of the model's dimensions: nothing but rounding noise would be left"],
    ),
    Fault(
        "transform-above-fit-set",
        "--transform whiten-8 --fit-texts {fewfit}",
        USER,
        ["whiten-8 needs at least 9 fit texts (got 3)", "--fit-texts"],
    ),
    Fault("fit-texts-missing", "--transform center --fit-texts {ws}/none.txt", USER, ["--fit-texts", "not found"]),
    Fault(
        "fit-texts-endless",
        "--transform center --fit-texts /dev/zero",
        USER,
        ["--fit-texts", "/dev/zero holds more than 512 MiB, the most one text source may hold"],
    ),
    Fault(
        "fit-texts-text-not-a-string",
        "--transform center --fit-texts {numtext}",
        USER,
        ["--fit-texts: {numtext}: line 1: field 'text' is a number, not a string"],
    ),
    Fault(
        "transform-with-raw",
        "--transform center --representation raw",
        USER,
        ["--transform needs --representation exported"],
    ),
)


# The JSONL field (`--field`): every command that reads texts takes it for every text it reads, and a message that
# says "use --field" names an option the command has; a field no JSONL source is read with is refused.
TEXT_COMMANDS = ("select", "collect", "export", "heal", "validate", "run")


def field_faults(texts: str, prefix: str = "") -> tuple[Fault, ...]:
    """The field faults of a command that reads its texts with the options `texts` ({src} the source), their cases
    named with `prefix`."""
    return (
        Fault(
            prefix + "field-absent-from-jsonl",
            texts.format(src="{bodyjsonl}"),
            USER,
            ["{bodyjsonl}: line 1 has no text field 'text' (its fields: body); use --field"],
        ),
        Fault(
            prefix + "field-with-a-text-file",
            texts.format(src="{fewfit}") + " --field body",
            USER,
            ["--field body names the text's field in JSONL texts", "{fewfit} is not JSONL"],
        ),
        Fault(
            prefix + "field-with-a-task-folder",
            texts.format(src="{sts}") + " --field body",
            USER,
            ["--field body names the text's field in JSONL texts", "{sts} is not JSONL"],
        ),
    )


FIELD_FAULTS = field_faults("--transform center --fit-texts {src}")
CALIBRATION_FIELD_FAULTS = field_faults("--calibration {src}", "calibration-")
FIELD_WITHOUT_TEXTS = Fault(  # export and validate read texts only to fit a transform
    "field-without-a-transform",
    "--field body",
    USER,
    ["--field body names the text's field in JSONL texts, and no texts are read here", "--transform"],
)


# Every output path is checked by one mechanism (`_util.outputs.check_output_location`) before any work: a path
# through a symbolic link that loops is refused like a read-only one, by every command that writes.
OUTPUT_COMMANDS = {  # command -> the line before its --output (a run that would do work), and the output's suffix
    "select": ("select {random}", ""),
    "collect": ("collect {random}", ".safetensors"),
    "export": ("export {random} --layer 2", ""),
    "heal": ("heal {random} --layer 2", ""),
    "validate": ("validate {random} --tasks {sts}", ""),
    "run": ("run {random}", ""),
    "compare": ("compare {report}", ""),
    "bench": ("bench {export} --layers 1", ""),
}
LOOP = "is a symbolic link that loops (too many levels of symbolic links)"


def output_fault_rows() -> list[Row]:
    """Every writing command's --output through a symbolic link loop: the link itself, and a path under it."""
    rows = []
    for command, (head, suffix) in OUTPUT_COMMANDS.items():
        rows.append(Row(command, "output-symlink-loop", f"{head} --output {{loop}}{suffix}", USER, [LOOP]))
        rows.append(
            Row(command, "output-under-a-symlink-loop", f"{head} --output {{loop}}/out{suffix}", USER, ["{loop}", LOOP])
        )
    return rows


def model_fault_rows(command: str, tail: str) -> list[Row]:
    """`command MODEL tail` for every model fault, then `command {random} tail OPTION` for every device fault."""
    return [
        Row(command, fault.case, f"{command} {fault.arg} {tail}", fault.code, fault.words, fault)
        for fault in MODEL_FAULTS
    ] + option_fault_rows(command, tail, DEVICE_FAULTS)


def option_fault_rows(command: str, tail: str, faults: Sequence[Fault], skip: tuple[str, ...] = ()) -> list[Row]:
    """`command {random} tail OPTION` for every fault of `faults` whose case is not in `skip`."""
    return [
        Row(command, fault.case, f"{command} {{random}} {tail} {fault.arg}", fault.code, fault.words, fault)
        for fault in faults
        if fault.case not in skip
    ]


def carries(row: Row, fault: Fault) -> bool:
    """Whether the row runs its command with the fault (the model as MODEL, or the options in order) and expects
    the fault's exit code and words."""
    if row.fault != fault or (row.code, list(row.words)) != (fault.code, list(fault.words)):
        return False
    argv = row.line.split()
    if argv[0] != row.command:
        return False
    if fault in MODEL_FAULTS:
        return len(argv) > 1 and argv[1] == fault.arg
    option = fault.arg.split()
    return any(argv[i : i + len(option)] == option for i in range(1, len(argv)))


def missing_pairs(
    rows: Sequence[Row],
    commands: Sequence[str] = MODEL_LOADING_COMMANDS,
    faults: Sequence[Fault] = MODEL_FAULTS + DEVICE_FAULTS,
) -> list[tuple[str, str]]:
    """The (command, fault case) pairs that no row covers."""
    return [
        (command, fault.case)
        for command in commands
        for fault in faults
        if not any(row.command == command and carries(row, fault) for row in rows)
    ]


# ---------------------------------------------------------------------------------------------- the fixtures


def build_fixtures(tiny: Path, root: Path) -> dict[str, str]:
    """Every input the rows name in braces (but `{ws}` and `{busyport}`, which are per test), built under `root`
    from the saved tiny Llama `tiny`."""
    paths = {
        "tiny": tiny,
        "trunc": broken_copy(tiny, root / "trunc", lambda data: data[: len(data) // 2]),
        "random": broken_copy(tiny, root / "random", lambda data: os.urandom(4096)),
        "empty": broken_copy(tiny, root / "empty", lambda data: b""),
        "badtok": broken_copy(tiny, root / "badtok", None, tokenizer=b'{"version": "1.0", "model": '),
        "badconfig": broken_copy(tiny, root / "badconfig", None, config=b"{\n  broken\n"),
        "t5": t5_model(root / "t5"),
        "pickle": pickle_model(root / "pickle"),
        "zerotok": zero_token_model(root / "zt"),
        "novocab": no_vocabulary_model(root / "novocab"),
    }
    paths["notgguf"] = write(root / "gguf" / "model.gguf", b"this is not a GGUF file\n")
    paths["blank"] = write(root / "blank.txt", b"\n\n")
    paths["fewfit"] = write(root / "fewfit.txt", b"one unlabelled text\nanother one\na third\n")
    paths["latin1"] = write(root / "latin1.txt", "caf\u00e9\n".encode("latin-1"))
    paths["zerowidth"] = write(root / "zerowidth.txt", "a real text\n\u200b\n".encode())
    paths["file"] = write(root / "a-file", b"x")
    paths["loop"] = root / "loop"
    paths["loop"].symlink_to("loop")  # a symbolic link to itself
    (root / "loop.safetensors").symlink_to("loop.safetensors")
    paths["folder"] = root / "a-folder"
    (root / "a-folder.safetensors").mkdir()
    paths["foreign"] = root / "foreign"
    write(root / "foreign" / "keep.txt", b"keep")
    paths["report"] = write(root / "report.json", json.dumps(report("other/model")).encode())
    paths["sts"], paths["single"] = sts_folder(root, "sts"), single_label_folder(root, "single")
    paths["export"], paths["brokenexport"] = exports(tiny, root)
    paths["staticexport"], paths["byt5"] = static_export(tiny, root), byte_tokenizer_model(root / "byt5")
    paths["store"] = root / "store"
    paths.update(unscorable(root))
    return {name: str(path) for name, path in paths.items()}


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def broken_copy(
    source: Path,
    target: Path,
    weights: Callable[[bytes], bytes] | None,
    *,
    tokenizer: bytes | None = None,
    config: bytes | None = None,
) -> Path:
    """A copy of the model folder `source` whose weights are `weights(the weights)`, and whose tokenizer.json and
    config.json are replaced by the bytes given."""
    shutil.copytree(source, target)
    if weights is not None:
        write(target / "model.safetensors", weights((source / "model.safetensors").read_bytes()))
    if tokenizer is not None:
        write(target / "tokenizer.json", tokenizer)
    if config is not None:
        write(target / "config.json", config)
    return target


def t5_model(folder: Path) -> Path:
    """A tiny T5 (an architecture layerpick does not support)."""
    from transformers import T5Config, T5Model

    T5Model(T5Config(d_model=16, d_ff=32, num_layers=1, num_heads=2, d_kv=8, vocab_size=64)).save_pretrained(folder)
    make_tokenizer("llama").save_pretrained(folder)
    return folder


def pickle_model(folder: Path) -> Path:
    """A tiny Llama whose weights are a pickle (pytorch_model.bin)."""
    import torch

    model = make_model("llama")
    model.config.save_pretrained(folder)
    torch.save(model.state_dict(), folder / "pytorch_model.bin")
    make_tokenizer("llama").save_pretrained(folder)
    return folder


def zero_token_model(folder: Path) -> Path:
    """A decoder whose normaliser removes format characters, so a zero-width space has no token."""
    from tokenizers import normalizers

    tokenizer = make_tokenizer("llama")
    tokenizer.backend_tokenizer.normalizer = normalizers.BertNormalizer(clean_text=True, lowercase=False)
    make_model("llama").save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def no_vocabulary_model(folder: Path) -> Path:
    """A tiny BERT with a WordPiece tokenizer whose vocabulary files (tokenizer.json, vocab.txt) were left out: what
    is left (tokenizer_config.json) loads as a tokenizer of the 5 special tokens that reads every word as [UNK]."""
    from transformers import BertTokenizer

    from tests.testkit.tiny import TRAINING_TEXT

    make_model("bert").save_pretrained(folder)
    words = sorted({word for text in TRAINING_TEXT for word in text.replace(",", " ").split()})
    vocabulary = write(folder / "words.txt", "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]).encode())
    BertTokenizer(vocab_file=str(vocabulary)).save_pretrained(folder)
    for name in ("words.txt", "vocab.txt", "tokenizer.json"):
        (folder / name).unlink(missing_ok=True)
    return folder


def byte_tokenizer_model(folder: Path) -> Path:
    """A tiny Llama with ByT5's tokenizer: bytes in Python, no Rust tokenizer (model2vec cannot distil it)."""
    from transformers import ByT5Tokenizer

    make_model("llama").save_pretrained(folder)
    ByT5Tokenizer(extra_ids=0).save_pretrained(folder)
    return folder


def exports(tiny: Path, root: Path) -> tuple[Path, Path]:
    """An export of `tiny` at layer 2, and a copy of it whose weights are random bytes."""
    from layerpick.exporting.config import ExportConfig
    from layerpick.exporting.job import export_model

    export = root / "export"
    export_model(str(tiny), 2, export, ExportConfig(progress=False))
    broken = root / "brokenexport"
    shutil.copytree(export, broken)
    write(broken / "model.safetensors", os.urandom(4096))
    return export, broken


def static_export(tiny: Path, root: Path) -> Path:
    """A static (model2vec) export of `tiny` at layer 2."""
    from layerpick.exporting.config import ExportConfig
    from layerpick.exporting.job import export_model

    export_model(str(tiny), 2, root / "staticexport", ExportConfig(progress=False, format="static", static_dims=8))
    return root / "staticexport"


def report(model: str) -> dict:
    """A select report.json for `model`."""
    return {
        "format": "layerpick-select/1",
        "model": model,
        "num_layers": 4,
        "selected_layer": 2,
        "pooling": "mean",
        "representation": "exported",
        "rule": "min-dime",
        "scores": {"dime": [0.0, 1.0, 2.0, 3.0, 4.0]},
        "directions": {"dime": "min"},
        "family": "llama",
        "calibration": {"source": "x", "count": 12, "sha256": "0" * 64},
    }


def validation(model: str) -> dict:
    """A validation.json whose one task failed: no score at any layer."""
    return {
        "format": "layerpick-validation/1",
        "model": model,
        "num_layers": 4,
        "layers_evaluated": [1],
        "tasks": {"flat": {"main_score_by_layer": [None] * 5}},
        "mean_by_layer": [None] * 5,
        "selected_layer": None,
        "best_layer": None,
    }


def single_label_folder(root: Path, name: str) -> Path:
    """A classification folder whose training split has one label."""
    write_jsonl(root / name / "train.jsonl", [{"text": sentence(i), "label": 0} for i in range(6)])
    write_jsonl(root / name / "test.jsonl", [{"text": sentence(i + 50), "label": i % 2} for i in range(6)])
    return root / name


def write_qrels(folder: Path, pairs: Sequence[tuple[str, str]]) -> Path:
    """Replace the folder's qrels.tsv by one that judges each (query id, document id) pair relevant."""
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in pairs))
    return folder


def unscorable(root: Path) -> dict[str, Path]:
    """Inputs that cannot give a score or a text: STS scores all equal, qrels of absent documents or queries, a
    text that is a number; a task folder whose path holds a comma; a validation.json with no scores."""
    flat = write_jsonl(
        root / "flat" / "test.jsonl", [{"sentence1": f"a {i}", "sentence2": f"b {i}", "score": 3} for i in range(6)]
    ).parent
    numbered = classification_folder(root, "numtextcls")
    write_jsonl(numbered / "test.jsonl", [{"text": 7, "label": 0}, {"text": "seven", "label": 1}])
    unscored = {**validation("other/model"), "failures": {"flat": "the folder's scores are all equal"}}
    return {
        "flatsts": flat,
        "numtextcls": numbered,
        "commasts": sts_folder(root, "scores,2024"),
        "nodocs": write_qrels(retrieval_folder(root, "nodocs"), [(f"q{i}", f"gone{i}") for i in range(4)]),
        "noqueries": write_qrels(retrieval_folder(root, "noqueries"), [(f"who{i}", f"d{i}") for i in range(4)]),
        "numtext": write(root / "numtext.jsonl", b'{"text": 3}\n'),
        "bodyjsonl": write(root / "body.jsonl", b'{"body": "a text in another field"}\n'),
        "unscored": write(root / "unscored" / "validation.json", json.dumps(unscored).encode()),
    }

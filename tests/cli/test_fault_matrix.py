"""The fault matrix: every bad input and broken environment a user can bring, per command, through the real
command line (`layerpick.cli.app.run`, the function the `layerpick` script calls, in this process).

Each row: (case, arguments, expected exit code, words the one-line message must contain). Every row also
checks that nothing was written: the working folder (where outputs go, and the default `layerpick-out/`)
holds exactly what it held before. Arguments name fixtures in braces: `{tiny}` a working tiny model, `{trunc}`
/ `{random}` / `{empty}` one whose model.safetensors is truncated / random bytes / empty, `{notgguf}` a .gguf
file that is not GGUF, `{ro}` a folder nobody may write in (/sys), `{ws}` the working folder.

Rows whose model is `{random}` and whose message is about an option prove that the option is checked before
the model is read: were the weights read first, the message would be about them.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import pytest
import torch

from layerpick._util import interrupt
from layerpick.cli import app as cli_app

USER, USAGE = 1, 2
RO = "/sys/layerpick-fault-matrix"  # /sys refuses new files, also to root
NO_CUDA = not torch.cuda.is_available()
LIBRARY_BARS = ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS", "HF_DATASETS_DISABLE_PROGRESS_BARS")

MODEL_FAULTS = [  # every command that loads a model gets these
    ("truncated-weights", "{trunc}", USER, ["model.safetensors is truncated"]),
    ("random-weights", "{random}", USER, ["model.safetensors is not a safetensors file"]),
    ("empty-weights", "{empty}", USER, ["model.safetensors is empty"]),
    ("not-gguf", "{notgguf}", USER, ["model.gguf", "not a GGUF file"]),
    ("broken-tokenizer", "{badtok}", USER, ["tokenizer.json is not valid JSON"]),
    ("broken-config", "{badconfig}", USER, ["config.json is not valid JSON"]),
    ("missing-path", "./no/such/model", USER, ["model path not found"]),
    ("alias-typo", "minilm-l7", USER, ["unknown model alias 'minilm-l7'", "did you mean 'minilm-l6'"]),
    ("hub-typo-offline", "minilm/l6", USER, ["'minilm/l6'", "HF_HUB_OFFLINE", "did you mean 'minilm-l6'"]),
    ("unsupported-architecture", "{t5}", USER, ["unsupported architecture 't5'"]),
    ("pickle-weights", "{pickle}", USER, ["--allow-pickle"]),
]
DEVICE_FAULTS = [
    ("no-cuda", "--device cuda", USER, ["CUDA is not available here; use --device cpu or auto"]),
    ("no-mps", "--device mps", USER, ["MPS is not available here; use --device cpu or auto"]),
    ("unknown-device", "--device gpu", USER, ["unknown device 'gpu'"]),
    ("unknown-dtype", "--dtype float64", USER, ["unknown dtype 'float64'"]),
]


def model_rows(command: str, tail: str) -> list[tuple]:
    rows = [(case, f"{command} {model} {tail}", code, words) for case, model, code, words in MODEL_FAULTS]
    return rows + [(case, f"{command} {{random}} {tail} {option}", code, words)
                   for case, option, code, words in DEVICE_FAULTS]


CASES: dict[str, list[tuple]] = {
    "select": model_rows("select", "--limit 12 --metrics dime -q") + [
        ("tolerance-2", "select {random} --tolerance 2", USER, ["--tolerance must be in [0, 1)"]),
        ("tolerance-negative", "select {random} --tolerance -0.1", USER, ["--tolerance must be in [0, 1)"]),
        ("limit-0", "select {random} --limit 0", USER, ["--limit must be at least 1"]),
        ("views-0", "select {random} --views 0", USER, ["--views must be at least 1"]),
        ("lidar-one-view", "select {random} --metrics lidar --views 1", USER, ["lidar needs at least 2 views"]),
        ("alpha-0", "select {random} --alpha 0", USER, ["--alpha must be a positive number"]),
        ("batch-size-0", "select {random} --batch-size 0", USER, ["--batch-size must be at least 1"]),
        ("max-length-0", "select {random} --max-length 0", USER, ["--max-length must be at least 1"]),
        ("unknown-pooling", "select {random} --pooling max", USER, ["unknown pooling 'max'"]),
        ("unknown-representation", "select {random} --representation hidden", USER, ["unknown representation"]),
        ("unknown-metric", "select {random} --metrics dimee", USER, ["dimee", "did you mean"]),
        ("unknown-rule", "select {random} --rule min-dimee", USER,
         ["unknown metric 'dimee'", "did you mean 'dime'"]),
        ("too-few-texts", "select {random} --limit 3 --metrics dime", USER, ["need at least 8 calibration texts"]),
        ("calibration-missing", "select {random} --calibration {ws}/none.txt", USER, ["calibration file not found"]),
        ("calibration-empty", "select {random} --calibration {blank}", USER, ["contains no texts"]),
        ("calibration-not-utf8", "select {random} --calibration {latin1}", USER, ["not valid UTF-8"]),
        ("calibration-text-not-a-string", "select {random} --calibration {numtext}", USER,
         ["layerpick: error: {numtext}: line 1: field 'text' is a number, not a string"]),  # named as calibration
        ("output-unwritable", "select {random} --output " + RO + "/out", USER,
         [f"cannot write --output {RO}/out", "not writable"]),
        ("output-is-a-file", "select {random} --output {file}", USER, ["exists and is not a directory"]),
        ("output-under-a-file", "select {random} --output {file}/sub", USER, ["is a file, not a directory"]),
        ("tolerance-not-a-number", "select {tiny} --tolerance abc", USAGE, ["--tolerance"]),
    ],
    "collect": model_rows("collect", "--limit 4 -q") + [
        ("output-not-safetensors", "collect {random} --output {ws}/states.npy", USER, ["must end in .safetensors"]),
        ("output-unwritable", "collect {random} --output " + RO + "/s.safetensors", USER,
         [f"cannot write --output {RO}/s.safetensors"]),
        ("output-is-a-folder", "collect {random} --output {folder}.safetensors", USER, ["is a directory, not a file"]),
        ("batch-size-0", "collect {random} --batch-size 0", USER, ["--batch-size must be at least 1"]),
        ("zero-token-text", "collect {zerotok} --calibration {zerowidth} -q", USER, ["has zero tokens"]),
    ],
    "export": model_rows("export", "--layer 2 --output {ws}/cut -q") + [
        ("no-layer-no-report", "export {random} --output {ws}/cut", USER, ["give exactly one of a layer"]),
        ("no-output", "export {tiny} --layer 2", USAGE, ["--output"]),
        ("layer-0", "export {random} --layer 0 --output {ws}/cut", USER, ["layer 0 is out of range"]),
        ("layer-too-deep", "export {tiny} --layer 9 --output {ws}/cut -q", USER, ["out of range"]),
        ("max-seq-length-0", "export {random} --layer 2 --max-seq-length 0 --output {ws}/cut", USER,
         ["--max-seq-length must be at least 1"]),
        ("report-missing", "export {random} --report {ws}/none.json --output {ws}/cut", USER, ["report not found"]),
        ("report-other-model", "export {random} --report {report} --output {ws}/cut", USER, ["is for model"]),
        ("output-exists", "export {random} --layer 2 --output {foreign}", USER, ["holds no earlier layerpick export"]),
        ("output-unwritable", "export {random} --layer 2 --output " + RO + "/cut", USER,
         [f"cannot write --output {RO}/cut"]),
        ("output-is-the-source", "export {random} --layer 2 --output {random} --overwrite", USER,
         ["--output {random} is the model being exported", "cannot replace its own source"]),
        ("output-inside-the-source", "export {random} --layer 2 --output {random}/cut", USER,
         ["is inside the model being exported"]),
        ("output-contains-the-source", "export {random} --layer 2 --output {random}/.. --overwrite", USER,
         ["contains the model being exported"]),
    ],
    "validate": model_rows("validate", "--tasks {sts} --layers 1 --output {ws}/v --store {store} -q") + [
        ("no-tasks", "validate {random}", USAGE, ["give at least one task"]),
        ("task-folder-missing", "validate {random} --tasks {ws}/none", USER, ["none"]),
        ("single-label", "validate {random} --tasks {single}", USER, ["a classifier needs at least two labels"]),
        ("layers-word", "validate {random} --tasks {sts} --layers first", USER, ["--layers must be all"]),
        ("batch-size-0", "validate {random} --tasks {sts} --batch-size 0", USER, ["--batch-size must be at least 1"]),
        ("output-unwritable", "validate {random} --tasks {sts} --output " + RO + "/v", USER,
         [f"cannot write --output {RO}/v"]),
        ("store-unwritable", "validate {random} --tasks {sts} --store " + RO + "/store --output {ws}/v", USER,
         [f"cannot write --store {RO}/store"]),
        ("exported-missing", "validate --exported {ws}/none --tasks {sts} --output {ws}/v", USER,
         ["exported directory not found"]),
        ("exported-broken", "validate --exported {brokenexport} --tasks {sts} --output {ws}/v --store {store}",
         USER, ["model.safetensors is not a safetensors file"]),
        ("sts-scores-all-equal", "validate {random} --tasks {flatsts}", USER,
         ["{flatsts}/test.jsonl: every row has the score 3", "at least two different scores"]),
        ("qrels-absent-documents", "validate {random} --tasks {nodocs}", USER,
         ["{nodocs}/qrels.tsv: none of the 4 documents it judges is in corpus.jsonl"]),
        ("qrels-absent-queries", "validate {random} --tasks {noqueries}", USER,
         ["{noqueries}/qrels.tsv: none of the 4 queries it judges is in queries.jsonl"]),
        ("task-text-not-a-string", "validate {random} --tasks {numtextcls}", USER,
         ["{numtextcls}/test.jsonl:1: field 'text' is a number, not a string"]),
        # a folder whose path holds a comma is taken whole: the run gets past the tasks to the (broken) weights
        ("tasks-path-with-comma", "validate {random} --tasks {commasts} --layers 1 --output {ws}/v --store {store}",
         USER, ["model.safetensors is not a safetensors file"]),
        ("tasks-path-with-comma-listed", "validate {random} --tasks {sts},{commasts} --layers 1 --output {ws}/v "
         "--store {store}", USER, ["model.safetensors is not a safetensors file"]),
        ("tasks-path-with-comma-repeated", "validate {random} --tasks {commasts} --tasks {sts} --layers 1 "
         "--output {ws}/v --store {store}", USER, ["model.safetensors is not a safetensors file"]),
    ],
    "run": model_rows("run", "--limit 12 --metrics dime --no-bench --output {ws}/r -q") + [
        ("tolerance-2", "run {random} --tolerance 2 --output {ws}/r", USER, ["--tolerance must be in [0, 1)"]),
        ("single-label", "run {random} --tasks {single} --output {ws}/r", USER, ["at least two labels"]),
        ("layers-word", "run {random} --tasks {sts} --layers first --output {ws}/r", USER, ["--layers must be"]),
        ("bench-batch-sizes", "run {random} --bench-batch-sizes 0 --output {ws}/r", USAGE, ["batch sizes"]),
        ("bench-texts-0", "run {random} --bench-texts 0 --output {ws}/r", USER, ["--texts and --repeats"]),
        ("output-unwritable", "run {random} --output " + RO + "/r", USER, [f"cannot write --output {RO}/r"]),
        ("output-foreign", "run {random} --output {foreign}", USER, ["holds no earlier layerpick run"]),
        ("output-is-a-file", "run {random} --output {file}", USER, ["exists and is not a directory"]),
        ("sts-scores-all-equal", "run {random} --tasks {flatsts} --output {ws}/r", USER,
         ["{flatsts}/test.jsonl: every row has the score 3"]),
        ("tasks-path-with-comma", "run {random} --tasks {commasts} --output {ws}/r -q", USER,
         ["model.safetensors is not a safetensors file"]),
    ],
    "bench": [
        ("not-an-export", "bench {ws}/none", USER, ["not a sentence-transformers directory"]),
        ("batch-sizes-0", "bench {export} --batch-sizes 0", USAGE, ["batch sizes must be positive"]),
        ("texts-0", "bench {export} --texts 0", USER, ["--texts and --repeats must be at least 1"]),
        ("threads-0", "bench {export} --threads 0", USAGE, ["--threads"]),
        ("no-cuda", "bench {export} --device cuda", USER, ["CUDA is not available here"]),
        ("broken-export", "bench {brokenexport} --texts 4 --repeats 1 --no-memory", USER,
         ["model.safetensors is not a safetensors file"]),
    ],
    "serve": [
        ("not-an-export", "serve {ws}/none --port 0", USER, ["not a sentence-transformers directory"]),
        ("broken-export", "serve {brokenexport} --port 0", USER, ["model.safetensors is not a safetensors file"]),
        ("port-out-of-range", "serve {export} --port 70000", USER, ["--port must be between 0 and 65535"]),
        ("port-busy", "serve {brokenexport} --port {busyport}", USER, ["cannot listen on 127.0.0.1:"]),
        ("max-inputs-0", "serve {export} --max-inputs 0", USER, ["--max-inputs must be at least 1"]),
        ("no-cuda", "serve {export} --device cuda --port 0", USER, ["CUDA is not available here"]),
    ],
    "compare": [
        ("report-missing", "compare {ws}/none.json --output {ws}/c", USER, ["none.json"]),
        ("output-unwritable", "compare {report} --output " + RO + "/c", USER, [f"cannot write --output {RO}/c"]),
        ("output-not-empty", "compare {report} --output {foreign}", USER, ["not empty"]),
        ("validation-without-scores", "compare {unscored} --output {ws}/c", USER,
         ["no layer has a mean task score (failed: flat)"]),
        ("validation-without-scores-beside-a-report", "compare {report} {unscored} --output {ws}/c", USER,
         ["{unscored}: no layer has a mean task score"]),
    ],
    "usage": [
        ("unknown-command", "frobnicate", USAGE, ["No such command"]),
        ("unknown-option", "collect --no-such-option", USAGE, ["No such option"]),
    ],
}
TRANSFORM_FAULTS = [  # select, validate, export and run: checked before the model's weights are read
    ("transform-unknown", "--transform whitten", USER, ["unknown transform 'whitten'", "did you mean 'whiten'"]),
    ("transform-size-not-a-number", "--transform whiten-x", USER, ["must be a positive integer"]),
    ("transform-above-hidden-size", "--transform whiten-64", USER,
     ["whiten-64: 64 output dimensions is more than the model's hidden size (32)"]),
    ("transform-above-fit-set", "--transform whiten-8 --fit-texts {fewfit}", USER,
     ["whiten-8 needs at least 9 fit texts (got 3)", "--fit-texts"]),
    ("fit-texts-missing", "--transform center --fit-texts {ws}/none.txt", USER, ["--fit-texts", "not found"]),
    ("fit-texts-text-not-a-string", "--transform center --fit-texts {numtext}", USER,
     ["--fit-texts: {numtext}: line 1: field 'text' is a number, not a string"]),
    ("transform-with-raw", "--transform center --representation raw", USER,
     ["--transform needs --representation exported"]),
]


def transform_rows(command: str, tail: str, skip: tuple[str, ...] = ()) -> list[tuple]:
    return [(case, f"{command} {{random}} {tail} {option}", code, words) for case, option, code, words in
            TRANSFORM_FAULTS if case not in skip]


CASES["select"] += transform_rows("select", "--limit 12 --metrics dime -q")
CASES["validate"] += transform_rows("validate", "--tasks {sts} --layers 1 --output {ws}/v --store {store} -q")
CASES["export"] += transform_rows("export", "--layer 2 --output {ws}/cut -q", skip=("transform-with-raw",)) + [
    ("transform-several", "export {random} --layer 2 --output {ws}/cut --transform none,center", USER,
     ["--transform takes one transform for an export"]),
]
CASES["run"] += transform_rows("run", "--limit 12 --metrics dime --no-bench --output {ws}/r -q")
STATIC = "export {random} --layer 2 --output {ws}/cut --format static"  # checked before the weights are read
CASES["export"] += [
    ("format-unknown", "export {random} --layer 2 --output {ws}/cut --format tflite", USER,
     ["unknown format 'tflite'; choose one of sentence-transformers, onnx, static"]),
    ("static-dims-0", STATIC + " --static-dims 0", USER, ["--static-dims must be at least 1 (got 0)"]),
    ("static-dims-above-hidden-size", STATIC + " --static-dims 64", USER,
     ["--static-dims 64 is above the model's hidden size (32)"]),
    ("static-dims-without-static", "export {random} --layer 2 --output {ws}/cut --static-dims 16", USER,
     ["--static-dims applies to the static table: add --format static"]),
    ("static-with-prompt", STATIC + " --prompt eol", USER,
     ["--format static cannot carry the prompt template eol", "--prompt none"]),
    ("static-with-transform", STATIC + " --transform center", USER,
     ["--format static cannot carry the transform center"]),
    ("static-with-max-seq-length", STATIC + " --max-seq-length 64", USER,
     ["--max-seq-length does not apply to --format static"]),
    ("static-with-quantize", STATIC + " --quantize int8", USER, ["--quantize applies to the ONNX graph"]),
    ("static-byte-tokenizer", "export {byt5} --layer 2 --output {ws}/cut --format static -q", USER,
     ["model2vec cannot distil", "(ByT5Tokenizer) has no fast (Rust) tokenizer"]),
]
CASES["bench"] += [
    ("static-onnx-backend", "bench {staticexport} --backend onnx --texts 4 --repeats 1 --no-memory", USER,
     ["is a static export", "bench it with --backend torch"]),
]
MPS = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
SKIPS = {"no-cuda": (not NO_CUDA, "this machine has CUDA"), "no-mps": (MPS, "this machine has MPS"),
         "output-unwritable": (not Path("/sys").is_dir(), "no /sys here"),
         "store-unwritable": (not Path("/sys").is_dir(), "no /sys here")}


def all_rows() -> list:
    return [pytest.param(command, *row, id=f"{command}:{row[0]}") for command, rows in CASES.items() for row in rows]


def count() -> int:
    return sum(len(rows) for rows in CASES.values())


@pytest.fixture(scope="module")
def fixtures(tiny_dirs, tmp_path_factory) -> dict[str, str]:
    """Everything the rows name, built once, outside the working folder."""
    root = tmp_path_factory.mktemp("faults")
    tiny = Path(tiny_dirs("llama"))
    paths = {"tiny": tiny, "trunc": _broken(tiny, root / "trunc", lambda data: data[: len(data) // 2]),
             "random": _broken(tiny, root / "random", lambda data: os.urandom(4096)),
             "empty": _broken(tiny, root / "empty", lambda data: b""),
             "badtok": _broken(tiny, root / "badtok", None, tokenizer=b'{"version": "1.0", "model": '),
             "badconfig": _broken(tiny, root / "badconfig", None, config=b"{\n  broken\n"),
             "t5": _t5(root / "t5"), "pickle": _pickle(root / "pickle"), "zerotok": _zero_token_model(root / "zt")}
    (root / "gguf").mkdir()
    (root / "gguf" / "model.gguf").write_text("this is not a GGUF file\n")
    paths["notgguf"] = root / "gguf" / "model.gguf"
    paths["blank"] = _write(root / "blank.txt", b"\n\n")
    paths["fewfit"] = _write(root / "fewfit.txt", b"one unlabelled text\nanother one\na third\n")
    paths["latin1"] = _write(root / "latin1.txt", "caf\u00e9\n".encode("latin-1"))
    paths["zerowidth"] = _write(root / "zerowidth.txt", "a real text\n\u200b\n".encode())
    paths["file"] = _write(root / "a-file", b"x")
    paths["folder"] = root / "a-folder"
    (root / "a-folder.safetensors").mkdir()
    paths["foreign"] = root / "foreign"
    _write(root / "foreign" / "keep.txt", b"keep")
    paths["report"] = _write(root / "report.json", json.dumps(_report("other/model")).encode())
    paths["sts"], paths["single"] = _sts(root / "sts"), _single_label(root / "single")
    paths["export"], paths["brokenexport"] = _exports(tiny, root)
    paths["staticexport"], paths["byt5"] = _static_export(tiny, root), _byte_tokenizer_model(root / "byt5")
    paths["store"] = root / "store"
    paths.update(_unscorable(root))
    return {name: str(path) for name, path in paths.items()}


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """An empty working folder (the current directory), the library bars' variables restored afterwards."""
    folder = tmp_path / "ws"
    folder.mkdir()
    monkeypatch.chdir(folder)
    for name in LIBRARY_BARS:
        monkeypatch.setenv(name, "1")
    interrupt.reset()
    yield folder
    interrupt.reset()


@pytest.fixture
def busy_port():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        yield busy.getsockname()[1]


def run_cli(line: str, values: dict[str, str], capsys) -> tuple[int, str, str]:
    argv = [word.format(**values) for word in line.split()]
    capsys.readouterr()
    code = cli_app.run(argv)
    out, err = capsys.readouterr()
    return code, out, err


def tree(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


@pytest.mark.parametrize("command, case, line, code, words", all_rows())
def test_fault(command, case, line, code, words, fixtures, workspace, busy_port, capsys):
    skip, why = SKIPS.get(case, (False, ""))
    if skip:
        pytest.skip(why)
    before = tree(workspace)
    values = {**fixtures, "ws": str(workspace), "busyport": str(busy_port)}
    got, out, err = run_cli(line, values, capsys)
    assert got == code, f"{line}\nstdout: {out}\nstderr: {err}"
    if code == USER:
        lines = [text for text in err.strip().splitlines() if text.strip()]
        assert len(lines) == 1 and lines[0].startswith("layerpick: error: "), err
    for word in words:
        assert word.format(**values) in err, f"{word!r} not in {err!r}"
    assert "Traceback" not in err
    assert tree(workspace) == before, "something was written"
    for name in ("foreign", "report", "file"):
        assert Path(fixtures[name]).exists()
    assert tree(Path(fixtures["foreign"])) == ["keep.txt"]


def test_the_matrix_covers_every_command():
    from typer.main import get_command

    commands = set(get_command(cli_app.app).commands) - {"models"}  # `models` takes no input
    assert commands <= set(CASES), commands - set(CASES)
    assert count() >= 100


# ---------------------------------------------------------------------------------- exit codes beyond the table


def _collect_raising(monkeypatch, error: BaseException | None, *, swallow: bool = False):
    """Make `layerpick collect`'s job raise `error` (a KeyboardInterrupt arrives as a real SIGINT, through the
    entry point's handler), or, with `swallow`, act as if a library had caught Ctrl-C and carried on."""
    import signal

    from layerpick.cli import collect_cmd

    def job(*args, **kwargs):
        if swallow:
            interrupt.request()
        if isinstance(error, KeyboardInterrupt):
            previous = signal.signal(signal.SIGINT, cli_app._on_interrupt)
            try:
                signal.raise_signal(signal.SIGINT)
            finally:
                signal.signal(signal.SIGINT, previous)
        if error is not None:
            raise error
        return None

    monkeypatch.setattr(collect_cmd, "collect_layers", job)


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("error, code", [(RuntimeError("a bug"), 3), (OSError(30, "Read-only file system"), 1),
                                         (KeyboardInterrupt(), 130)])
def test_exit_codes_hold_with_and_without_debug(error, code, debug, workspace, monkeypatch, capsys, fixtures):
    """LAYERPICK_DEBUG=1 adds the traceback and keeps the documented exit code (it used to turn 3 into 1)."""
    monkeypatch.setenv("LAYERPICK_DEBUG", "1" if debug else "0")
    _collect_raising(monkeypatch, error)
    got, _, err = run_cli("collect {tiny} -q", fixtures, capsys)
    assert got == code, err
    assert ("Traceback" in err) == debug
    if code == 130:
        assert err.strip().endswith("layerpick: aborted")
    else:
        assert f"layerpick: {'error' if code == 1 else 'internal error (RuntimeError)'}: " in err


@pytest.mark.parametrize("then", [None, AttributeError("module 'numpy' has no attribute 'dtype'")])
def test_a_swallowed_interrupt_still_aborts(then, workspace, monkeypatch, capsys, fixtures):
    """A library that catches the KeyboardInterrupt (and carries on, or fails in a confusing way) cannot turn
    Ctrl-C into success or into an unrelated error: the request is remembered."""
    _collect_raising(monkeypatch, then, swallow=True)
    got, _, err = run_cli("collect {tiny} -q", fixtures, capsys)
    assert got == 130 and err.strip() == "layerpick: aborted", err


def test_version_prints_no_warnings_and_imports_nothing_heavy():
    import subprocess

    script = ("import sys; from layerpick.cli.app import run; code = run(['--version']); "
              "assert 'torch' not in sys.modules and 'transformers' not in sys.modules; sys.exit(code)")
    done = subprocess.run([sys.executable, "-W", "default", "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.startswith("layerpick ")
    entry = Path(sys.executable).parent / "layerpick"
    if entry.exists():
        script_run = subprocess.run([str(entry), "--version"], capture_output=True, text=True, timeout=60)
        assert script_run.returncode == 0 and script_run.stderr == "" and script_run.stdout == done.stdout


# ---------------------------------------------------------------------------------------------- fixtures


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _broken(source: Path, target: Path, weights, *, tokenizer: bytes | None = None,
            config: bytes | None = None) -> Path:
    import shutil

    shutil.copytree(source, target)
    if weights is not None:
        data = (source / "model.safetensors").read_bytes()
        (target / "model.safetensors").write_bytes(weights(data))
    if tokenizer is not None:
        (target / "tokenizer.json").write_bytes(tokenizer)
    if config is not None:
        (target / "config.json").write_bytes(config)
    return target


def _t5(folder: Path) -> Path:
    from transformers import T5Config, T5Model

    from tests.testkit.tiny import make_tokenizer

    T5Model(T5Config(d_model=16, d_ff=32, num_layers=1, num_heads=2, d_kv=8, vocab_size=64)).save_pretrained(folder)
    make_tokenizer("llama").save_pretrained(folder)
    return folder


def _pickle(folder: Path) -> Path:
    from tests.testkit.tiny import make_model, make_tokenizer

    model = make_model("llama")
    model.config.save_pretrained(folder)
    torch.save(model.state_dict(), folder / "pytorch_model.bin")
    make_tokenizer("llama").save_pretrained(folder)
    return folder


def _zero_token_model(folder: Path) -> Path:
    """A decoder whose normaliser removes format characters, so a zero-width space has no token."""
    from tokenizers import normalizers

    from tests.testkit.tiny import make_model, make_tokenizer

    tokenizer = make_tokenizer("llama")
    tokenizer.backend_tokenizer.normalizer = normalizers.BertNormalizer(clean_text=True, lowercase=False)
    make_model("llama").save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _report(model: str) -> dict:
    return {"model": model, "num_layers": 4, "selected_layer": 2, "pooling": "mean", "representation": "exported",
            "rule": "min-dime", "scores": {"dime": [0.0, 1.0, 2.0, 3.0, 4.0]}, "directions": {"dime": "min"},
            "family": "llama", "calibration": {"source": "x", "count": 12, "sha256": "0" * 64}}


def _sts(folder: Path) -> Path:
    rows = [{"sentence1": f"a text {i}", "sentence2": f"another text {i}", "score": float(i % 5)} for i in range(10)]
    return _write(folder / "test.jsonl", "".join(json.dumps(row) + "\n" for row in rows).encode()).parent


def _single_label(folder: Path) -> Path:
    train = [{"text": f"text {i}", "label": 0} for i in range(6)]
    test = [{"text": f"other {i}", "label": i % 2} for i in range(6)]
    _write(folder / "train.jsonl", "".join(json.dumps(row) + "\n" for row in train).encode())
    return _write(folder / "test.jsonl", "".join(json.dumps(row) + "\n" for row in test).encode()).parent


def _exports(tiny: Path, root: Path) -> tuple[Path, Path]:
    import shutil

    from layerpick.export.config import ExportConfig
    from layerpick.export.job import export_model

    export = root / "export"
    export_model(str(tiny), 2, export, ExportConfig(progress=False))
    broken = root / "brokenexport"
    shutil.copytree(export, broken)
    (broken / "model.safetensors").write_bytes(os.urandom(4096))
    return export, broken


def _static_export(tiny: Path, root: Path) -> Path:
    from layerpick.export.config import ExportConfig
    from layerpick.export.job import export_model

    export_model(str(tiny), 2, root / "staticexport", ExportConfig(progress=False, format="static", static_dims=8))
    return root / "staticexport"


def _byte_tokenizer_model(folder: Path) -> Path:
    """A tiny Llama with ByT5's tokenizer: bytes in Python, no Rust tokenizer (model2vec cannot distil it)."""
    from transformers import ByT5Tokenizer

    from tests.testkit.tiny import make_model

    make_model("llama").save_pretrained(folder)
    ByT5Tokenizer(extra_ids=0).save_pretrained(folder)
    return folder


def _unscorable(root: Path) -> dict[str, Path]:
    """Inputs that cannot give a score or a text: STS scores all equal, qrels of absent documents or queries, a
    text that is a number; a task folder whose path holds a comma; a validation.json with no scores."""
    from tests.testkit.tasks import classification_folder, retrieval_folder, sts_folder, write_jsonl

    flat = write_jsonl(root / "flat" / "test.jsonl",
                       [{"sentence1": f"a {i}", "sentence2": f"b {i}", "score": 3} for i in range(6)]).parent
    numbered = classification_folder(root, "numtextcls")
    write_jsonl(numbered / "test.jsonl", [{"text": 7, "label": 0}, {"text": "seven", "label": 1}])
    unscored = {**_validation("other/model"), "failures": {"flat": "the folder's scores are all equal"}}
    return {"flatsts": flat, "numtextcls": numbered, "commasts": sts_folder(root, "scores,2024"),
            "nodocs": _qrels(retrieval_folder(root, "nodocs"), [(f"q{i}", f"gone{i}") for i in range(4)]),
            "noqueries": _qrels(retrieval_folder(root, "noqueries"), [(f"who{i}", f"d{i}") for i in range(4)]),
            "numtext": _write(root / "numtext.jsonl", b'{"text": 3}\n'),
            "unscored": _write(root / "unscored" / "validation.json", json.dumps(unscored).encode())}


def _qrels(folder: Path, pairs: list[tuple[str, str]]) -> Path:
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in pairs))
    return folder


def _validation(model: str) -> dict:
    """A validation.json whose one task failed: no score at any layer."""
    return {"model": model, "num_layers": 4, "layers_evaluated": [1], "tasks": {"flat": {"main_score_by_layer":
            [None] * 5}}, "mean_by_layer": [None] * 5, "selected_layer": None, "best_layer": None}


if __name__ == "__main__":
    print(count(), "cases")
    sys.exit(0)

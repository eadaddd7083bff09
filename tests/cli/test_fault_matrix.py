"""The fault matrix: every bad input and broken environment a user can bring, per command, through the real
command line (`layerpick.cli.app.run`, the function the `layerpick` script calls, in this process).

Each row (a `tests.testkit.faults.Row`): its case, the arguments, the expected exit code, and the words the
one-line message must contain. Every row also checks that nothing was written: the working folder (where
outputs go, and the default `layerpick-out/`) holds exactly what it held before. Arguments name fixtures in
braces: `{tiny}` a working tiny model, `{trunc}` / `{random}` / `{empty}` one whose model.safetensors is
truncated / random bytes / empty, `{notgguf}` a .gguf file that is not GGUF, `{ro}` a folder nobody may write
in (/sys), `{ws}` the working folder (`tests.testkit.faults.build_fixtures` makes the rest).

Every model-loading command carries every model fault and every device fault (a test below names any
(command, fault) pair that is missing). Rows whose model is `{random}` and whose
message is about an option prove that the option is checked before the model is read: were the weights read
first, the message would be about them.
"""

from __future__ import annotations

import re
import socket
import sys
from pathlib import Path

import pytest
import torch

from layerpick._util import interrupt
from layerpick.cli import app as cli_app
from tests.testkit.faults import (
    DEVICE_FAULTS,
    MODEL_FAULTS,
    MODEL_LOADING_COMMANDS,
    RO,
    TRANSFORM_COMMANDS,
    TRANSFORM_FAULTS,
    CALIBRATION_FIELD_FAULTS,
    FIELD_FAULTS,
    FIELD_WITHOUT_TEXTS,
    field_faults,
    output_fault_rows,
    USAGE,
    USER,
    Row,
    build_fixtures,
    missing_pairs,
    model_fault_rows,
    option_fault_rows,
)

NO_CUDA = not torch.cuda.is_available()
LIBRARY_BARS = ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS", "HF_DATASETS_DISABLE_PROGRESS_BARS")

# What each model-loading command's fault rows add after the model (a run that would otherwise succeed, quietly)
SELECT = "--limit 12 --metrics dime -q"
COLLECT = "--limit 4 -q"
EXPORT = "--layer 2 --output {ws}/cut -q"
HEAL = "--layer 2 --output {ws}/healed -q"
VALIDATE = "--tasks {sts} --layers 1 --output {ws}/v --store {store} -q"
RUN = "--limit 12 --metrics dime --no-bench --output {ws}/r -q"
STATIC = "export {random} --layer 2 --output {ws}/cut --format static"  # checked before the weights are read
LR = "--learning-rate must be above 0 and at most 1 (AdamW's step; the default is 0.0002), "

ROWS: list[Row] = [
    *model_fault_rows("select", SELECT),
    Row("select", "tolerance-2", "select {random} --tolerance 2", USER, ["--tolerance must be in [0, 1)"]),
    Row("select", "tolerance-negative", "select {random} --tolerance -0.1", USER, ["--tolerance must be in [0, 1)"]),
    Row("select", "limit-0", "select {random} --limit 0", USER, ["--limit must be at least 1"]),
    Row("select", "views-0", "select {random} --views 0", USER, ["--views must be at least 1"]),
    Row(
        "select", "lidar-one-view", "select {random} --metrics lidar --views 1", USER, ["lidar needs at least 2 views"]
    ),
    Row("select", "alpha-0", "select {random} --alpha 0", USER, ["--alpha must be a positive number"]),
    Row("select", "batch-size-0", "select {random} --batch-size 0", USER, ["--batch-size must be at least 1"]),
    Row("select", "max-length-0", "select {random} --max-length 0", USER, ["--max-length must be at least 1"]),
    Row("select", "unknown-pooling", "select {random} --pooling max", USER, ["unknown pooling 'max'"]),
    Row(
        "select", "unknown-representation", "select {random} --representation hidden", USER, ["unknown representation"]
    ),
    Row("select", "unknown-metric", "select {random} --metrics dimee", USER, ["dimee", "did you mean"]),
    Row(
        "select",
        "unknown-rule",
        "select {random} --rule min-dimee",
        USER,
        ["unknown metric 'dimee'", "did you mean 'dime'"],
    ),
    Row(
        "select",
        "too-few-texts",
        "select {random} --limit 3 --metrics dime",
        USER,
        ["need at least 8 calibration texts"],
    ),
    Row(
        "select",
        "calibration-missing",
        "select {random} --calibration {ws}/none.txt",
        USER,
        ["calibration file not found"],
    ),
    Row("select", "calibration-empty", "select {random} --calibration {blank}", USER, ["contains no texts"]),
    Row("select", "calibration-not-utf8", "select {random} --calibration {latin1}", USER, ["not valid UTF-8"]),
    Row(
        "select",
        "calibration-text-not-a-string",
        "select {random} --calibration {numtext}",
        USER,
        ["layerpick: error: {numtext}: line 1: field 'text' is a number, not a string"],
    ),  # named as calibration
    Row(
        "select",
        "output-unwritable",
        "select {random} --output " + RO + "/out",
        USER,
        [f"cannot write --output {RO}/out", "not writable"],
    ),
    Row("select", "output-is-a-file", "select {random} --output {file}", USER, ["exists and is not a directory"]),
    Row("select", "output-under-a-file", "select {random} --output {file}/sub", USER, ["is a file, not a directory"]),
    Row("select", "tolerance-not-a-number", "select {tiny} --tolerance abc", USAGE, ["--tolerance"]),
    *model_fault_rows("collect", COLLECT),
    Row(
        "collect",
        "output-not-safetensors",
        "collect {random} --output {ws}/states.npy",
        USER,
        ["must end in .safetensors"],
    ),
    Row(
        "collect",
        "output-unwritable",
        "collect {random} --output " + RO + "/s.safetensors",
        USER,
        [f"cannot write --output {RO}/s.safetensors"],
    ),
    Row(
        "collect",
        "output-is-a-folder",
        "collect {random} --output {folder}.safetensors",
        USER,
        ["is a directory, not a file"],
    ),
    Row("collect", "batch-size-0", "collect {random} --batch-size 0", USER, ["--batch-size must be at least 1"]),
    Row("collect", "zero-token-text", "collect {zerotok} --calibration {zerowidth} -q", USER, ["has zero tokens"]),
    *model_fault_rows("export", EXPORT),
    Row("export", "no-layer-no-report", "export {random} --output {ws}/cut", USER, ["give exactly one of a layer"]),
    Row("export", "no-output", "export {tiny} --layer 2", USAGE, ["--output"]),
    Row("export", "layer-0", "export {random} --layer 0 --output {ws}/cut", USER, ["layer 0 is out of range"]),
    *model_fault_rows("heal", HEAL),
    Row("heal", "no-output", "heal {tiny} --layer 2", USAGE, ["--output"]),
    Row("heal", "no-layer", "heal {random} --output {ws}/healed", USER, ["give the layer to cut after"]),
    Row("heal", "layer-0", "heal {random} --layer 0 --output {ws}/healed", USER, ["layer 0 is out of range"]),
    Row("heal", "layer-is-the-last", "heal {random} --layer 4 --output {ws}/healed", USER, ["nothing to heal"]),
    Row("heal", "too-few-texts", "heal {random} -k 2 --fit-texts {blank} -o {ws}/h", USER, ["contains no texts"]),
    Row("heal", "dtype", "heal {random} -k 2 --dtype bfloat16 -o {ws}/h", USER, ["heal trains float32 weights"]),
    Row("heal", "layers-word", "heal {random} --layers two -o {ws}/h", USER, ["comma-separated layers to heal"]),
    Row("heal", "layers-to-the-last", "heal {random} --layers 2,4 -o {ws}/h", USER, ["at K = L there is nothing"]),
    Row("heal", "layer-and-layers", "heal {random} -k 2 --layers 2,3 -o {ws}/h", USER, ["give one of them"]),
    Row("heal", "max-loss-alone", "heal {random} -k 2 --max-loss 0.1 -o {ws}/h", USER, ["add --layers"]),
    Row("heal", "blocks-word", "heal {random} -k 2 --blocks even -o {ws}/h", USER, ["--blocks must be spread, first"]),
    Row("heal", "blocks-count", "heal {random} -k 2 --blocks 1,2,4 -o {ws}/h", USER, ["name 2 different blocks"]),
    Row("heal", "blocks-in-sweep", "heal {random} --layers 2,3 --blocks 1,4 -o {ws}/h", USER, ["a sweep takes"]),
    Row("heal", "max-loss-1", "heal {random} --layers 2 --max-loss 1 -o {ws}/h", USER, ["0 <= X < 1"]),
    # every number's range and finiteness, checked before the ({random}) weights are read (issue 51)
    Row("heal", "max-loss-nan", "heal {random} --layers 2 --max-loss nan -o {ws}/h", USER, ["0 <= X < 1 (got nan)"]),
    Row("heal", "epochs-0", "heal {random} -k 2 --epochs 0 -o {ws}/h", USER, ["--epochs must be at least 1 (got 0)"]),
    Row(
        "heal", "batch-size-0", "heal {random} -k 2 --batch-size 0 -o {ws}/h", USER, ["--batch-size must be at least 1"]
    ),
    Row("heal", "learning-rate-0", "heal {random} -k 2 --learning-rate 0 -o {ws}/h", USER, [LR + "not 0"]),
    Row("heal", "learning-rate-inf", "heal {random} -k 2 --learning-rate inf -o {ws}/h", USER, [LR + "not inf"]),
    Row("heal", "learning-rate-nan", "heal {random} -k 2 --learning-rate nan -o {ws}/h", USER, [LR + "not nan"]),
    Row("heal", "learning-rate-typo", "heal {random} -k 2 --learning-rate 2e4 -o {ws}/h", USER, [LR + "not 20000"]),
    Row("heal", "seed-negative", "heal {random} -k 2 --seed -1 -o {ws}/h", USER, ["--seed must be between 0 and"]),
    Row("heal", "seed-too-big", "heal {random} -k 2 --seed 4294967296 -o {ws}/h", USER, ["--seed must be between"]),
    Row(
        "heal", "held-out-1", "heal {random} -k 2 --held-out 1 -o {ws}/h", USER, ["--held-out must be between 0 and 1"]
    ),
    Row("heal", "held-out-nan", "heal {random} -k 2 --held-out nan -o {ws}/h", USER, ["--held-out must be between"]),
    Row("heal", "max-texts-0", "heal {random} -k 2 --max-texts 0 -o {ws}/h", USER, ["--max-texts must be at least 1"]),
    Row(
        "heal",
        "checkpoint-minutes-inf",
        "heal {random} -k 2 --checkpoint-minutes inf -o {ws}/h",
        USER,
        ["--checkpoint-minutes must be 0 or more, not inf"],
    ),
    Row(
        "export",
        "transform-auto-with-layer",
        "export {random} --layer 1 --transform auto --output {ws}/cut",
        USER,
        ["--transform auto is select's choice between none and whiten-", "(--report report.json)"],
    ),
    Row("export", "layer-too-deep", "export {tiny} --layer 9 --output {ws}/cut -q", USER, ["out of range"]),
    Row(
        "export",
        "max-seq-length-0",
        "export {random} --layer 2 --max-seq-length 0 --output {ws}/cut",
        USER,
        ["--max-seq-length must be at least 1"],
    ),
    Row(
        "export",
        "report-missing",
        "export {random} --report {ws}/none.json --output {ws}/cut",
        USER,
        ["report not found"],
    ),
    Row("export", "report-other-model", "export {random} --report {report} --output {ws}/cut", USER, ["is for model"]),
    Row(
        "export",
        "output-exists",
        "export {random} --layer 2 --output {foreign}",
        USER,
        ["holds no earlier layerpick export"],
    ),
    Row(
        "export",
        "output-unwritable",
        "export {random} --layer 2 --output " + RO + "/cut",
        USER,
        [f"cannot write --output {RO}/cut"],
    ),
    Row(
        "export",
        "output-is-the-source",
        "export {random} --layer 2 --output {random} --overwrite",
        USER,
        ["--output {random} is the model being exported", "cannot replace its own source"],
    ),
    Row(
        "export",
        "output-inside-the-source",
        "export {random} --layer 2 --output {random}/cut",
        USER,
        ["is inside the model being exported"],
    ),
    Row(
        "export",
        "output-contains-the-source",
        "export {random} --layer 2 --output {random}/.. --overwrite",
        USER,
        ["contains the model being exported"],
    ),
    *model_fault_rows("validate", VALIDATE),
    Row("validate", "no-tasks", "validate {random}", USAGE, ["give at least one task"]),
    Row("validate", "task-folder-missing", "validate {random} --tasks {ws}/none", USER, ["none"]),
    Row(
        "validate",
        "single-label",
        "validate {random} --tasks {single}",
        USER,
        ["a classifier needs at least two labels"],
    ),
    Row("validate", "layers-word", "validate {random} --tasks {sts} --layers first", USER, ["--layers must be all"]),
    Row(
        "validate", "layers-odd-numeral", "validate {random} --tasks {sts} --layers \u0663", USER, ["--layers must be"]
    ),
    Row(
        "validate",
        "batch-size-0",
        "validate {random} --tasks {sts} --batch-size 0",
        USER,
        ["--batch-size must be at least 1"],
    ),
    Row(
        "validate",
        "output-unwritable",
        "validate {random} --tasks {sts} --output " + RO + "/v",
        USER,
        [f"cannot write --output {RO}/v"],
    ),
    Row(
        "validate",
        "store-unwritable",
        "validate {random} --tasks {sts} --store " + RO + "/store --output {ws}/v",
        USER,
        [f"cannot write --store {RO}/store"],
    ),
    Row(
        "validate",
        "exported-missing",
        "validate --exported {ws}/none --tasks {sts} --output {ws}/v",
        USER,
        ["exported directory not found"],
    ),
    Row(
        "validate",
        "exported-broken",
        "validate --exported {brokenexport} --tasks {sts} --output {ws}/v --store {store}",
        USER,
        ["model.safetensors is not a safetensors file"],
    ),
    Row(
        "validate",
        "sts-scores-all-equal",
        "validate {random} --tasks {flatsts}",
        USER,
        ["{flatsts}/test.jsonl: every row has the score 3", "at least two different scores"],
    ),
    Row(
        "validate",
        "qrels-absent-documents",
        "validate {random} --tasks {nodocs}",
        USER,
        ["{nodocs}/qrels.tsv: none of the 4 documents it judges is in corpus.jsonl"],
    ),
    Row(
        "validate",
        "qrels-absent-queries",
        "validate {random} --tasks {noqueries}",
        USER,
        ["{noqueries}/qrels.tsv: none of the 4 queries it judges is in queries.jsonl"],
    ),
    Row(
        "validate",
        "task-text-not-a-string",
        "validate {random} --tasks {numtextcls}",
        USER,
        ["{numtextcls}/test.jsonl:1: field 'text' is a number, not a string"],
    ),
    # a folder whose path holds a comma is taken whole: the run gets past the tasks to the (broken) weights
    Row(
        "validate",
        "tasks-path-with-comma",
        "validate {random} --tasks {commasts} --layers 1 --output {ws}/v --store {store}",
        USER,
        ["model.safetensors is not a safetensors file"],
    ),
    Row(
        "validate",
        "tasks-path-with-comma-listed",
        "validate {random} --tasks {sts},{commasts} --layers 1 --output {ws}/v --store {store}",
        USER,
        ["model.safetensors is not a safetensors file"],
    ),
    Row(
        "validate",
        "tasks-path-with-comma-repeated",
        "validate {random} --tasks {commasts} --tasks {sts} --layers 1 --output {ws}/v --store {store}",
        USER,
        ["model.safetensors is not a safetensors file"],
    ),
    *model_fault_rows("run", RUN),
    Row("run", "tolerance-2", "run {random} --tolerance 2 --output {ws}/r", USER, ["--tolerance must be in [0, 1)"]),
    Row("run", "single-label", "run {random} --tasks {single} --output {ws}/r", USER, ["at least two labels"]),
    Row("run", "layers-word", "run {random} --tasks {sts} --layers first --output {ws}/r", USER, ["--layers must be"]),
    Row("run", "bench-batch-sizes", "run {random} --bench-batch-sizes 0 --output {ws}/r", USAGE, ["batch sizes"]),
    Row("run", "heal-layers-9", "run {random} --heal-layers 1,9 --output {ws}/r", USER, ["range for --heal-layers"]),
    Row("run", "heal-layers-word", "run {random} --heal-layers two --output {ws}/r", USER, ["--heal-layers must be"]),
    Row(
        "run",
        "heal-max-loss-1",
        "run {random} --heal-layers 2 --heal-max-loss 1 --output {ws}/r",
        USER,
        ["--heal-max-loss"],
    ),
    # --heal-layers is auto by default: the heal's other options tune it, and are checked before any stage
    Row("run", "heal-max-loss-2-auto", "run {random} --heal-max-loss 2 --output {ws}/r", USER, ["--heal-max-loss"]),
    Row("run", "heal-blocks-list-auto", "run {random} --heal-blocks 1,2 --output {ws}/r", USER, ["--heal-blocks"]),
    Row("run", "heal-minutes-zero", "run {random} --heal-minutes 0 --output {ws}/r", USER, ["--heal-minutes"]),
    Row("run", "format-static", "run {random} --format static --output {ws}/r", USER, ["not --format static"]),
    Row("run", "quantize-alone", "run {random} --quantize int8 --output {ws}/r", USER, ["--format onnx"]),
    Row(
        "run",
        "heal-blocks-list",
        "run {random} --heal-layers 2,3 --heal-blocks 1,4 --output {ws}/r",
        USER,
        ["--heal-blocks 1,4: a sweep takes spread or first"],
    ),
    Row(
        "run", "heal-epochs-0", "run {random} --heal-layers 1 --heal-epochs 0 --output {ws}/r", USER, ["--heal-epochs"]
    ),
    Row(
        "run",
        "heal-with-validated-choice",
        "run {random} --tasks {sts} --heal-layers 2 --max-loss 0.01 --output {ws}/r",
        USER,
        ["drop --choose validated / --max-loss"],
    ),
    Row(
        "run",
        "bench-texts-0",
        "run {random} --bench-texts 0 --output {ws}/r",
        USER,
        ["--bench-texts and --bench-repeats must be at least 1"],
    ),
    Row("run", "output-unwritable", "run {random} --output " + RO + "/r", USER, [f"cannot write --output {RO}/r"]),
    Row("run", "output-foreign", "run {random} --output {foreign}", USER, ["holds no earlier layerpick run"]),
    Row("run", "output-is-a-file", "run {random} --output {file}", USER, ["exists and is not a directory"]),
    Row(
        "run",
        "sts-scores-all-equal",
        "run {random} --tasks {flatsts} --output {ws}/r",
        USER,
        ["{flatsts}/test.jsonl: every row has the score 3"],
    ),
    Row(
        "run",
        "tasks-path-with-comma",
        "run {random} --tasks {commasts} --output {ws}/r -q",
        USER,
        ["model.safetensors is not a safetensors file"],
    ),
    Row("bench", "not-an-export", "bench {ws}/none", USER, ["not a sentence-transformers directory"]),
    Row("bench", "batch-sizes-0", "bench {export} --batch-sizes 0", USAGE, ["batch sizes must be positive"]),
    Row(
        "bench", "batch-sizes-odd-numeral", "bench {export} --batch-sizes 1,\u00b2", USAGE, ["comma-separated integers"]
    ),
    Row("bench", "texts-0", "bench {export} --texts 0", USER, ["--texts and --repeats must be at least 1"]),
    Row("bench", "threads-0", "bench {export} --threads 0", USAGE, ["--threads"]),
    Row("bench", "no-cuda", "bench {export} --device cuda", USER, ["CUDA is not available here"]),
    Row(
        "bench",
        "broken-export",
        "bench {brokenexport} --texts 4 --repeats 1 --no-memory",
        USER,
        ["model.safetensors is not a safetensors file"],
    ),
    Row(
        "bench",
        "static-onnx-backend",
        "bench {staticexport} --backend onnx --texts 4 --repeats 1 --no-memory",
        USER,
        ["is a static export", "bench it with --backend torch"],
    ),
    Row(
        "bench",
        "layers-output-unwritable",
        "bench {export} --layers 1 --output " + RO + "/b",
        USER,
        [f"cannot write --output {RO}/b"],
    ),
    Row(
        "bench",
        "layers-output-is-a-file",
        "bench {export} --layers 1 --output {file}",
        USER,
        ["cannot write --output {file}: it exists and is not a directory"],
    ),
    Row(
        "bench",
        "layers-output-under-a-file",
        "bench {export} --layers 1 --output {file}/b",
        USER,
        ["is a file, not a directory"],
    ),
    *output_fault_rows(),
    Row(
        "bench", "output-without-layers", "bench {export} --output {ws}/b", USAGE, ["--output", "applies with --layers"]
    ),
    Row("serve", "not-an-export", "serve {ws}/none --port 0", USER, ["not a sentence-transformers directory"]),
    Row(
        "serve", "broken-export", "serve {brokenexport} --port 0", USER, ["model.safetensors is not a safetensors file"]
    ),
    Row("serve", "port-out-of-range", "serve {export} --port 70000", USER, ["--port must be between 0 and 65535"]),
    Row("serve", "port-busy", "serve {brokenexport} --port {busyport}", USER, ["cannot listen on 127.0.0.1:"]),
    Row("serve", "max-inputs-0", "serve {export} --max-inputs 0", USER, ["--max-inputs must be at least 1"]),
    Row("serve", "drain-timeout-0", "serve {export} --drain-timeout 0", USER, ["--drain-timeout must be above 0"]),
    Row("serve", "no-cuda", "serve {export} --device cuda --port 0", USER, ["CUDA is not available here"]),
    Row("compare", "report-missing", "compare {ws}/none.json --output {ws}/c", USER, ["none.json"]),
    Row(
        "compare",
        "output-unwritable",
        "compare {report} --output " + RO + "/c",
        USER,
        [f"cannot write --output {RO}/c"],
    ),
    Row("compare", "output-not-empty", "compare {report} --output {foreign}", USER, ["not empty"]),
    Row(
        "compare",
        "validation-without-scores",
        "compare {unscored} --output {ws}/c",
        USER,
        ["no layer has a mean task score (failed: flat)"],
    ),
    Row(
        "compare",
        "validation-without-scores-beside-a-report",
        "compare {report} {unscored} --output {ws}/c",
        USER,
        ["{unscored}: no layer has a mean task score"],
    ),
    Row("usage", "unknown-command", "frobnicate", USAGE, ["No such command"]),
    Row("usage", "unknown-option", "collect --no-such-option", USAGE, ["No such option"]),
    # the transform faults: select, validate, export and run check them before the model's weights are read
    *option_fault_rows("select", SELECT, TRANSFORM_FAULTS),
    *option_fault_rows("validate", VALIDATE, TRANSFORM_FAULTS),
    *option_fault_rows("export", EXPORT, TRANSFORM_FAULTS, skip=("transform-with-raw",)),  # no --representation
    Row(
        "export",
        "transform-several",
        "export {random} --layer 2 --output {ws}/cut --transform none,center",
        USER,
        ["--transform takes one transform for an export"],
    ),
    *option_fault_rows("run", RUN, TRANSFORM_FAULTS),
    # --field: every command that reads texts takes it for all of them; a field no JSONL source is read with is refused
    *option_fault_rows("select", SELECT, FIELD_FAULTS + CALIBRATION_FIELD_FAULTS),
    *option_fault_rows("run", RUN, FIELD_FAULTS + CALIBRATION_FIELD_FAULTS),
    *option_fault_rows("collect", COLLECT, CALIBRATION_FIELD_FAULTS),
    *option_fault_rows("export", EXPORT, FIELD_FAULTS + (FIELD_WITHOUT_TEXTS,)),
    *option_fault_rows("validate", VALIDATE, FIELD_FAULTS + (FIELD_WITHOUT_TEXTS,)),
    *option_fault_rows("heal", HEAL, field_faults("--fit-texts {src}")),
    # export --format static
    Row(
        "export",
        "format-unknown",
        "export {random} --layer 2 --output {ws}/cut --format tflite",
        USER,
        ["unknown format 'tflite'; choose one of sentence-transformers, onnx, static"],
    ),
    Row("export", "static-dims-0", STATIC + " --static-dims 0", USER, ["--static-dims must be at least 1 (got 0)"]),
    Row(
        "export",
        "static-dims-above-hidden-size",
        STATIC + " --static-dims 64",
        USER,
        ["--static-dims 64 is above the model's hidden size (32)"],
    ),
    Row(
        "export",
        "static-dims-without-static",
        "export {random} --layer 2 --output {ws}/cut --static-dims 16",
        USER,
        ["--static-dims applies to the static table: add --format static"],
    ),
    Row(
        "export",
        "static-with-prompt",
        STATIC + " --prompt eol",
        USER,
        ["--format static cannot carry the prompt template eol", "--prompt none"],
    ),
    Row(
        "export",
        "static-with-transform",
        STATIC + " --transform center",
        USER,
        ["--format static cannot carry the transform center"],
    ),
    Row(
        "export",
        "static-with-max-seq-length",
        STATIC + " --max-seq-length 64",
        USER,
        ["--max-seq-length does not apply to --format static"],
    ),
    Row("export", "static-with-quantize", STATIC + " --quantize int8", USER, ["--quantize applies to the ONNX graph"]),
    Row(
        "export",
        "static-byte-tokenizer",
        "export {byt5} --layer 2 --output {ws}/cut --format static -q",
        USER,
        ["model2vec cannot distil", "(ByT5Tokenizer) has no fast (Rust) tokenizer"],
    ),
]

MPS = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
SKIPS = {
    "no-cuda": (not NO_CUDA, "this machine has CUDA"),
    "no-mps": (MPS, "this machine has MPS"),
    "output-unwritable": (not Path("/sys").is_dir(), "no /sys here"),
    "store-unwritable": (not Path("/sys").is_dir(), "no /sys here"),
}


@pytest.fixture(scope="module")
def fixtures(tiny_dirs, tmp_path_factory) -> dict[str, str]:
    """Everything the rows name, built once, outside the working folder."""
    return build_fixtures(Path(tiny_dirs("llama")), tmp_path_factory.mktemp("faults"))


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


@pytest.mark.parametrize("row", [pytest.param(row, id=row.id) for row in ROWS])
def test_fault(row: Row, fixtures, workspace, busy_port, capsys):
    skip, why = SKIPS.get(row.case, (False, ""))
    if skip:
        pytest.skip(why)
    before = tree(workspace)
    values = {**fixtures, "ws": str(workspace), "busyport": str(busy_port)}
    got, out, err = run_cli(row.line, values, capsys)
    assert got == row.code, f"{row.line}\nstdout: {out}\nstderr: {err}"
    if row.code == USER:
        lines = [text for text in err.strip().splitlines() if text.strip()]
        assert len(lines) == 1 and lines[0].startswith("layerpick: error: "), err
    for word in row.words:
        assert word.format(**values) in err, f"{word!r} not in {err!r}"
    assert "Traceback" not in err
    assert not foreign_options(row.command, err), f"the message names options {row.command} lacks: {err}"
    assert tree(workspace) == before, "something was written"
    for name in ("foreign", "report", "file"):
        assert Path(fixtures[name]).exists()
    assert tree(Path(fixtures["foreign"])) == ["keep.txt"]


def foreign_options(command: str, message: str) -> set[str]:
    """The options `message` names that `layerpick command` does not have (a message must name options the
    user can give to the command they ran; `layerpick OTHER --option` names another command's, and is skipped)."""
    commands = cli_commands()
    if command not in commands:
        return set()
    own = {name for parameter in commands[command].params for name in (*parameter.opts, *parameter.secondary_opts)}
    message = re.sub(r"layerpick [a-z]+ [^;:()]*", "", message)  # a command line of another command
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", message)) - own


def cli_commands() -> dict:
    from typer.main import get_command

    return get_command(cli_app.app).commands


def test_the_matrix_covers_every_command():
    commands = set(cli_commands()) - {"models"}  # `models` takes no input
    assert commands <= {row.command for row in ROWS}, commands - {row.command for row in ROWS}
    ids = [row.id for row in ROWS]
    assert len(ids) == len(set(ids)), sorted({name for name in ids if ids.count(name) > 1})


def test_the_model_loading_commands_are_every_command_that_loads_a_model():
    """faults.MODEL_LOADING_COMMANDS is the CLI's commands that take a MODEL and the load options."""
    from layerpick.cli import options

    loading = {
        name
        for name, command in cli_commands().items()
        if {"model", *options.LOAD_OPTIONS} <= {parameter.name for parameter in command.params}
    }
    assert loading == set(MODEL_LOADING_COMMANDS)


def test_every_model_loading_command_carries_every_model_and_device_fault():
    missing = missing_pairs(ROWS, MODEL_LOADING_COMMANDS, MODEL_FAULTS + DEVICE_FAULTS)
    assert not missing, f"(command, fault) pairs the matrix lacks: {missing}"


def test_every_command_that_reads_texts_takes_one_field_option():
    """A command that reads JSONL texts (--calibration, --fit-texts) reads every one of them with --field."""
    for name, command in cli_commands().items():
        names = {parameter.name for parameter in command.params}
        assert not ({"calibration", "fit_texts"} & names) or "field" in names, name


def test_every_transform_command_carries_every_transform_fault():
    missing = missing_pairs(ROWS, TRANSFORM_COMMANDS, TRANSFORM_FAULTS)
    assert missing == [("export", "transform-with-raw")], missing  # export has no --representation


# ---------------------------------------------------------------------------------- exit codes beyond the table


def _collect_raising(monkeypatch, error: BaseException | None, *, swallow: bool = False):
    """Make `layerpick collect`'s job raise `error` (a KeyboardInterrupt arrives as a real SIGINT, through the
    entry point's handler), or, with `swallow`, act as if a library had caught Ctrl-C and carried on."""
    import signal

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

    monkeypatch.setattr("layerpick.core.collect_job.collect_layers", job)


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize(
    "error, code", [(RuntimeError("a bug"), 3), (OSError(30, "Read-only file system"), 1), (KeyboardInterrupt(), 130)]
)
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

    script = (
        "import sys; from layerpick.cli.app import run; code = run(['--version']); "
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules; sys.exit(code)"
    )
    done = subprocess.run([sys.executable, "-W", "default", "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.startswith("layerpick ")
    entry = Path(sys.executable).parent / "layerpick"
    if entry.exists():
        script_run = subprocess.run([str(entry), "--version"], capture_output=True, text=True, timeout=60)
        assert script_run.returncode == 0 and script_run.stderr == "" and script_run.stdout == done.stdout


if __name__ == "__main__":  # python -m tests.cli.test_fault_matrix
    print(len(ROWS), "cases")
    sys.exit(0)

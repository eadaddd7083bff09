"""Production faults whose shape the fault matrix's rows (one error line, exit 1, nothing written) cannot
express, through the real command line: a warning on a run that goes on, an input named as a shell names it
(a pipe), and rows labelled with the batch size that was measured. No timing is asserted."""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path

import pytest

from layerpick.cli import app as cli_app
from tests.testkit.cli import invoke
from tests.testkit.tasks import retrieval_folder


@pytest.fixture(scope="module")
def tiny(tiny_dirs) -> str:
    return str(tiny_dirs("llama"))


@pytest.fixture(scope="module")
def export(tiny, tmp_path_factory) -> str:
    from layerpick.exporting.config import ExportConfig
    from layerpick.exporting.job import export_model

    folder = tmp_path_factory.mktemp("export") / "cut"
    export_model(tiny, 2, folder, ExportConfig(progress=False))
    return str(folder)


def run_cli(args: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli_app.run([str(arg) for arg in args])
    out, err = capsys.readouterr()
    return code, out, err


def pipe(lines: list[str]) -> str:
    """A pipe named as `<(cmd)` names it (/dev/fd/N), fed from a thread; read once, like the shell's."""
    read, write = os.pipe()

    def feed():
        with os.fdopen(write, "w", encoding="utf-8") as handle:
            handle.write("".join(line + "\n" for line in lines))

    threading.Thread(target=feed, daemon=True).start()
    return f"/dev/fd/{read}"


@pytest.mark.slow
def test_qrels_naming_some_absent_ids_warn_on_stderr_and_the_run_goes_on(tiny, tmp_path):
    folder = retrieval_folder(tmp_path, "partial")
    judged = [(f"q{i}", f"d{(i * 3) % 30}") for i in range(8)] + [("who", "d1"), ("q2", "gone")]
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in judged))
    done = invoke(
        "validate",
        tiny,
        "--tasks",
        folder,
        "--layers",
        "1",
        "--output",
        tmp_path / "v",
        "--store",
        tmp_path / "store",
        "-q",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if "judgements" in line]
    assert warned == [
        f"{folder / 'qrels.tsv'}: 2 of 10 judgements name ids not in the folder (1 query not in "
        "queries.jsonl, not evaluated; 1 document not in corpus.jsonl, never retrieved)"
    ]
    assert "error" not in done.stderr
    scores = json.loads((tmp_path / "v" / "validation.json").read_text())["tasks"]["partial"]["main_score_by_layer"]
    assert isinstance(scores[1], float)


def test_calibration_from_a_pipe_is_read_once_and_used_for_texts_and_fit(tiny, tmp_path, capsys):
    """`select --calibration <(cmd)` was refused as 'not found'; the fit set is drawn from the same stream."""
    texts = [f"a piped calibration text number {i} about topic {i % 5}" for i in range(24)]
    name = pipe(texts)
    code, _, err = run_cli(
        [
            "select",
            tiny,
            "--calibration",
            name,
            "--transform",
            "whiten-4",
            "--metrics",
            "dime",
            "--output",
            tmp_path / "s",
            "-q",
        ],
        capsys,
    )
    os.close(int(name.rsplit("/", 1)[1]))
    assert code == 0, err
    report = json.loads((tmp_path / "s" / "report.json").read_text())
    assert report["calibration"]["count"] == 24 and report["calibration"]["source"].startswith("/dev/fd/")
    assert report["transform"]["fit"]["count"] == 24
    assert report["transform"]["fit"]["sha256"] == report["calibration"]["sha256"]


def test_run_hashes_and_selects_from_one_read_of_a_pipe(tiny, tmp_path, capsys):
    """`run` hashes the calibration texts for its stage keys, then the select stage loads them again."""
    texts = [f"a piped run text number {i} about topic {i % 5}" for i in range(16)]
    name = pipe(texts)
    code, _, err = run_cli(
        [
            "run",
            tiny,
            "--calibration",
            name,
            "--limit",
            "12",
            "--metrics",
            "dime",
            "--transform",
            "none",
            "--no-bench",
            "--output",
            tmp_path / "r",
            "-q",
        ],
        capsys,
    )
    os.close(int(name.rsplit("/", 1)[1]))
    assert code == 0, err
    report = json.loads(next(Path(tmp_path / "r").rglob("report.json")).read_text())
    assert report["calibration"]["count"] == 12 and report["calibration"]["source"] == name


def test_bench_rows_are_labelled_with_the_batch_size_timed(export, capsys, caplog):
    """`bench --texts 4 --batch-sizes 1,8,16`: the batches held at most 4 texts, so the rows are 1 and 4."""
    with caplog.at_level(logging.WARNING, logger="layerpick.benchmark.run"):
        code, out, err = run_cli(
            [
                "bench",
                export,
                "--texts",
                "4",
                "--batch-sizes",
                "1,8,16",
                "--repeats",
                "1",
                "--no-memory",
                "--json",
                "-q",
            ],
            capsys,
        )
    assert code == 0, err
    data = json.loads(out)
    assert [row["batch_size"] for row in data["rows"]] == [1, 4]
    notice = "batch sizes 8 and 16 capped at the 4 texts timed"
    logged = [record.getMessage() for record in caplog.records if record.name == "layerpick.benchmark.run"]
    assert notice in data["notes"] and logged == [notice]


@pytest.mark.slow
def test_run_bench_texts_cap_the_batch(tiny, tmp_path, capsys):
    """`run --bench-texts 4` with the default batch sizes 1,32: bench.json and the summary say batch 4."""
    code, out, err = run_cli(
        [
            "run",
            tiny,
            "--bench-texts",
            "4",
            "--bench-repeats",
            "1",
            "--no-bench-memory",
            "--limit",
            "12",
            "--metrics",
            "dime",
            "--transform",
            "none",
            "--output",
            tmp_path / "r",
            "-q",
        ],
        capsys,
    )
    assert code == 0, err
    bench = json.loads(next(Path(tmp_path / "r").rglob("bench.json")).read_text())
    assert [row["batch_size"] for row in bench["rows"]] == [1, 4]
    assert "batch 4: throughput" in out and "batch 32" not in out


@pytest.mark.parametrize("target", ["itself", "nowhere"])
def test_an_output_through_a_broken_symbolic_link_is_refused_before_any_work(target, tmp_path):
    """`Path.exists` is False for a link that loops and for one that points nowhere: both are named as what they
    are, for the link itself and for a path under it (issue 33, cause 9)."""
    from layerpick._util.output_errors import OutputLocationError
    from layerpick._util.outputs import check_output_location, check_replaceable

    link = tmp_path / "link"
    link.symlink_to("link" if target == "itself" else tmp_path / "gone" / "deeper")
    words = "loops \\(too many levels" if target == "itself" else "points nowhere"
    for path, is_file in ((link, False), (link / "x", False), (link / "x.safetensors", True)):
        with pytest.raises(OutputLocationError, match=words):
            check_output_location(path, "--output", is_file=is_file)
    with pytest.raises(OutputLocationError, match=words):
        check_replaceable(link, overwrite=True, owned=lambda path: True, what="export")

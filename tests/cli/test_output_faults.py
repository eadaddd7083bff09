"""Production faults of what commands write: two writers of one folder, a full disk, SIGTERM and SIGHUP, the
moment of commit, staging left by a killed process, an export onto its own source.

Each table row is a named case. The rows about processes run the real entry point in child processes
(`tests.testkit.launch` pauses one at an exact function, so nothing depends on timing); the full-disk rows write
onto a real, small tmpfs mounted for the test (root only: mounting needs it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from layerpick._util import interrupt
from layerpick.cli import app as cli_app
from tests.testkit.cli import invoke
from tests.testkit.launch import launch
from tests.testkit.tasks import sts_folder

pytestmark = pytest.mark.slow

QUIET = {"TQDM_DISABLE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1", "LAYERPICK_QUIET": "1"}


@pytest.fixture(autouse=True)
def fresh_interrupt_state():
    interrupt.reset()
    yield
    interrupt.reset()


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli_app.run([str(word) for word in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("layerpick: error: "), err
    return lines[0]


def leftovers(folder: Path) -> list[str]:
    """Staging folders, temporary files and lock files anywhere under `folder`."""
    return sorted(
        str(p.relative_to(folder))
        for p in folder.rglob(".*")
        if any(word in p.name for word in (".partial-", ".tmp-", ".lock"))
    )


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


# ------------------------------------------------------------------------------------------------ signals

SIGNALS = [("sigterm", signal.SIGTERM, 143), ("sighup", signal.SIGHUP, 129), ("sigint", signal.SIGINT, 130)]


@pytest.mark.parametrize("name, signum, code", SIGNALS, ids=[row[0] for row in SIGNALS])
def test_a_signal_during_an_export_cleans_up_like_ctrl_c(name, signum, code, tiny_dirs, tmp_path):
    out = tmp_path / "cut"
    child = launch(
        tmp_path,
        "layerpick.exporting.parity:check_parity",
        "before",
        "export",
        tiny_dirs("llama"),
        "--layer",
        "2",
        "--output",
        out,
        "-q",
        env=QUIET,
    )
    staged = [p.name for p in tmp_path.iterdir() if ".partial-" in p.name]
    assert staged, "the export should be staging when the signal arrives"
    child.process.send_signal(signum)
    got, _, err = child.finish()
    assert got == code, err
    assert err.strip().splitlines()[-1] == "layerpick: aborted", err
    assert not out.exists() and leftovers(tmp_path) == []


def test_a_signal_once_the_export_is_in_place_is_success(tiny_dirs, tmp_path):
    """The swap has happened; the signal arrives while the old export and the staging are removed."""
    out = tmp_path / "cut"
    child = launch(
        tmp_path,
        "layerpick._util.atomic:swap_into_place",
        "after",
        "export",
        tiny_dirs("llama"),
        "--layer",
        "2",
        "--output",
        out,
        "-q",
        env=QUIET,
    )
    child.process.send_signal(signal.SIGINT)
    got, outtext, err = child.finish()
    assert got == 0, err
    assert "aborted" not in err and "exported" in outtext
    assert json.loads((out / "layerpick.json").read_text())["layer"] == 2
    assert leftovers(tmp_path) == []


def test_staging_left_by_a_killed_export_is_swept_by_the_next(tiny_dirs, tmp_path, capsys):
    out = tmp_path / "cut"
    child = launch(
        tmp_path,
        "layerpick.exporting.parity:check_parity",
        "before",
        "export",
        tiny_dirs("llama"),
        "--layer",
        "2",
        "--output",
        out,
        "-q",
        env=QUIET,
    )
    child.process.kill()  # SIGKILL: no handler runs, the staging folder stays
    child.finish()
    assert [p for p in tmp_path.iterdir() if ".partial-" in p.name]
    code, _, err = run_cli(["export", tiny_dirs("llama"), "--layer", "2", "--output", out, "-q"], capsys)
    assert code == 0, err
    assert leftovers(tmp_path) == [] and (out / "layerpick.json").is_file()


def test_staging_of_a_live_process_is_kept(tiny_dirs, tmp_path, capsys):
    live = tmp_path / f".cut.partial-{os.getpid()}-abcd"  # this process is alive: someone's work in progress
    dead = tmp_path / f".cut.partial-{dead_pid()}-efgh"
    dead_file = tmp_path / f".cut.tmp-{dead_pid()}-ijkl.tmp"
    for folder in (live, dead):
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(b"half")
    dead_file.write_bytes(b"half")
    code, _, err = run_cli(["export", tiny_dirs("llama"), "--layer", "2", "--output", tmp_path / "cut", "-q"], capsys)
    assert code == 0, err
    assert live.is_dir() and not dead.exists() and not dead_file.exists()


# ------------------------------------------------------------------------------------- two writers, one folder

HOLDER = """
import sys
from layerpick._util.locks import output_lock
with output_lock(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def holder():
    """Another process holding the lock of a path until the test ends."""
    children = []

    def hold(path: Path) -> int:
        child = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert child.stdout.readline().strip() == "held"
        children.append(child)
        return child.pid

    yield hold
    for child in children:
        child.communicate("")


LOCKED = [  # command line with {model} and {out}; which path is held
    ("export", ["export", "{model}", "--layer", "2", "--output", "{out}", "-q"]),
    ("run", ["run", "{model}", "--limit", "12", "--metrics", "dime", "--no-bench", "--output", "{out}", "-q"]),
    ("select", ["select", "{model}", "--limit", "12", "--metrics", "dime", "--output", "{out}", "-q"]),
    (
        "validate-output",
        [
            "validate",
            "{model}",
            "--tasks",
            "{sts}",
            "--layers",
            "1",
            "--output",
            "{out}",
            "--store",
            "{ws}/store",
            "-q",
        ],
    ),
]


@pytest.mark.parametrize("case, line", LOCKED, ids=[row[0] for row in LOCKED])
def test_an_output_being_written_by_another_process_is_refused(case, line, holder, tiny_dirs, tmp_path, capsys):
    """Refused before the model is read (the model's weights are random bytes: reading them would fail)."""
    broken = tmp_path / "random"
    broken.mkdir()
    for item in Path(tiny_dirs("llama")).iterdir():
        (broken / item.name).write_bytes(os.urandom(512) if item.suffix == ".safetensors" else item.read_bytes())
    ws = tmp_path / "ws"
    ws.mkdir()
    out = ws / "out"
    pid = holder(out)
    values = {"model": str(broken), "out": str(out), "sts": str(sts_folder(tmp_path)), "ws": str(ws)}
    code, _, err = run_cli([word.format(**values) for word in line], capsys)
    assert code == 1, err
    assert f"{out} is being written by process {pid}; wait for it or choose another --" in one_error_line(err)
    assert sorted(p.name for p in ws.iterdir()) == [".out.lock"]  # the holder's lock only: nothing written


def test_a_store_being_written_by_another_process_is_refused(holder, tiny_dirs, tmp_path, capsys):
    """A representation store is locked per model and settings (its key holds the weights' fingerprint, known
    once the model is loaded): a validation of another model may share the store folder, one of the same may not."""
    sts, store = sts_folder(tmp_path), tmp_path / "store"
    line = ["validate", tiny_dirs("llama"), "--tasks", sts, "--layers", "1", "--store", store, "-q"]
    assert run_cli([*line, "--output", tmp_path / "v1"], capsys)[0] == 0
    (keyed,) = [folder for folder in store.iterdir() if folder.is_dir()]
    pid = holder(keyed)
    interrupt.reset()
    code, _, err = run_cli([*line, "--output", tmp_path / "v2"], capsys)
    assert code == 1, err
    assert (
        f"--store {keyed} is being written by process {pid}; wait for it or choose another --store"
        in one_error_line(err)
    )
    assert not (tmp_path / "v2").exists()
    other = ["validate", tiny_dirs("bert"), "--tasks", sts, "--layers", "1", "--store", store, "-q"]
    assert run_cli([*other, "--output", tmp_path / "v3"], capsys)[0] == 0  # another key in the same store folder


def test_a_lock_left_by_a_dead_process_is_taken_over(tiny_dirs, tmp_path, capsys):
    out = tmp_path / "cut"
    (tmp_path / ".cut.lock").write_text(f"{dead_pid()}\n")  # its process died without unlocking
    code, _, err = run_cli(["export", tiny_dirs("llama"), "--layer", "2", "--output", out, "-q"], capsys)
    assert code == 0, err
    assert (out / "layerpick.json").is_file() and leftovers(tmp_path) == []


def test_two_runs_on_one_folder_never_mix(tiny_dirs, tmp_path):
    """Run A holds the folder (paused in its export); run B with another rule is refused; A finishes whole, and
    A's command run again reuses A's stages, not B's."""
    out = tmp_path / "run"
    model = str(tiny_dirs("llama"))
    base = ["run", model, "--limit", "12", "--metrics", "dime,lidar", "--transform", "none", "--no-bench", "-q"]
    base += ["--output", str(out)]
    a = launch(tmp_path, "layerpick.exporting.parity:check_parity", "before", *base, "--rule", "min-dime", env=QUIET)
    b = invoke(*base, "--rule", "max-lidar", env=QUIET)  # in this test's process: another process than A's
    assert b.returncode == 1, b.stderr
    assert f"--output {out} is being written by process {a.process.pid}" in one_error_line(b.stderr)
    a.release()
    code, _, err = a.finish()
    assert code == 0, err
    report = json.loads((out / "select" / "report.json").read_text())
    assert report["rule"].startswith("min-dime")
    again = invoke(*base, "--rule", "min-dime", "--json", env=QUIET)
    assert again.returncode == 0, again.stderr
    stages = json.loads(again.stdout)["stages"]
    assert all(stage["reused"] for stage in stages.values()), stages
    assert leftovers(tmp_path) == []


# ------------------------------------------------------------------------------------------------ own source


def test_an_export_of_an_export_benches_against_the_full_model(tiny_dirs, tmp_path, capsys):
    from layerpick.benchmark.baseline import baseline_source
    from layerpick.exporting.metadata import read_metadata

    first, second = tmp_path / "k3", tmp_path / "k2"
    for source, target, layer in ((tiny_dirs("llama"), first, 3), (first, second, 2)):
        code, _, err = run_cli(["export", source, "--layer", layer, "--output", target, "-q"], capsys)
        assert code == 0, err
    metadata = json.loads((second / "layerpick.json").read_text())
    assert metadata["source"]["path"] == str(first.resolve())
    assert baseline_source(read_metadata(second)) == str(Path(tiny_dirs("llama")).resolve())


def test_an_export_onto_its_own_source_is_refused(tiny_dirs, tmp_path, capsys):
    """The export being exported again into itself with --overwrite: refused before loading, left intact."""
    export = tmp_path / "k3"
    assert run_cli(["export", tiny_dirs("llama"), "--layer", "3", "--output", export, "-q"], capsys)[0] == 0
    before = sorted((p.name, p.stat().st_mtime_ns) for p in export.iterdir())
    code, _, err = run_cli(["export", export, "--layer", "2", "--output", export, "--overwrite", "-q"], capsys)
    assert code == 1 and "cannot replace its own source" in one_error_line(err)
    assert sorted((p.name, p.stat().st_mtime_ns) for p in export.iterdir()) == before


# ------------------------------------------------------------------------------------------------ a full disk


@pytest.fixture
def small_disk(tmp_path):
    """A tmpfs of a given size (remountable to another), unmounted afterwards; root only."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    mounted = []

    def mount(size: str, name: str = "disk") -> Path:
        point = tmp_path / name
        point.mkdir(exist_ok=True)
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)], capture_output=True, text=True
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(point)
        return point

    def resize(point: Path, size: str) -> None:
        subprocess.run(["mount", "-o", f"remount,size={size}", str(point)], check=True)

    mount.resize = resize
    yield mount
    for point in mounted:
        subprocess.run(["umount", "-l", str(point)], check=False)


FULL_DISK = [  # case, tmpfs size, command line ({model}, {disk}, {sts}); whether the export's space check is off
    ("export-checked-before-writing", "1m", ["export", "{model}", "--layer", "2", "--output", "{disk}/cut"], False),
    ("export-fills-mid-write", "160k", ["export", "{model}", "--layer", "2", "--output", "{disk}/cut"], True),
    (
        "onnx-int8-fills-mid-write",
        "700k",
        ["export", "{model}", "--layer", "2", "--output", "{disk}/cut", "--format", "onnx", "--quantize", "int8"],
        True,
    ),
    (
        "select-report",
        "48k",
        ["select", "{model}", "--limit", "12", "--metrics", "dime", "--output", "{disk}/sel"],
        False,
    ),
    ("collect-states", "8k", ["collect", "{model}", "--limit", "12", "--output", "{disk}/states.safetensors"], False),
    (
        "validate-store",
        "16k",
        ["validate", "{model}", "--tasks", "{sts}", "--layers", "1", "--output", "{disk}/v", "--store", "{disk}/store"],
        False,
    ),
    (
        "run-select-stage",
        "48k",
        ["run", "{model}", "--limit", "12", "--metrics", "dime", "--no-bench", "--output", "{disk}/r"],
        False,
    ),
]


@pytest.mark.parametrize("case, size, line, unchecked", FULL_DISK, ids=[row[0] for row in FULL_DISK])
def test_a_full_disk_is_a_user_error_naming_the_path(
    case, size, line, unchecked, small_disk, tiny_dirs, tmp_path, capsys, monkeypatch
):
    if "--format" in line:
        pytest.importorskip("onnxruntime", reason="the ONNX export needs layerpick[onnx]")
    disk = small_disk(size)
    if unchecked:  # the disk fills while writing, past a check that found room (another writer took it)
        from layerpick.exporting import job

        monkeypatch.setattr(job, "check_free", lambda path, needed: None)
    values = {"model": str(tiny_dirs("llama")), "disk": str(disk), "sts": str(sts_folder(tmp_path))}
    argv = [word.format(**values) for word in line]
    code, _, err = run_cli([*argv, "-q"], capsys)
    assert code == 1, err
    message = one_error_line(err)
    assert "no space left on device while writing " in message and "MB needed" in message, message
    assert "Traceback" not in err and ".partial-" not in message
    assert sorted(p.name for p in disk.iterdir()) == [], "something was left on the full disk"


FULL_BEFORE_ANY_WORK = [  # case, tmpfs size, whether it is filled to 100% first, command line, the output named
    ("select-full", "64k", True, ["select", "{model}", "--limit", "12", "--metrics", "dime", "--output", "{out}"]),
    ("export-full", "64k", True, ["export", "{model}", "--layer", "2", "--output", "{out}"]),
    (
        "run-full",
        "64k",
        True,
        ["run", "{model}", "--limit", "12", "--metrics", "dime", "--no-bench", "--output", "{out}"],
    ),
    (
        "validate-output-nearly-full",
        "32k",
        False,
        ["validate", "{model}", "--tasks", "{sts}", "--layers", "1", "--output", "{out}", "--store", "{store}"],
    ),
]


@pytest.mark.parametrize("case, size, fill, line", FULL_BEFORE_ANY_WORK, ids=[row[0] for row in FULL_BEFORE_ANY_WORK])
def test_a_full_disk_names_the_output_and_leaves_nothing(
    case, size, fill, line, small_disk, tiny_dirs, tmp_path, capsys
):
    """On a 100%-full disk (an empty file still fits, one byte does not) select, export and run name their
    output before any work and leave no `.NAME.lock`; validate's results filling the disk midway leave no
    half-written folder (issue 33, cause 5)."""
    disk = small_disk(size)
    if fill:
        with (disk / "fill").open("wb") as handle:
            with pytest.raises(OSError):
                handle.write(b"\0" * (1 << 20))
                handle.flush()
    out = disk / "out"
    values = {"model": tiny_dirs("llama"), "out": out, "sts": sts_folder(tmp_path), "store": tmp_path / "store"}
    code, _, err = run_cli([*(str(word).format(**values) for word in line), "-q"], capsys)
    assert code == 1, err
    assert one_error_line(err).startswith(f"layerpick: error: no space left on device while writing {out}"), err
    assert sorted(p.name for p in disk.iterdir()) == (["fill"] if fill else []), "something was left on the disk"


def test_a_lock_that_cannot_be_written_is_removed_and_names_the_output(tmp_path, monkeypatch):
    """The lock file is created before its process id is written: a full disk then fails the write, and the
    lock file is removed again, the error naming the output (not 'an output')."""
    import errno

    from layerpick._util import locks
    from layerpick._util.disk import DiskFullError

    def full(handle, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(locks.os, "write", full)
    with pytest.raises(DiskFullError, match=f"no space left on device while writing {tmp_path / 'out'}"):
        with locks.output_lock(tmp_path / "out"):
            pass
    assert list(tmp_path.iterdir()) == []


def test_a_run_stopped_by_a_full_disk_resumes(small_disk, tiny_dirs, capsys):
    """The select stage fits, the export does not: exit 1 naming the export; with room, the run resumes."""
    disk = small_disk("1m")
    out = disk / "r"
    argv = ["run", tiny_dirs("llama"), "--limit", "12", "--metrics", "dime", "--no-bench", "--output", out, "-q"]
    code, _, err = run_cli(argv, capsys)
    assert code == 1 and f"no space left on device while writing {out / 'model'}" in one_error_line(err)
    assert set(json.loads((out / "run.json").read_text())["stages"]) == {"select"}
    assert not [p for p in out.rglob("*") if ".partial-" in p.name]
    small_disk.resize(disk, "256m")
    interrupt.reset()
    code, outtext, err = run_cli([*argv, "--json"], capsys)
    assert code == 0, err
    stages = json.loads(outtext)["stages"]
    assert stages["select"]["reused"] and not stages["export"]["reused"]


# ---------------------------------------------------------------------------------------- the moment of commit

FINAL = [  # each command that writes names its last write, so a signal after it no longer fails the command
    ("export", ["export", "{model}", "--layer", "2", "--output", "{ws}/cut"]),
    (
        "select",
        ["select", "{model}", "--limit", "12", "--metrics", "dime", "--transform", "none", "--output", "{ws}/sel"],
    ),
    ("collect", ["collect", "{model}", "--limit", "4", "--output", "{ws}/states.safetensors"]),
    (
        "validate",
        ["validate", "{model}", "--tasks", "{sts}", "--layers", "1", "--output", "{ws}/v", "--store", "{ws}/store"],
    ),
    (
        "run",
        [
            "run",
            "{model}",
            "--limit",
            "12",
            "--metrics",
            "dime",
            "--transform",
            "none",
            "--no-bench",
            "--output",
            "{ws}/r",
        ],
    ),
    ("compare", ["compare", "{ws}/sel/report.json", "{ws}/sel/report.json", "--output", "{ws}/c"]),
]


def test_every_command_that_writes_is_finished_by_its_last_write(tiny_dirs, tmp_path, capsys):
    """After each command, the output it named as final was placed (a wrong name would leave it unfinished,
    and a signal during its printing would fail a command whose output is complete)."""
    values = {"model": str(tiny_dirs("llama")), "ws": str(tmp_path), "sts": str(sts_folder(tmp_path))}
    for case, line in FINAL:
        interrupt.reset()
        quiet = [] if case == "compare" else ["-q"]  # compare draws no bars
        code, _, err = run_cli([*(word.format(**values) for word in line), *quiet], capsys)
        assert code == 0, f"{case}: {err}"
        assert interrupt.finished(), f"{case}: its final output was never placed"


def test_a_comparison_onto_a_full_disk_names_its_output(small_disk, tiny_dirs, tmp_path, capsys):
    select = ["select", tiny_dirs("llama"), "--limit", "12", "--metrics", "dime", "--output", tmp_path / "sel", "-q"]
    assert run_cli(select, capsys)[0] == 0
    disk = small_disk("24k")
    report = tmp_path / "sel" / "report.json"
    code, _, err = run_cli(["compare", report, report, "--output", disk / "c"], capsys)
    assert code == 1, err
    assert f"no space left on device while writing {disk / 'c'} (at least " in one_error_line(err)
    assert list(disk.iterdir()) == []

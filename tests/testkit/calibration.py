"""A small calibration file and quiet collection settings for select runs on tiny models."""

from layerpick.core.collect import CollectConfig

QUIET = CollectConfig(progress=False, batch_size=8)


def calibration_file(tmp_path, n=24):
    path = tmp_path / "calib.txt"
    path.write_text("\n".join(f"sentence number {i} talks about topic {i % 5} and more words" for i in range(n)))
    return str(path)

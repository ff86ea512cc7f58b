"""CAM5-layout data: the generator writes exactly the DeepCAM layout, the loader reads it, IoU as the reference."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from specbench.cli import main
from specbench.data.climate import CHANNELS, CamSplit, generate, mean_iou
from specbench.errors import UsageError

pytestmark = pytest.mark.needs("numpy", "h5py")


@pytest.fixture(scope="module")
def cam(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cam")
    assert generate(root, 10, (48, 72), seed=3) == {"train": 8, "validation": 2}
    return root


def test_layout_is_deepcam(cam: Path) -> None:
    assert sorted(p.name for p in cam.iterdir()) == ["stats.h5", "train", "validation"]
    first = sorted((cam / "train").glob("*.h5"))[0]
    with h5py.File(first, "r") as handle:
        assert handle["climate/data"].shape == (48, 72, CHANNELS) and handle["climate/data"].dtype == np.float32
        assert handle["climate/labels_0"].shape == (48, 72)
        assert set(np.unique(handle["climate/labels_0"])) <= {0, 1, 2}
    with h5py.File(cam / "stats.h5", "r") as handle:
        assert handle["climate/minval"].shape == (CHANNELS,) and handle["climate/maxval"].shape == (CHANNELS,)


def test_loader_normalises_and_both_event_classes_occur(cam: Path) -> None:
    split = CamSplit(cam, "train")
    assert len(split) == 8
    seen: set[int] = set()
    for index in range(len(split)):
        data, labels = split[index]
        assert data.shape == (CHANNELS, 48, 72) and data.dtype == np.float32 and labels.dtype == np.int64
        assert data.min() >= -1e-6 and data.max() <= 1 + 1e-6  # min-max over the whole set
        seen |= set(np.unique(labels).tolist())
    assert seen == {0, 1, 2}


def test_labels_follow_the_fields(cam: Path) -> None:
    data, labels = CamSplit(cam, "train")[0]
    vapour = data[4]
    assert vapour[labels == 2].mean() > vapour[labels == 0].mean() + 0.2  # rivers carry water vapour
    pressure = data[0]
    if (labels == 1).any():
        assert pressure[labels == 1].mean() < pressure[labels == 0].mean() - 0.2  # cyclones are lows


def test_missing_or_wrong_data_is_refused(tmp_path: Path, cam: Path) -> None:
    with pytest.raises(UsageError, match="the CAM5 layout"):
        CamSplit(tmp_path, "train")
    bad = tmp_path / "bad"
    (bad / "train").mkdir(parents=True)
    (bad / "stats.h5").write_bytes((cam / "stats.h5").read_bytes())
    with h5py.File(bad / "train" / "x.h5", "w") as handle:
        handle.create_dataset("climate/data", data=np.zeros((4, 4, 3), dtype=np.float32))
        handle.create_dataset("climate/labels_0", data=np.zeros((4, 4), dtype=np.int32))
    with pytest.raises(UsageError, match=r"expected climate/data \(H, W, 16\)"):
        CamSplit(bad, "train")[0]


def test_mean_iou_as_the_reference() -> None:
    labels = np.array([[[0, 0, 1, 1]], [[0, 0, 0, 0]]])
    perfect = mean_iou(labels.copy(), labels)
    assert perfect == 1.0
    predicted = np.array([[[0, 1, 1, 1]], [[0, 0, 0, 2]]])
    # sample 1: class 0 1/2, class 1 2/3, class 2 empty union -> 1; sample 2: class 0 3/4, class 1 -> 1, class 2 0/1
    expected = ((0.5 + 2 / 3 + 1.0) / 3 + (0.75 + 1.0 + 0.0) / 3) / 2
    assert mean_iou(predicted, labels) == pytest.approx(expected)


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cam"
    assert main(["data", "extreme-weather", "--out", str(out), "--samples", "5", "--size", "32", "32"]) == 0
    assert capsys.readouterr().out == f"wrote 4 train and 1 validation files to {out}\n"
    assert main(["data", "extreme-weather", "--out", str(out), "--samples", "1"]) == 2

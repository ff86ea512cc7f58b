"""ImageNet trees as people have them: class-folder and flat validation sets, each ground-truth file, each error."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from specbench.data.imagenet import scan_tree
from specbench.data.jpegtree import TreeSpec, wnid, write_tree
from specbench.errors import UsageError

pytestmark = [
    pytest.mark.needs("numpy", "PIL"),
    pytest.mark.filterwarnings("ignore:The image decoding and encoding capabilities:DeprecationWarning"),
]


SMALL = {"classes": 3, "train_per_class": 2, "val_per_class": 2, "widths": (20, 24), "heights": (16, 20)}


@pytest.fixture
def folders(tmp_path: Path) -> Path:
    root = tmp_path / "folders"
    write_tree(root, TreeSpec(**SMALL))  # type: ignore[arg-type]
    return root


@pytest.fixture
def flat(tmp_path: Path) -> Path:
    root = tmp_path / "flat"
    write_tree(root, TreeSpec(**SMALL, flat_val=True))  # type: ignore[arg-type]
    return root


def kaggle_rows(root: Path) -> list[tuple[str, str]]:
    lines = (root / "LOC_val_solution.csv").read_text().splitlines()[1:]
    return [(line.split(",")[0], line.split(",")[1].split()[0]) for line in lines]


def test_class_folders_give_train_and_val_labels_by_sorted_class(folders: Path) -> None:
    tree = scan_tree(folders)
    assert tree.classes == (wnid(0), wnid(1), wnid(2)) and tree.val_layout == "class folders"
    assert len(tree.train) == 6 and len(tree.val) == 6 and tree.label_file is None
    for split in (tree.train, tree.val):
        for name, label in zip(split.files, split.labels, strict=True):
            assert name.decode().split("/")[1] == tree.classes[label]


def test_flat_val_takes_labels_from_kaggle_solution(flat: Path) -> None:
    tree = scan_tree(flat)
    assert tree.val_layout == "flat, labels from LOC_val_solution.csv"
    labels = {f"val/{stem}.JPEG": tree.classes.index(w) for stem, w in kaggle_rows(flat)}
    assert {n.decode(): int(lab) for n, lab in zip(tree.val.files, tree.val.labels, strict=True)} == labels


@pytest.mark.parametrize("by_index", [False, True])
def test_flat_val_takes_labels_from_val_txt(flat: Path, by_index: bool) -> None:
    rows = kaggle_rows(flat)
    (flat / "LOC_val_solution.csv").unlink()
    classes = sorted({w for _, w in rows})
    text = "".join(f"{stem}.JPEG {classes.index(w) if by_index else w}\n" for stem, w in rows)
    (flat / "val.txt").write_text(text)
    tree = scan_tree(flat)
    assert tree.val_layout == "flat, labels from val.txt"
    assert sorted(tree.val.labels.tolist()) == sorted(classes.index(w) for _, w in rows)


def test_flat_val_takes_labels_from_the_devkit(flat: Path) -> None:
    sio = pytest.importorskip("scipy.io")
    rows = kaggle_rows(flat)
    (flat / "LOC_val_solution.csv").unlink()
    data = flat / "ILSVRC2012_devkit_t12" / "data"
    data.mkdir(parents=True)
    ids = {wnid(label): 1000 - label for label in range(3)}  # the devkit's IDs are not the sorted order
    synsets = np.zeros((4,), dtype=[("ILSVRC2012_ID", "O"), ("WNID", "O"), ("num_children", "O")])
    for k, (name, ident) in enumerate(ids.items()):
        synsets[k] = (ident, name, 0)
    synsets[3] = (1001, "n99999999", 3)  # an inner node of the hierarchy: not a class
    sio.savemat(data / "meta.mat", {"synsets": synsets})
    by_number = sorted(rows)
    (data / "ILSVRC2012_validation_ground_truth.txt").write_text("".join(f"{ids[w]}\n" for _, w in by_number))
    tree = scan_tree(flat)
    assert tree.val_layout == "flat, labels from ILSVRC2012_devkit_t12/data/ILSVRC2012_validation_ground_truth.txt"
    expected = [tree.classes.index(w) for _, w in by_number]
    assert tree.val.labels.tolist() == expected


def test_listing_digest_covers_the_labels(flat: Path) -> None:
    before = scan_tree(flat).listing_sha256()
    path = flat / "LOC_val_solution.csv"
    stem, label = kaggle_rows(flat)[0]
    other = next(wnid(k) for k in range(3) if wnid(k) != label)
    edit(path, f"{stem},{label}", f"{stem},{other}")
    after = scan_tree(flat)
    assert after.listing_sha256() != before
    assert after.val.labels[0] == after.classes.index(other)


def edit(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text().replace(old, new, 1))


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda r: shutil.rmtree(r / "train"), "no folder {root}/train; expected train/<class>/<image>"),
        (
            lambda r: (r / "LOC_val_solution.csv").unlink(),
            "val/ holds 6 images and no class folders, and no ground-truth",
        ),
        (
            lambda r: (r / "val" / "ILSVRC2012_val_00000002.JPEG").unlink(),
            "'ILSVRC2012_val_00000002' is not in {root}/val (5 images there)",
        ),
        (
            lambda r: (r / "val" / "ILSVRC2012_val_00000009.JPEG").write_bytes(b"x"),
            "LOC_val_solution.csv: 1 images of val/ have no label (first: val/ILSVRC2012_val_00000009.JPEG)",
        ),
        (
            lambda r: edit(r / "LOC_val_solution.csv", ",n0000000", ",n9000000"),
            "'ILSVRC2012_val_00000001' is labelled 'n9000000",
        ),
        (
            lambda r: edit(r / "LOC_val_solution.csv", "ILSVRC2012_val_00000001,", "../ILSVRC2012_val_00000001,"),
            "entry '../ILSVRC2012_val_00000001' is not a plain file name of val/",
        ),
        (
            lambda r: edit(r / "LOC_val_solution.csv", "ImageId,PredictionString", "id,label"),
            "LOC_val_solution.csv:1: expected the header 'ImageId,PredictionString', found ['id', 'label']",
        ),
        (
            lambda r: (r / "val" / "n12345678").mkdir(),
            "val/ has class folders that train/ lacks (1, first: val/n12345678)",
        ),
        (
            lambda r: (r / "train" / "n00000007").mkdir(),
            "1 class folders of train/ hold no images (first: train/n00000007)",
        ),
    ],
)
def test_a_broken_tree_is_refused_with_the_fix(flat: Path, damage: object, message: str) -> None:
    damage(flat)  # type: ignore[operator]
    with pytest.raises(UsageError) as caught:
        scan_tree(flat)
    assert message.format(root=flat.resolve()) in str(caught.value)


def test_val_txt_index_outside_the_classes_is_refused(flat: Path) -> None:
    (flat / "LOC_val_solution.csv").unlink()
    (flat / "val.txt").write_text("ILSVRC2012_val_00000001.JPEG 3\n")
    with pytest.raises(UsageError, match=r"val.txt:1: class index 3 is outside 0..2"):
        scan_tree(flat)

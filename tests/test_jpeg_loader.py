"""The device image pipeline: epochs, shards, labels, errors; on CUDA, nvjpeg against the CPU decoder."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import torch

from specbench.data.imagenet import ImageTree, scan_tree
from specbench.data.jpegloader import DeviceImageLoader, Geometry, LoaderOptions, ShareControl
from specbench.data.jpegtree import TreeSpec, write_tree
from specbench.errors import UsageError

pytestmark = [
    pytest.mark.needs("torch", "torchvision"),
    pytest.mark.filterwarnings("ignore:The image decoding and encoding capabilities:DeprecationWarning"),
]


GEOMETRY = Geometry(size=32, resize=37)
CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> ImageTree:
    root = tmp_path_factory.mktemp("jpegs")
    spec = TreeSpec(classes=3, train_per_class=10, val_per_class=3, widths=(40, 60), heights=(30, 50), flat_val=True)
    write_tree(root, spec)
    return scan_tree(root)


def loader(tree: ImageTree, train: bool = True, device: str = "cpu", **kw: object) -> DeviceImageLoader:
    options: dict[str, object] = {"decoder": "libjpeg", "workers": 2, "seed": 5, "batch_size": 4, **kw}
    split = tree.train if train else tree.val
    chosen = LoaderOptions(geometry=GEOMETRY, device=torch.device(device), **options)  # type: ignore[arg-type]
    return DeviceImageLoader(tree.root, split, chosen, train=train)


def test_an_epoch_gives_each_image_once_with_its_label_normalised(tree: ImageTree) -> None:
    train = loader(tree)
    try:
        assert len(train) == 7  # 30 images, batches of 4, the last partial batch dropped
        order = train.order(1)
        batches = list(train.epoch(1))
        assert len(batches) == 7
        labels = torch.cat([y for _, y in batches])
        assert labels.tolist() == tree.train.labels[order[:28]].tolist()
        for images, _ in batches:
            assert images.shape == (4, 3, 32, 32) and images.dtype == torch.float32
            assert images.is_contiguous(memory_format=torch.channels_last)
            assert float(images.min()) > -2.5 and float(images.max()) < 2.7 and float(images.std()) > 0.1
        assert sorted(train.order(1).tolist()) == list(range(30)) and train.order(2).tolist() != order.tolist()
    finally:
        train.close()


def test_the_same_seed_gives_the_same_batches(tree: ImageTree) -> None:
    first, second = loader(tree), loader(tree)
    try:
        for (a, la), (b, lb) in zip(first.epoch(3), second.epoch(3), strict=True):
            assert torch.equal(la, lb) and torch.equal(a, b)
    finally:
        first.close()
        second.close()


def test_the_next_epoch_is_under_way_when_one_ends(tree: ImageTree) -> None:
    train = loader(tree)
    try:
        list(train.epoch(1))
        assert train.producer is not None and train.producer.epoch == 2
        assert len(list(train.epoch(2))) == 7
    finally:
        train.close()
    assert train.producer is None


def test_ranks_share_an_epoch_without_overlap_and_evaluation_covers_all(tree: ImageTree) -> None:
    shards = [loader(tree, rank=r, world=3).order(4) for r in range(3)]
    assert sorted(i for s in shards for i in s.tolist()) == list(range(30))
    val = [loader(tree, train=False, rank=r, world=2) for r in range(2)]
    try:
        seen = [torch.cat([y for _, y in v.epoch(0)]) for v in val]
        assert sum(len(s) for s in seen) == len(tree.val) == 9
        assert [len(v) for v in val] == [2, 1]  # 5 and 4 images in batches of 4
        assert seen[0].tolist() == tree.val.labels[0::2].tolist()
    finally:
        for v in val:
            v.close()


def test_evaluation_batches_are_center_crops_in_order(tree: ImageTree) -> None:
    val = loader(tree, train=False, batch_size=5)
    try:
        a = torch.cat([x for x, _ in val.epoch(0)])
        b = torch.cat([x for x, _ in val.epoch(0)])
        assert a.shape == (9, 3, 32, 32) and torch.equal(a, b)
    finally:
        val.close()


def test_an_undecodable_file_stops_the_epoch_naming_it(tmp_path: Path) -> None:
    write_tree(tmp_path, TreeSpec(classes=2, train_per_class=4, val_per_class=1, widths=(30, 40), heights=(30, 40)))
    bad = tmp_path / "train" / "n00000001" / "n00000001_2.JPEG"
    bad.write_bytes(b"\xff\xd8 not a jpeg")
    train = loader(scan_tree(tmp_path))
    try:
        with pytest.raises(UsageError, match=f"--data: {bad} is not an image torchvision can decode"):
            list(train.epoch(1))
    finally:
        train.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("specbench-images")]


def test_nvjpeg_needs_a_cuda_device(tree: ImageTree) -> None:
    with pytest.raises(UsageError, match="data_decoder nvjpeg decodes on a CUDA device; this run's device is cpu"):
        loader(tree, decoder="nvjpeg")


@pytest.mark.gpu
@CUDA
@pytest.mark.parametrize("share", [0.0, 0.5])
def test_nvjpeg_batches_match_the_cpu_decoder(tree: ImageTree, share: float) -> None:
    gpu = loader(tree, device="cuda", decoder="nvjpeg", cpu_share=share)
    cpu = loader(tree, device="cuda", decoder="libjpeg")
    try:
        for (a, la), (b, lb) in zip(gpu.epoch(1), cpu.epoch(1), strict=True):
            assert a.is_cuda and la.is_cuda and torch.equal(la, lb)
            assert float((a - b).abs().mean()) * 255 * 0.226 < 4.0  # chroma upsampling differs: 2.3 seen on an H200
    finally:
        gpu.close()
        cpu.close()


@pytest.mark.gpu
@CUDA
def test_nvjpeg_falls_back_for_images_it_refuses(tmp_path: Path) -> None:
    from PIL import Image

    write_tree(tmp_path, TreeSpec(classes=2, train_per_class=4, val_per_class=1, widths=(30, 40), heights=(30, 40)))
    png = tmp_path / "train" / "n00000000" / "n00000000_1.JPEG"
    Image.new("RGB", (33, 35), (200, 10, 10)).save(png, format="PNG")
    train = loader(scan_tree(tmp_path), device="cuda", decoder="nvjpeg")
    try:
        assert sum(len(y) for _, y in train.epoch(1)) == 8
        assert len(train.cpu_only) == 1
        assert sum(len(y) for _, y in train.epoch(2)) == 8
    finally:
        train.close()


class RegionsOnCpu:
    """The hardware decoder's part in the loader, played on the CPU: sizes from the header (PIL), regions cut
    from torchvision's whole decode and laid out as the engines write them (rows of a pitch rounded up past
    the region's width, spare rows after each region, a zero byte at the end). `fail_first` makes the first
    call fail as a batch the engines reject does."""

    def __init__(self, fail_first: bool = False) -> None:
        self.calls = 0
        self.fail_first = fail_first

    def another(self) -> RegionsOnCpu:
        return RegionsOnCpu()

    def size(self, data: torch.Tensor) -> tuple[int, int] | None:
        import io

        from PIL import Image

        with Image.open(io.BytesIO(data.numpy().tobytes())) as image:
            return None if image.format != "JPEG" else (image.height, image.width)

    def decode(self, data: list[torch.Tensor], regions: object, stream: object) -> tuple[torch.Tensor, object]:
        import numpy as np
        from torchvision.io import ImageReadMode, decode_image

        from specbench.data.nvjpeg import NvjpegError

        self.calls += 1
        if self.fail_first and self.calls == 1:
            raise NvjpegError("nvjpegDecodeBatchedEx", 6)
        pieces, rows, offset = [], [], 0
        for tensor, (x, y, w, h) in zip(data, np.asarray(regions).tolist(), strict=True):
            whole = decode_image(tensor, mode=ImageReadMode.RGB).permute(1, 2, 0)
            assert min(x, y) >= 0 and min(w, h) > 0 and x + w <= whole.shape[1] and y + h <= whole.shape[0]
            pitch = (3 * w + 48 + 63) // 64 * 64
            padded = torch.full((h + 16, pitch), 171, dtype=torch.uint8)
            padded[:h, : 3 * w] = whole[y : y + h, x : x + w].reshape(h, 3 * w)
            pieces.append(padded.reshape(-1))
            rows.append((offset, h, w, 1, pitch, 3))
            offset += padded.numel()
        return torch.cat([*pieces, torch.zeros(1, dtype=torch.uint8)]), np.array(rows, dtype=np.int64)


@pytest.mark.parametrize(("train", "share"), [(True, 0.0), (True, 0.25), (False, 0.0)])
def test_decoding_only_the_crops_regions_gives_the_whole_images_crops(
    tree: ImageTree, train: bool, share: float
) -> None:
    """Crops drawn before decoding (from the headers' sizes), then cut from regions decoded alone, are the
    crops of the whole images with the same seed, whatever the share the CPU decodes whole."""
    whole, regions = loader(tree, train=train), loader(tree, train=train)
    regions.hardware = RegionsOnCpu()
    regions.share = ShareControl(share)
    try:
        pairs = list(zip(whole.epoch(2), regions.epoch(2), strict=True))
        by_engines = sum(len(lb) - round(len(lb) * share) for _, (_, lb) in pairs)
        assert regions.engine_images >= by_engines > 0  # and the next epoch's first batches, under way
        if share == 0.0:  # counted as batches are handed out, not as they are read ahead: every one the engines'
            assert regions.engine_images == regions.region_images
        for (a, la), (b, lb) in pairs:
            assert torch.equal(la, lb)
            assert torch.allclose(a, b, atol=1e-4), float((a - b).abs().max())
    finally:
        whole.close()
        regions.close()


@pytest.mark.parametrize("threads", [2, 3])
def test_several_decoders_in_turn_give_the_same_batches_in_order(tree: ImageTree, threads: int) -> None:
    """Batches spread over decoders of their own, each in its thread, come out as one decoder's do."""
    one, several = loader(tree), loader(tree, decode_threads=threads)
    for engines in (one, several):
        engines.hardware = RegionsOnCpu()
        engines.share = ShareControl(0.0)
    try:
        for epoch in (1, 2):
            pairs = list(zip(one.epoch(epoch), several.epoch(epoch), strict=True))
            assert len(pairs) == len(one) > threads
            for (a, la), (b, lb) in pairs:
                assert torch.equal(la, lb) and torch.equal(a, b)
        slots = several.slots
        assert len(slots) == threads and all(thread is not None for _, _, thread in slots)
        assert all(engine.calls > 0 for engine, _, _ in slots)  # every decoder took batches
    finally:
        one.close()
        several.close()
    assert several.slots == []


def test_regions_in_canvas_groups_give_the_whole_images_crops(tree: ImageTree, monkeypatch: pytest.MonkeyPatch) -> None:
    """The assembly's other branch: a batch split into groups, each cropped from its own canvas."""
    from specbench.data import crops, jpegloader

    groups: list[int] = []

    def small(sizes: torch.Tensor) -> list[list[int]]:
        found = crops.canvas_groups(sizes, budget_bytes=2 * 60 * 50 * 16)
        groups.append(len(found))
        return found

    monkeypatch.setattr(jpegloader, "canvas_groups", small)
    whole, regions = loader(tree), loader(tree)
    regions.hardware = RegionsOnCpu()
    regions.share = ShareControl(0.0)
    try:
        for (a, la), (b, lb) in zip(whole.epoch(1), regions.epoch(1), strict=True):
            assert torch.equal(la, lb) and torch.allclose(a, b, atol=1e-4)
        assert max(groups) > 1
    finally:
        whole.close()
        regions.close()


def test_a_batch_the_engines_fail_on_is_decoded_by_the_cpu(tree: ImageTree) -> None:
    whole, regions = loader(tree), loader(tree)
    regions.hardware = RegionsOnCpu(fail_first=True)
    regions.share = ShareControl(0.0)
    try:
        pairs = list(zip(whole.epoch(1), regions.epoch(1), strict=True))
        assert regions.hardware.calls >= len(pairs) and len(regions.cpu_only) == 4  # the first batch's images
        for (a, la), (b, lb) in pairs:
            assert torch.equal(la, lb) and torch.allclose(a, b, atol=1e-4)
    finally:
        whole.close()
        regions.close()


def test_region_decoding_sends_what_the_engines_refuse_to_the_cpu(tmp_path: Path) -> None:
    from PIL import Image

    write_tree(tmp_path, TreeSpec(classes=2, train_per_class=4, val_per_class=1, widths=(30, 40), heights=(30, 40)))
    png = tmp_path / "train" / "n00000000" / "n00000000_1.JPEG"
    Image.new("RGB", (33, 35), (200, 10, 10)).save(png, format="PNG")
    whole, regions = loader(scan_tree(tmp_path)), loader(scan_tree(tmp_path))
    regions.hardware = RegionsOnCpu()
    regions.share = ShareControl(0.0)
    try:
        for (a, la), (b, lb) in zip(whole.epoch(1), regions.epoch(1), strict=True):
            assert torch.equal(la, lb) and torch.allclose(a, b, atol=1e-4)
    finally:
        whole.close()
        regions.close()


@pytest.mark.gpu
@CUDA
@pytest.mark.parametrize(
    ("train", "share", "threads"), [(True, 0.0, 1), (True, 0.5, 1), (False, 0.0, 1), (True, 0.0, 2)]
)
def test_the_hardware_decoders_regions_match_torchvisions_whole_images(
    tree: ImageTree, train: bool, share: float, threads: int
) -> None:
    engines = loader(tree, train=train, device="cuda", decoder="nvjpeg", cpu_share=share, decode_threads=threads)
    if engines.hardware is None:
        engines.close()
        pytest.skip("this GPU has no hardware JPEG decoder")
    whole = loader(tree, train=train, device="cuda", decoder="nvjpeg", cpu_share=share)
    whole.hardware = None
    try:
        for (a, la), (b, lb) in zip(engines.epoch(1), whole.epoch(1), strict=True):
            assert torch.equal(la, lb)
            assert torch.allclose(a, b, atol=1e-4), float((a - b).abs().max())
    finally:
        engines.close()
        whole.close()


def test_share_control_follows_the_stage_that_waits() -> None:
    fixed = ShareControl(0.4)
    fixed.update(cpu_wait_s=1.0, handover_s=0.0)
    assert fixed.value == 0.4 and fixed.mean == 0.4
    auto = ShareControl("auto")
    start = auto.value
    auto.update(cpu_wait_s=0.0, handover_s=0.0)  # nvjpeg was the slowest: give the CPU more
    assert auto.value == start + ShareControl.STEP
    auto.update(cpu_wait_s=0.0, handover_s=0.05)  # the training held the batch up: nothing to balance
    assert auto.value == start + ShareControl.STEP
    auto.update(cpu_wait_s=0.01, handover_s=0.0)  # the CPU's part was late
    assert auto.value == start
    for _ in range(200):
        auto.update(cpu_wait_s=0.01, handover_s=0.0)
    assert auto.value == 0.0
    for _ in range(200):
        auto.update(cpu_wait_s=0.0, handover_s=0.0)
    assert auto.value == 1.0
    assert auto.mean is not None and 0.0 < auto.mean < 1.0


@pytest.mark.parametrize("share", [-0.1, 1.5, "half", True])
def test_share_control_refuses_what_is_not_a_fraction(share: object) -> None:
    with pytest.raises(UsageError, match="data_cpu_share"):
        ShareControl(share)  # type: ignore[arg-type]


def test_share_control_lets_short_cpu_waits_pass() -> None:
    auto = ShareControl("auto")
    start = auto.value
    auto.update(cpu_wait_s=0.003, handover_s=0.0, nvjpeg_s=0.05)  # 3 ms against a 50 ms nvjpeg call: keeping up
    assert auto.value == start + ShareControl.STEP
    auto.update(cpu_wait_s=0.008, handover_s=0.0, nvjpeg_s=0.05)
    assert auto.value == start

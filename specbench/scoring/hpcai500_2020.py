"""HPC AI500's published image-classification ranking (free level, 2020-07-02), to score with specbench's own accounting.

Source: https://www.benchcouncil.org/aibench/hpcai500/ranking.html (columns Rank, Source,
VPFLOPS, Time (min), Quality, AI acc, Framework; "the data (unverified) are collected from the
original papers and technical reports"). Target 76.3 % top-1, n = 5 (benchcouncil.org/ranking.html:
"In image classfication, the target quality is 76.3% top1 accuracy and the value of n is 5 as
default"), 90 epochs of ImageNet-1k's 1,281,167 training images.
"""

from __future__ import annotations

from dataclasses import dataclass

from specbench.accounting.accounts import Accounts, Evidence, Problem, Quality, account

TARGET, EXPONENT, EPOCHS, TRAIN_IMAGES = 0.763, 5, 90, 1_281_167
SOURCE = "https://www.benchcouncil.org/aibench/hpcai500/ranking.html"


@dataclass(frozen=True)
class Row:
    rank: int
    source: str
    valid_pflops: float
    time_min: str
    """As printed: its decimals say how it was rounded."""
    top1: float
    accelerators: str
    framework: str

    @property
    def time_bounds_s(self) -> tuple[float, float]:
        decimals = len(self.time_min.split(".")[1]) if "." in self.time_min else 0
        half = 0.5 * 10**-decimals
        return (float(self.time_min) - half) * 60, (float(self.time_min) + half) * 60


RANKING_2020 = (
    Row(1, "Fujitsu", 31.41, "1.2", 0.751, "Tesla V100 x 2048", "MXNet"),
    Row(2, "Google", 20.10, "2.2", 0.763, "TPU V3 x 1024", "TensorFlow"),
    Row(3, "Sony", 10.02, "3.7", 0.750, "Tesla V100 x 2176", "NNL"),
    Row(4, "Tencent", 6.44, "6.6", 0.760, "Tesla P100 x 1024", "Chainer"),
    Row(5, "Preferred Network", 2.41, "15", 0.749, "Tesla P40 x 2048", "TensorFlow"),
    Row(6, "Berkeley", 1.95, "20", 0.754, "KNL x 2048", "Intel Caffe"),
    Row(7, "Intel", 1.27, "28", 0.746, "KNL x 1536", "Intel Caffe"),
    Row(8, "IBM", 0.75, "50", 0.750, "Tesla P100 x 256", "Caffe"),
    Row(9, "Facebook", 0.70, "60", 0.763, "Tesla P100 x 1024", "Caffe2"),
)


def problem(flops_per_image: float) -> Problem:
    """ResNet-50 on ImageNet under HPC AI500's scoring: 90 epochs processed, n = 5, ratio capped at 1."""
    return Problem(
        kind="time_to_quality",
        flops_per_sample=flops_per_image,
        accounting="processed",
        train_samples=TRAIN_IMAGES,
        budget_epochs=EPOCHS,
        budget_steps=None,
        samples_per_step=None,
        timed_steps=None,
        quality=Quality(TARGET, "higher", EXPONENT, True),
    )


def score(row: Row, flops_per_image: float, time_s: float | None = None) -> Accounts:
    """A row scored by specbench's accounting, at the printed time (or `time_s`)."""
    seconds = float(row.time_min) * 60 if time_s is None else time_s
    evidence = Evidence(duration_s=seconds, samples=TRAIN_IMAGES * EPOCHS, credited=row.top1, energy_j=None, devices=1)
    return account(problem(flops_per_image), evidence)


def implied_flops_per_image(row: Row) -> tuple[float, float]:
    """The FLOPs per image that give the row's Valid PFLOPS (to its 2 decimals) at some time its rounding allows."""
    shortest, longest = row.time_bounds_s
    per_flop_short = score(row, 1.0, shortest).valid_flops_per_s
    per_flop_long = score(row, 1.0, longest).valid_flops_per_s
    assert per_flop_short and per_flop_long
    return (row.valid_pflops - 0.005) * 1e15 / per_flop_short, (row.valid_pflops + 0.005) * 1e15 / per_flop_long

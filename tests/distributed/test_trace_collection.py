"""Several nodes' power traces into one run folder, in chunks: two 'nodes' as threads over an in-process group."""

from __future__ import annotations

import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from specbench.power import Device, Meter, PowerValues, read_trace
from specbench.run import runpower
from specbench.run.distributed import Dist


class Group:
    """What torch.distributed's gather and broadcast do, for threads of one process."""

    def __init__(self, world: int) -> None:
        self.barrier = threading.Barrier(world, timeout=30)
        self.slots: list[Any] = [None] * world
        self.messages = 0


@dataclass(frozen=True)
class ThreadDist(Dist):
    group: Group = field(default_factory=lambda: Group(1))

    def gather(self, value: Any) -> list[Any] | None:
        self.group.slots[self.rank] = value
        self.group.barrier.wait()
        out = list(self.group.slots) if self.writer else None
        if self.writer:
            self.group.messages += 1
        self.group.barrier.wait()
        return out

    def broadcast(self, value: Any) -> Any:
        if self.writer:
            self.group.slots[0] = value
        self.group.barrier.wait()
        out = self.group.slots[0]
        self.group.barrier.wait()
        return out


class Constant(Meter):
    kind = "constant"

    def __init__(self, watts: float) -> None:
        super().__init__([Device(key="gpu0", meter="constant", scope="accelerator")])
        self.watts = watts

    def read(self) -> list[PowerValues]:
        return [PowerValues(power_instant_w=self.watts)]


def test_every_nodes_rows_reach_rank_0_in_chunks_and_the_spools_are_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runpower, "CHUNK_ROWS", 7)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "node-local"))
    (tmp_path / "node-local").mkdir()
    run_dir = tmp_path / "run_1"
    run_dir.mkdir()
    group = Group(2)
    written: dict[int, int] = {}
    spools: dict[int, Path] = {}
    windows: dict[int, Any] = {}

    def node(rank: int) -> None:
        dist = ThreadDist(rank=rank, world=2, local_rank=0, local_world=1, node=rank, group=group)
        sampler = runpower.run_sampler([Constant(100.0 * (rank + 1))], dist, run_dir, 10.0)
        assert sampler is not None
        sampler.start()
        sampler.window_start()
        for _ in range(20):
            sampler.sample_now()
        window = sampler.window_stop()
        sampler.stop()
        assert sampler.trace_dir is not None
        written[rank] = len((sampler.trace_dir / "power.csv").read_text().splitlines()) - 1
        spools[rank] = sampler.trace_dir
        windows[rank] = runpower.collect_job_trace(dist, sampler, window, run_dir)

    threads = [threading.Thread(target=node, args=(rank,)) for rank in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert set(written) == {0, 1} and written[1] > 2 * 7  # several chunks
    trace = read_trace(run_dir)
    assert [d.key for d in trace.devices] == ["n0:gpu0", "n1:gpu0"]
    assert len(trace.samples_of("n0:gpu0")) == written[0] and len(trace.samples_of("n1:gpu0")) == written[1]
    assert group.messages >= 1 + (written[1] + 6) // 7  # the metadata, then one gather per chunk
    job = windows[0]
    assert [d.device for d in job.devices] == ["n0:gpu0", "n1:gpu0"] and windows[1] is None
    assert trace.metadata["nodes"][1]["node"] == 1 and len(trace.metadata["windows"]) == 2
    assert spools[0] == run_dir and spools[1].parent == tmp_path / "node-local" and not spools[1].exists()

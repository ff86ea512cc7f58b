"""Two background threads that make one epoch of batches: a decoding stage and an assembling stage.

The decoding thread spends its time in calls that leave the GIL (file reads, nvjpeg), the assembling
thread launches the batched crop kernels; bounded queues between them and to the training thread keep
each a few batches ahead and no further. Errors reach the training thread, which raises them; `close`
stops both at any point.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


class End:
    """Marks the end of an epoch in a queue."""


@dataclass
class Failure:
    """An exception of a stage, carried to the training thread."""

    error: BaseException


@dataclass(frozen=True)
class StageWork:
    """What the two threads run: `setup()` in each thread first, `decoded()` yields, `assemble(item)` finishes."""

    setup: Callable[[], contextlib.AbstractContextManager[Any]]
    decoded: Callable[[threading.Event], Iterator[Any]]
    assemble: Callable[[Any], Any]


class Producer:
    """One epoch: decoded items into a queue of 2, assembled batches into a queue of `depth`."""

    def __init__(self, work: StageWork, epoch: int, depth: int) -> None:
        self.epoch = epoch
        self.stop = threading.Event()
        self.middle: queue.Queue[Any] = queue.Queue(maxsize=2)
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=depth)
        self.threads = [
            threading.Thread(target=self._decode, args=(work,), daemon=True, name=f"specbench-images-{epoch}-decode"),
            threading.Thread(target=self._assemble, args=(work,), daemon=True, name=f"specbench-images-{epoch}-crop"),
        ]
        for thread in self.threads:
            thread.start()

    def _decode(self, work: StageWork) -> None:
        try:
            with work.setup():
                for item in work.decoded(self.stop):
                    if not self._put(self.middle, item):
                        return
            self._put(self.middle, End())
        except BaseException as err:  # handed on to the training thread
            self._put(self.middle, Failure(err))

    def _assemble(self, work: StageWork) -> None:
        try:
            with work.setup():
                while not self.stop.is_set():
                    item = self._take(self.middle)
                    if item is None:
                        return
                    if isinstance(item, (End, Failure)):
                        self._put(self.queue, item)
                        return
                    if not self._put(self.queue, work.assemble(item)):
                        return
        except BaseException as err:
            self._put(self.queue, Failure(err))

    def _put(self, target: queue.Queue[Any], item: Any) -> bool:
        while not self.stop.is_set():
            try:
                target.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _take(self, source: queue.Queue[Any]) -> Any:
        while not self.stop.is_set():
            try:
                return source.get(timeout=0.1)
            except queue.Empty:
                continue
        return None

    def get(self) -> Any:
        """The next batch, or End; raises what a stage raised."""
        while True:
            try:
                item = self.queue.get(timeout=1.0)
            except queue.Empty:
                if not self.threads[1].is_alive():
                    raise RuntimeError("the image pipeline's threads ended without handing over a batch") from None
                continue
            if isinstance(item, Failure):
                raise item.error
            return item

    def close(self) -> None:
        self.stop.set()
        for source in (self.queue, self.middle):
            with contextlib.suppress(queue.Empty):
                while True:
                    source.get_nowait()
        for thread in self.threads:
            thread.join(timeout=30)

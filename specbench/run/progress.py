"""Progress on the terminal: one updating line on a TTY, plain lines at a bounded rate otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _clock(seconds: float | None) -> str:
    if seconds is None or seconds != seconds or seconds < 0:
        return "--:--"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


class Progress:
    """Reports step, rate, quality, power and ETA of a run."""

    def __init__(
        self, stream: TextIO | None = None, plain_every_s: float = 10.0, label: str = "", quiet: bool = False
    ) -> None:
        self.quiet = quiet
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.plain_every_s = plain_every_s
        self.label = label
        self._last_plain = 0.0
        self._open_line = False

    def update(
        self,
        *,
        stage: str,
        done: float,
        total: float | None,
        rate: float | None,
        unit: str,
        quality: str | None = None,
        power_w: float | None = None,
        force: bool = False,
    ) -> None:
        """Show progress; `done`/`total` in steps, `rate` in samples/s."""
        eta = (total - done) * (self._elapsed_per_step(done)) if total and done else None
        parts = [f"{self.label}{stage}"]
        parts.append(f"{rate:,.1f} {unit}/s" if rate else f"-- {unit}/s")
        if quality:
            parts.append(quality)
        parts.append(f"{power_w:.0f} W" if power_w is not None else "power n/a")
        parts.append(f"ETA {_clock(eta)}")
        line = " | ".join(parts)
        if self.quiet:
            return
        if self.tty:
            self.stream.write("\r\x1b[2K" + line)
            self.stream.flush()
            self._open_line = True
            return
        now = time.monotonic()
        if force or now - self._last_plain >= self.plain_every_s:
            self._last_plain = now
            self.stream.write(line + "\n")
            self.stream.flush()

    def start_clock(self) -> None:
        self._t0 = time.monotonic()

    def _elapsed_per_step(self, done: float) -> float:
        t0 = getattr(self, "_t0", None)
        return (time.monotonic() - t0) / done if t0 is not None and done > 0 else float("nan")

    def message(self, text: str) -> None:
        """A line that stays, even on a TTY."""
        if self.quiet:
            return
        if self._open_line:
            self.stream.write("\n")
            self._open_line = False
        self.stream.write(text + "\n")
        self.stream.flush()

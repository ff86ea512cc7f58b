"""Progress on the terminal: one updating line on a TTY, plain lines at a bounded rate otherwise."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

HALF_LIFE_STEPS = 8.0
"""The ETA's pace gives the last 8 steps half its weight: it follows a real change within an epoch, not one slow step."""


def _clock(seconds: float | None) -> str:
    if seconds is None or seconds != seconds or seconds < 0:
        return "--:--"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


class StepPace:
    """Seconds per step, weighted exponentially toward recent steps, and the pauses between steps (evaluations).

    The first interval after `reset` (the first step, with its start-up) only stands in until a second one
    arrives. Pauses (an update without new steps) are spread over the steps done, so that an ETA includes
    evaluations to come at the rate they came so far.
    """

    def __init__(self, half_life_steps: float = HALF_LIFE_STEPS) -> None:
        self.keep_per_step = 0.5 ** (1.0 / half_life_steps)
        self.reset(0.0)

    def reset(self, now: float) -> None:
        self._done = 0.0
        self._at = now
        self._intervals = 0
        self._paused_s = 0.0
        self.step_s: float | None = None

    def observe(self, done: float, now: float) -> None:
        """`done` steps at time `now` (seconds on a monotonic clock)."""
        steps, elapsed = done - self._done, max(0.0, now - self._at)
        self._done, self._at = done, now
        if steps <= 0:
            self._paused_s += elapsed
            return
        sample = elapsed / steps
        self._intervals += 1
        if self.step_s is None or self._intervals == 2:
            self.step_s = sample
            return
        keep = self.keep_per_step**steps
        self.step_s = keep * self.step_s + (1.0 - keep) * sample

    def eta_s(self, done: float, total: float | None) -> float | None:
        """Seconds until `total` steps at the current pace, pauses included; None before the first step."""
        if self.step_s is None or not total:
            return None
        pause_per_step = self._paused_s / done if done > 0 else 0.0
        return max(0.0, total - done) * (self.step_s + pause_per_step)


class Progress:
    """Reports step, rate, quality, power and ETA of a run; `clock` is the monotonic clock (tests give a fake one)."""

    def __init__(
        self,
        stream: TextIO | None = None,
        plain_every_s: float = 10.0,
        label: str = "",
        quiet: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.quiet = quiet
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.plain_every_s = plain_every_s
        self.label = label
        self._last_plain = -float("inf")
        self._open_line = False
        self.clock = clock
        self.pace = StepPace()
        self._clock_started = False

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
        if self._clock_started:
            self.pace.observe(done, self.clock())
        eta = self.pace.eta_s(done, total) if self._clock_started else None
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
        now = self.clock()
        if force or now - self._last_plain >= self.plain_every_s:
            self._last_plain = now
            self.stream.write(line + "\n")
            self.stream.flush()

    def start_clock(self) -> None:
        """The run's steps start now: the ETA's pace starts over."""
        self.pace.reset(self.clock())
        self._clock_started = True

    def phase(self, text: str) -> None:
        """What the run is doing before its steps show ('loading torch...'): a line on a terminal only, so that
        piped output stays one line per result or error."""
        if self.tty:
            self.message(text)

    def message(self, text: str) -> None:
        """A line that stays, even on a TTY."""
        if self.quiet:
            return
        if self._open_line:
            self.stream.write("\n")
            self._open_line = False
        self.stream.write(text + "\n")
        self.stream.flush()

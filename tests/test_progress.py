"""The ETA of the progress line on synthetic step times (a fake clock): smoothed, not the last interval."""

from __future__ import annotations

import io
import itertools

import pytest

from specbench.run.progress import Progress, StepPace


def etas(step_times: list[float], total: int, pauses: dict[int, float] | None = None) -> list[float]:
    """The ETA after each step of `step_times` (seconds), with a pause (an evaluation) after the steps named."""
    pace = StepPace()
    pace.reset(0.0)
    now, out = 0.0, []
    for done, seconds in enumerate(step_times, start=1):
        now += seconds
        pace.observe(done, now)
        if pauses and done in pauses:
            now += pauses[done]
            pace.observe(done, now)
        eta = pace.eta_s(done, total)
        assert eta is not None
        out.append(eta)
    return out


def test_a_steady_pace_gives_the_exact_eta() -> None:
    assert etas([2.0] * 5, total=10) == pytest.approx([18.0, 16.0, 14.0, 12.0, 10.0])


def test_a_slow_first_step_does_not_inflate_the_eta() -> None:
    """The first step (start-up included) stands in only until the second: no 03:52 -> 00:45 jump afterwards."""
    out = etas([30.0] + [1.0] * 9, total=100)
    assert out[0] == pytest.approx(99 * 30.0)
    assert out[1:] == pytest.approx([100.0 - done for done in range(2, 11)])


def test_jittery_steps_move_the_eta_far_less_than_the_last_interval_would() -> None:
    step_times = [1.0, 1.0] + [0.5, 1.5] * 20
    out = etas(step_times, total=200)
    naive = [(200 - done) * seconds for done, seconds in enumerate(step_times, start=1)]
    smoothed_swing = max(abs(b / a - 1) for a, b in itertools.pairwise(out[5:]))
    naive_swing = max(abs(b / a - 1) for a, b in itertools.pairwise(naive[5:]))
    assert naive_swing > 1.9  # the last interval alone: the ETA triples and thirds from step to step
    assert smoothed_swing < 0.1
    assert out[-1] == pytest.approx((200 - len(step_times)) * 1.0, rel=0.05)


def test_a_lasting_change_of_pace_is_followed_within_a_few_half_lives() -> None:
    out = etas([1.0] * 10 + [2.0] * 40, total=1000)
    assert out[10] < (1000 - 11) * 1.2  # one slower step moves it a little
    assert out[-1] == pytest.approx((1000 - 50) * 2.0, rel=0.02)  # 40 steps (5 half-lives) later: the new pace


def test_evaluation_pauses_are_spread_over_the_steps_done() -> None:
    out = etas([1.0] * 20, total=40, pauses={10: 5.0})
    assert out[8] == pytest.approx(31.0)
    assert out[9] == pytest.approx(30 * (1.0 + 5.0 / 10))
    assert out[19] == pytest.approx(20 * (1.0 + 5.0 / 20))


def test_the_progress_line_shows_the_smoothed_eta() -> None:
    now = [0.0]
    stream = io.StringIO()
    progress = Progress(stream=stream, plain_every_s=0.0, label="[run 1] ", clock=lambda: now[0])
    progress.update(stage="warm-up 1/1", done=1, total=None, rate=None, unit="img")
    progress.start_clock()
    for done, seconds in enumerate([30.0, 1.0, 1.0], start=1):
        now[0] += seconds
        progress.update(stage=f"step {done}/100", done=done, total=100, rate=8.0, unit="img")
    assert stream.getvalue().splitlines() == [
        "[run 1] warm-up 1/1 | -- img/s | power n/a | ETA --:--",
        "[run 1] step 1/100 | 8.0 img/s | power n/a | ETA 49:30",
        "[run 1] step 2/100 | 8.0 img/s | power n/a | ETA 01:38",
        "[run 1] step 3/100 | 8.0 img/s | power n/a | ETA 01:37",
    ]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_phases_show_on_a_terminal_only() -> None:
    terminal, pipe = Terminal(), io.StringIO()
    for stream in (terminal, pipe):
        progress = Progress(stream=stream)
        progress.update(stage="warm-up 1/2", done=1, total=None, rate=None, unit="img")
        progress.phase("building data...")
    assert terminal.getvalue() == ("\r\x1b[2Kwarm-up 1/2 | -- img/s | power n/a | ETA --:--\nbuilding data...\n")
    assert pipe.getvalue() == "warm-up 1/2 | -- img/s | power n/a | ETA --:--\n"
    quiet = Terminal()
    Progress(stream=quiet, quiet=True).phase("loading torch...")
    assert quiet.getvalue() == ""

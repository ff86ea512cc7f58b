"""Writes a complete, compliant submission as docs/submission-format.md describes it, for tests and benchmarks.

A stand-in for `specbench execute` until real runs land: every file of ORG/SYSTEM, with MLLOG
logs, a power trace written by the power package's own writers (samples with window marks,
power.json like the sampler's, window energy by `EnergyAccumulator`), result.json from the
`RunResult` model and a manifest. Deterministic: the same options give the same bytes.

    python tests/validator/make_submission.py OUT [--spec resnet50] [--profile smoke] [--runs N] ...
"""

from __future__ import annotations

import argparse
import io
import json
import math
import zlib
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from specbench import files
from specbench.formats.mlperf_import import log_benchmark_name
from specbench.physics import best_known, best_known_energy
from specbench.power.base import Device, DeviceState, PowerValues
from specbench.power.energy import EnergyAccumulator
from specbench.power.sampler import Window
from specbench.power.trace import COLUMNS, CSV_NAME, FORMAT, FORMAT_VERSION, Sample, write_metadata, write_samples
from specbench.spec.loader import load_spec
from specbench.spec.resolve import ResolvedSpec, resolve
from specbench.spec.result import RunResult
from specbench.spec.system import SubmissionMeta

WALL_ORIGIN_S = 1_800_000_000.0
"""Wall clock of acme/box1's first init_start (other systems: stagger_of); each run starts an hour after the last."""
MONO_OFFSET_S = WALL_ORIGIN_S - 1000.0
"""Monotonic time = wall time - this (the sampler records both clocks)."""
POWER_LIMIT_W = 700.0
DEVICE_ROW = "NVIDIA H200 SXM 141GB"
"""The device table's row of the generated accelerators (NVML's `NVIDIA H200`)."""
STAGGER_STEPS = 4999
STAGGER_CLOCK_S = 6 * 3600.0
"""Each stagger step starts the clock this much later: longer than any generated submission's runs take."""


@dataclass(frozen=True)
class Options:
    spec: str = "resnet50@1.0.0"
    """The generic validator tests run on resnet50 1.0.0 (stop at the target); 2.0.0 trains the whole budget."""
    profile: str = "smoke"
    level: str | None = None
    org: str = "acme"
    system: str = "box1"
    runs: int | None = None
    devices: int = 2
    power: bool = True
    power_hz: float = 10.0
    epoch_s: float = 4.0
    reach_epoch: int = 3
    failed_runs: tuple[int, ...] = ()
    throughput_s: float = 20.0
    seeds: tuple[int, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    sweep_point: dict[str, Any] = field(default_factory=dict)
    stagger: int | None = None
    """Sets the clock, device UUIDs, timings and power curve apart from other systems' (None: from ORG/SYSTEM)."""
    clock_shift_s: float = 0.0
    """Seconds the clock starts later still (a test's overlap of two systems' runs)."""


def _yaml_text(data: dict[str, Any]) -> str:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[attr-defined,assignment]
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def _json_text(data: Any) -> str:
    return json.dumps(data, indent=2, allow_nan=False) + "\n"


def stagger_of(org: str, system: str) -> int:
    """0 for the default acme/box1 (its bytes stay as they were), else 1..STAGGER_STEPS from the names.

    Distinct systems record distinct evidence, as real ones do: the validator refuses the same run
    start, device UUID at the same time, log timings or power readings in two submissions (SB-DUP-*).
    """
    if (org, system) == (Options.org, Options.system):
        return 0
    return 1 + zlib.crc32(f"{org}/{system}".encode()) % STAGGER_STEPS


def _iso(wall_s: float) -> str:
    return datetime.fromtimestamp(wall_s, tz=timezone.utc).isoformat()


class Writer:
    """Builds one ORG/SYSTEM folder."""

    def __init__(self, out: Path, options: Options) -> None:
        self.options = options
        self.loaded = load_spec(options.spec)
        self.spec: ResolvedSpec = resolve(self.loaded, options.profile, options.level)  # type: ignore[arg-type]
        self.root = out / options.org / options.system
        self.stagger = options.stagger if options.stagger is not None else stagger_of(options.org, options.system)
        self.clock_s = WALL_ORIGIN_S + self.stagger * STAGGER_CLOCK_S + options.clock_shift_s
        s = self.spec.spec
        self.hyperparameters: dict[str, Any] = {
            "global_batch_size": 256,
            **s.hyperparameters,
            **options.extra,
            **options.sweep_point,
        }
        self.variant = str(self.hyperparameters["model"]) if s.workload.variants else None
        self.precision = str(self.hyperparameters.get("precision", "bf16"))
        """One precision everywhere: a hyperparameter where the spec makes it one (llm-gpt), else bf16."""
        sweep = ",".join(f"{k}={v}" for k, v in options.sweep_point.items())
        self.bench = self.root / (f"{s.id}--{sweep}" if sweep else s.id)
        self.devices = [
            Device(
                key=f"nvml:{i}",
                meter="nvml",
                scope="accelerator",
                vendor="nvidia",
                model="NVIDIA H200",
                uuid=f"GPU-{self.stagger:04x}000{i}-aaaa-bbbb-cccc-00000000000{i}",
                pci_bus_id=f"00000000:{0x19 + i:02X}:00.0",
                index=i,
                power_source="instant",
                energy_counter="nvmlDeviceGetTotalEnergyConsumption",
            )
            for i in range(options.devices)
        ]

    def write(self) -> Path:
        self.bench.mkdir(parents=True, exist_ok=True)
        (self.root / "system.yaml").write_text(_yaml_text(self.system_yaml()), encoding="utf-8")
        (self.bench / "submission.yaml").write_text(_yaml_text(self.submission_yaml()), encoding="utf-8")
        count = self.options.runs or self.spec.spec.measurement.runs.count
        for n in range(1, count + 1):
            self.write_run(n)
        write_manifest(self.root)
        return self.root

    def system_yaml(self) -> dict[str, Any]:
        o = self.options
        gpu = not o.power or o.devices > 0
        return {
            "format_version": 1,
            "system": o.system,
            "submitter": o.org,
            "captured_at": "2026-11-29T12:00:00+00:00",
            "nodes": 1,
            "layers": {
                "hardware": {
                    "accelerator_vendor": "nvidia" if gpu else "none",
                    "accelerator_model": "NVIDIA H200",
                    "accelerator_count": o.devices,
                    "cpu_model": "Intel Xeon Platinum 8480+",
                    "host_memory_bytes": 2_199_023_255_552,
                },
                "operating_system": {"os_name": "Ubuntu 24.04", "kernel": "6.8.0-45-generic"},
                "driver_firmware": {"driver_version": "560.35.03", "power_limit_w": POWER_LIMIT_W},
                "accelerator_libraries": {"cuda_version": "12.6", "cudnn_version": "9.5.1", "nccl_version": "2.23.4"},
                "communication": {"backend": "nccl", "world_size": o.devices},
                "framework": {"framework": "pytorch", "framework_version": "2.5.1", "compile_mode": "none"},
                "parallelism_precision": {"parallelism": "data", "precision": "bf16", "memory_format": "channels_last"},
            },
            "declared": {"idle_power_w": 60.0},
        }

    def submission_yaml(self) -> dict[str, Any]:
        o, s = self.options, self.spec.spec
        dataset = s.workload.dataset
        newer = {
            "layers": {"framework": {"compile_mode": "none"}, "parallelism_precision": {"precision": self.precision}},
            "dataset": {
                "name": dataset.name,
                "train_samples": dataset.train_samples,
                "eval_samples": dataset.eval_samples,
                "synthetic": dataset.synthetic,
            },
        }
        return {
            "format_version": 1,
            "spec_id": s.id,
            "spec_version": s.version,
            "spec_sha256": self.spec.digest,
            "level": self.spec.level,
            "profile": self.spec.profile,
            "variant": self.variant,
            "submitter": o.org,
            "system": o.system,
            "synthetic_data": s.workload.dataset.synthetic,
            "hyperparameters": self.hyperparameters,
            **{key: value for key, value in newer.items() if key in SubmissionMeta.model_fields},
        }

    # one run

    def write_run(self, n: int) -> None:
        folder = self.bench / f"run_{n}"
        folder.mkdir(parents=True, exist_ok=True)
        seed = self.options.seeds[n - 1] if self.options.seeds else 1000 + n
        t0_ms = round((self.clock_s + (n - 1) * 3600.0) * 1000)
        log = Log(t0_ms)
        self.log_init(log, seed)
        outcome = self.log_ttq(log, n) if self.spec.spec.kind == "time_to_quality" else self.log_throughput(log)
        (folder / "log.txt").write_text(log.text(), encoding="utf-8")
        start_ms, stop_ms = log.time_of("run_start"), log.time_of("run_stop")
        power = self.write_power(folder, start_ms / 1000.0, stop_ms / 1000.0) if self.options.power else None
        result = self.result(n, seed, start_ms, stop_ms, outcome, power)
        (folder / "result.json").write_text(_json_text(result.model_dump(mode="json")), encoding="utf-8")
        state = {"format_version": 1, "status": "done", "pid": 4242 + n, "started_at": _iso(t0_ms / 1000.0)}
        (folder / "state.json").write_text(_json_text(state), encoding="utf-8")

    def log_init(self, log: Log, seed: int) -> None:
        o, s = self.options, self.spec.spec
        division = "open" if self.spec.level == "free" else "closed"
        for key, value in (
            ("submission_org", o.org),
            ("submission_platform", o.system),
            ("submission_division", division),
            ("submission_status", "onprem"),
            ("submission_benchmark", log_benchmark_name(s)),
            ("cache_clear", True),
        ):
            log.point(key, value)
        log.start("init_start", advance_ms=1)
        log.point("seed", seed)
        log.point("global_batch_size", self.hyperparameters["global_batch_size"])
        log.point("train_samples", s.workload.dataset.train_samples)
        log.point("eval_samples", s.workload.dataset.eval_samples)
        log.point("gradient_accumulation_steps", 1)
        for key, value in self.hyperparameters.items():
            if key != "global_batch_size":
                log.point(key, value)
        log.end("init_stop", advance_ms=2000)
        log.start("run_start", advance_ms=1000)

    def jitter_ms(self, bound: int) -> int:
        """Milliseconds (0 for acme/box1, else 1..bound-1) by which this system's logged events move."""
        return 0 if self.stagger == 0 else 1 + (self.stagger - 1) % (bound - 1)

    @property
    def epoch_s(self) -> float:
        """Seconds per epoch: the option, but never faster than the devices' dense bf16 peak allows, nor (on a
        ranked profile) than the workload's best-known rate on an H200 (specbench/physics/best_known.yaml), nor
        than its best-known energy per sample allows at the generated power (`least_seconds`)."""
        s = self.spec.spec
        train = s.workload.dataset.train_samples
        per_sample = self.flops_per_sample() or 0.0
        floor = per_sample * train / (self.options.devices * 989.5e12)
        best = best_known(s.id, self.variant, DEVICE_ROW) if self.spec.ranked else None
        slowest = train / (self.options.devices * best.samples_per_s) if best else 0.0
        return max(self.options.epoch_s, round(2 * floor, 1), math.ceil(slowest * 10) / 10, self.least_seconds(train))

    @property
    def throughput_s(self) -> float:
        """Seconds of the timed block: the option, but never less than the best-known energy allows (`least_seconds`)."""
        return max(self.options.throughput_s, self.least_seconds(self.throughput_samples))

    def least_seconds(self, samples: int) -> float:
        """On a ranked profile with power, the seconds in which the devices' mean power (`_base_w`) spends the
        workload's best-known energy per sample on an H200 on `samples`, to a tenth up; 0 without an energy row."""
        s = self.spec.spec
        best = best_known_energy(s.id, self.variant, DEVICE_ROW) if self.spec.ranked and self.options.power else None
        if best is None:
            return 0.0
        watts = math.fsum(_base_w(i) for i in range(len(self.devices)))
        return math.ceil(best.energy_j_per_sample * samples / watts * 10) / 10

    def log_ttq(self, log: Log, n: int) -> dict[str, Any]:
        """Epochs 1..E, an evaluation at each cadence point; the `reach_epoch`-th evaluation meets the target."""
        s, o = self.spec.spec, self.options
        assert s.quality is not None
        failed = n in o.failed_runs
        every, offset = s.quality.eval_every_epochs or 1.0, s.quality.eval_offset_epochs
        budget = s.budget.epochs
        whole = s.trains_whole_budget
        to_budget = (failed or whole) and budget
        evaluations = int((budget - offset) // every) if to_budget else o.reach_epoch + (2 if failed else 0)
        eval_epochs = {round(offset + k * every): k for k in range(1, evaluations + 1)}
        epoch_ms = round(self.epoch_s * 1000)
        curve = []
        last_epoch = max(eval_epochs)
        for epoch in range(1, last_epoch + 1):
            log.start("epoch_start", epoch_num=epoch)
            log.end("epoch_stop", advance_ms=epoch_ms - 200, epoch_num=epoch)
            if epoch not in eval_epochs:
                log.now += 200
                continue
            log.start("eval_start", epoch_num=epoch)
            value = _quality(eval_epochs[epoch], o.reach_epoch, s.quality.target, s.quality.direction, failed)
            jitter = self.jitter_ms(149)
            log.point("eval_accuracy", value, advance_ms=150 - jitter, epoch_num=epoch)
            curve.append((epoch, value, log.now))
            log.end("eval_stop", advance_ms=50 + jitter, epoch_num=epoch)
        log.end("run_stop", advance_ms=1, status="aborted" if failed and not whole else "success")
        return {"curve": curve, "epochs": last_epoch, "failed": failed and not whole, "below": failed}

    @property
    def throughput_samples(self) -> int:
        """Samples of the timed steps: global batch (x sequence length where a sample is a token) x measured steps."""
        s = self.spec.spec
        assert s.throughput is not None
        samples: int = self.hyperparameters["global_batch_size"] * s.throughput.measure_steps
        if s.workload.sample_unit == "token":
            samples *= self.hyperparameters["sequence_length"]
        return samples

    def log_throughput(self, log: Log) -> dict[str, Any]:
        samples = self.throughput_samples
        jitter = self.jitter_ms(499)
        log.start("block_start", advance_ms=500 - jitter, samples_count=samples, first_epoch_num=1)
        log.end("block_stop", advance_ms=round(self.throughput_s * 1000), samples_count=samples, first_epoch_num=1)
        log.end("run_stop", advance_ms=1 + jitter, status="success")
        return {"curve": [], "epochs": None, "failed": False, "samples": samples}

    # power

    def write_power(self, folder: Path, start_s: float, stop_s: float) -> dict[str, Any]:
        period = 1.0 / self.options.power_hz
        begin = start_s - 1.0
        times = [(begin + k * period, "") for k in range(math.ceil((stop_s + 1.0 - begin) / period))]
        times += [(start_s, "start"), (stop_s, "stop")]
        times.sort(key=lambda item: (item[0], item[1] != "start"))
        samples: list[Sample] = []
        accumulators = [EnergyAccumulator(d) for d in self.devices]
        inside = False
        for sweep, (wall, mark) in enumerate(times):
            inside = inside or mark == "start"
            for i, device in enumerate(self.devices):
                values = _reading(i, wall, self.stagger)
                samples.append(Sample(sweep, wall - MONO_OFFSET_S, wall, device.key, *_cells(values), 0.0002, mark))
                if inside:
                    accumulators[i].add(wall - MONO_OFFSET_S, values)
            inside = inside and mark != "stop"
        window = Window(
            start_mono_s=start_s - MONO_OFFSET_S,
            stop_mono_s=stop_s - MONO_OFFSET_S,
            start_wall_s=start_s,
            stop_wall_s=stop_s,
            devices=tuple(a.result(stop_s - start_s) for a in accumulators),
        )
        write_samples(folder, samples)
        write_metadata(folder, self.power_metadata(begin, window))
        energy = window.energy_j("accelerator")
        assert energy is not None
        return {"energy_j": energy, "method": "counter", "window": window}

    def power_metadata(self, begin: float, window: Window) -> dict[str, Any]:
        keys = [d.key for d in self.devices]
        state = {k: DeviceState(power_limit_w=POWER_LIMIT_W, sm_clock_mhz=1980.0).to_dict() for k in keys}
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "csv": CSV_NAME,
            "columns": list(COLUMNS),
            "host": "testhost",
            "started_wall": _iso(begin),
            "meters": [
                {"kind": "nvml", "info": {"driver": "560.35.03"}, "devices": [d.to_dict() for d in self.devices]}
            ],
            "sampling": {"requested_period_s": 1.0 / self.options.power_hz, "missed_deadlines": 0, "gaps": []},
            "state_start": state,
            "state_end": state,
            "windows": [window.to_dict()],
        }

    # result.json

    def result(
        self, n: int, seed: int, start_ms: int, stop_ms: int, outcome: dict[str, Any], power: dict[str, Any] | None
    ) -> RunResult:
        s = self.spec.spec
        duration = (stop_ms - start_ms) / 1000.0
        per_sample = self.flops_per_sample()
        assert per_sample is not None
        data: dict[str, Any] = {
            "format_version": 1,
            "spec_id": s.id,
            "spec_version": s.version,
            "spec_sha256": self.spec.digest,
            "kind": s.kind,
            "profile": self.spec.profile,
            "level": self.spec.level,
            "run": n,
            "status": "failed" if outcome["failed"] else "success",
            "reason": "target not reached within the epoch budget" if outcome["failed"] else None,
            "seed": seed,
            "started_at": _iso(start_ms / 1000.0),
            "duration_s": duration,
            "sample_unit": s.workload.sample_unit,
            "devices": max(self.options.devices, 1),
            "device_kind": "cuda" if self.options.power else "cpu",
            "synthetic_data": s.workload.dataset.synthetic,
            "flops_per_sample": per_sample,
            "flop_accounting": s.workload.flop_accounting,
            "hyperparameters": self.hyperparameters,
            "settings": {"precision": self.precision, "compile": False},
            "power": self.power_result(power),
        }
        if s.kind == "time_to_quality":
            data.update(self.quality_result(outcome, start_ms))
            processed = outcome["epochs"] * s.workload.dataset.train_samples
        else:
            assert s.throughput is not None
            processed = outcome["samples"]
            data["throughput"] = {
                "warmup_steps": s.throughput.warmup_steps,
                "timed_steps": s.throughput.measure_steps,
                "samples_per_s": processed / duration,
            }
        data["samples_processed"] = processed
        if s.workload.flop_accounting == "processed":
            flops = per_sample * processed
        elif s.budget.epochs is not None:
            flops = per_sample * s.workload.dataset.train_samples * s.budget.epochs
        else:
            assert s.budget.steps is not None
            flops = per_sample * s.budget.steps * self.hyperparameters["global_batch_size"]
        data["model_flops"] = flops
        data["flops_per_s"] = flops / duration
        return RunResult.model_validate(data)

    def flops_per_sample(self) -> float | None:
        workload = self.spec.spec.workload
        variant = workload.variants.get(str(self.hyperparameters.get("model")))
        if variant is not None and variant.flops_per_sample is not None:
            return variant.flops_per_sample
        return workload.flops_per_sample

    def quality_result(self, outcome: dict[str, Any], start_ms: int) -> dict[str, Any]:
        s = self.spec.spec
        assert s.quality is not None
        curve = outcome["curve"]
        per_epoch = s.workload.dataset.train_samples
        batch = self.hyperparameters["global_batch_size"]
        values = [v for _, v, _ in curve]
        best = max(values) if s.quality.direction == "higher" else min(values)
        return {
            "epochs": float(outcome["epochs"]),
            "steps": outcome["epochs"] * math.ceil(per_epoch / batch),
            "quality": {
                "metric": s.quality.metric,
                "target": s.quality.target,
                "direction": s.quality.direction,
                "achieved": values[-1],
                "best": best,
                "reached": not outcome.get("below", outcome["failed"]),
                "curve": [
                    {
                        "epoch": float(epoch),
                        "step": epoch * math.ceil(per_epoch / batch),
                        "samples": epoch * per_epoch,
                        "value": value,
                        "t_s": (at_ms - start_ms) / 1000.0,
                    }
                    for epoch, value, at_ms in curve
                ],
            },
        }

    def power_result(self, power: dict[str, Any] | None) -> dict[str, Any]:
        if power is None:
            return {"measured": False, "reason": "no power meter is available here: nvml: no NVIDIA driver"}
        window: Window = power["window"]
        return {
            "measured": True,
            "scope": self.spec.spec.measurement.power.scope,
            "meters": ["nvml"],
            "devices": [d.identity for d in self.devices],
            "energy_j": power["energy_j"],
            "mean_power_w": power["energy_j"] / (window.stop_wall_s - window.start_wall_s),
            "method": power["method"],
            "trace_files": ["power.csv", "power.json"],
        }


class Log:
    """MLLOG lines with a clock that moves only when told."""

    def __init__(self, t0_ms: int) -> None:
        self.now = t0_ms
        self.lines: list[str] = []
        self.times: dict[str, int] = {}

    def _event(self, kind: str, key: str, value: Any, advance_ms: int, metadata: dict[str, Any]) -> None:
        self.now += advance_ms
        self.times.setdefault(key, self.now)
        meta = {"file": "specbench/run/harness.py", "lineno": 100 + len(self.lines), **metadata}
        event = {"namespace": "", "time_ms": self.now, "event_type": kind, "key": key, "value": value, "metadata": meta}
        self.lines.append(":::MLLOG " + json.dumps(event))

    def point(self, key: str, value: Any, advance_ms: int = 0, **metadata: Any) -> None:
        self._event("POINT_IN_TIME", key, value, advance_ms, metadata)

    def start(self, key: str, advance_ms: int = 0, **metadata: Any) -> None:
        self._event("INTERVAL_START", key, None, advance_ms, metadata)

    def end(self, key: str, advance_ms: int = 0, **metadata: Any) -> None:
        self._event("INTERVAL_END", key, None, advance_ms, metadata)

    def time_of(self, key: str) -> int:
        return self.times[key]

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _quality(k: int, reach: int, target: float, direction: str, failed: bool) -> float:
    """The k-th evaluation of a curve that meets the target at evaluation `reach` (never, for a failed run)."""
    if failed:
        fraction = 0.5 + 0.4 * (1 - 0.5**k)
    elif k >= reach:
        fraction = 1.0 + 0.0125 * (k - reach + 1)
    else:
        fraction = 0.5 + 0.4 * k / reach
    return round(target * fraction if direction == "higher" else target / fraction, 6)


def _base_w(index: int) -> float:
    """Device `index`'s mean power: its readings swing +/- 30 W around it with a 20 s period."""
    return 250.0 + 40.0 * index


def _reading(index: int, wall_s: float, phase: float = 0.0) -> PowerValues:
    """Device `index` at a wall time: a smooth power curve (shifted by `phase` radians) and the exact integral
    as its energy counter."""
    t = wall_s - WALL_ORIGIN_S
    base, swing, period = _base_w(index), 30.0, 20.0
    angle = 2 * math.pi * t / period + phase
    power = base + swing * math.sin(angle)
    energy = 1.0e6 * (index + 1) + base * t - swing * period / (2 * math.pi) * math.cos(angle)
    return PowerValues(power_instant_w=power, power_average_w=power, energy_j=energy)


def _cells(values: PowerValues) -> tuple[float | None, float | None, float | None]:
    return values.power_instant_w, values.power_average_w, values.energy_j


def write_manifest(root: Path) -> None:
    """manifest.json: sha256 and size of every other file under ORG/SYSTEM (a test re-signs mutations with it)."""
    files.write_manifest(root)


def make_submission(out: Path, options: Options | None = None, **changes: Any) -> Path:
    """Write a compliant submission under `out` (as OUT/ORG/SYSTEM) and return the ORG/SYSTEM folder."""
    return Writer(Path(out), replace(options or Options(), **changes)).write()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--spec", default="resnet50")
    parser.add_argument("--profile", default="smoke")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--power-hz", type=float, default=10.0)
    parser.add_argument("--epoch-s", type=float, default=4.0)
    parser.add_argument("--reach-epoch", type=int, default=3)
    args = parser.parse_args()
    root = make_submission(
        args.out,
        spec=args.spec,
        profile=args.profile,
        runs=args.runs,
        devices=args.devices,
        power_hz=args.power_hz,
        epoch_s=args.epoch_s,
        reach_epoch=args.reach_epoch,
    )
    print(root)


if __name__ == "__main__":
    main()

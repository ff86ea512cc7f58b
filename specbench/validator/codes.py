"""The catalogue of finding codes: each stable code with its severity, title and default hint.

Codes are never renumbered or reused; docs/rules.md documents each one and a test keeps the
two in sync.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning")


@dataclass(frozen=True)
class Code:
    code: str
    severity: Severity
    title: str
    hint: str


def _codes(*entries: tuple[str, Severity, str, str]) -> dict[str, Code]:
    return {code: Code(code, severity, title, hint) for code, severity, title, hint in entries}


CODES: dict[str, Code] = _codes(
    # structure
    (
        "SB-STR-001",
        "error",
        "not a submission folder",
        "pass an ORG/SYSTEM folder (with system.yaml) or a BENCHMARK folder (with submission.yaml)",
    ),
    ("SB-STR-002", "error", "required file or folder missing", "re-run `specbench execute`, which writes every file"),
    ("SB-STR-003", "error", "over a size limit", "submit the files the executor wrote, without padding or extra data"),
    (
        "SB-STR-004",
        "error",
        "symbolic link or special file",
        "copy the real files into the submission (cp -L); links are never followed",
    ),
    (
        "SB-STR-005",
        "error",
        "unsafe path in the manifest",
        "list files by their relative path with forward slashes, without '..', '.' or a leading '/'",
    ),
    ("SB-STR-006", "error", "file cannot be parsed", "restore the file the executor wrote"),
    ("SB-STR-007", "error", "file does not match its schema", "see docs/submission-format.md for the file's fields"),
    (
        "SB-STR-008",
        "error",
        "unsupported format version",
        "write the file with a specbench that this validator reads, or upgrade the validator",
    ),
    (
        "SB-STR-009",
        "warning",
        "unexpected file or folder",
        "remove it: a submission holds only the files of docs/submission-format.md",
    ),
    ("SB-STR-010", "warning", "executable file", "clear the executable bit (chmod a-x); nothing in a submission runs"),
    (
        "SB-STR-011",
        "error",
        "folder name disagrees with the metadata",
        "name folders ORG/SYSTEM/BENCHMARK as system.yaml and submission.yaml say",
    ),
    (
        "SB-STR-012",
        "error",
        "control character in a file or folder name",
        "rename it without control, bidirectional or zero-width characters; a submission holds only the files of "
        "docs/submission-format.md",
    ),
    # integrity
    (
        "SB-INT-001",
        "error",
        "file differs from the manifest",
        "the file changed after the run: restore it, or re-run; never edit results by hand",
    ),
    ("SB-INT-002", "error", "file not in the manifest", "remove the file, or re-run so the manifest lists it"),
    ("SB-INT-003", "error", "manifest lists a missing file", "restore the file from the run"),
    (
        "SB-INT-004",
        "error",
        "unknown spec digest",
        "run a released spec (`specbench specs`), or pass the spec file with --spec",
    ),
    (
        "SB-INT-005",
        "error",
        "spec identity disagrees with its digest",
        "spec_id and spec_version must be those of the spec whose sha256 submission.yaml names",
    ),
    # equivalence
    (
        "SB-EQV-001",
        "error",
        "parameter breaks its rule",
        "use the value the spec's rule allows at this level, or submit at a level where the layer may vary",
    ),
    ("SB-EQV-002", "error", "required parameter not stated", "state the parameter in system.yaml or submission.yaml"),
    ("SB-EQV-003", "error", "problem (layer 9) differs from the spec", "layer 9 never varies: use the spec's problem"),
    (
        "SB-EQV-004",
        "error",
        "logged hyperparameter differs from the declared one",
        "log every declared hyperparameter once, with the declared value",
    ),
    ("SB-EQV-005", "error", "level or profile not allowed", "choose a level and profile the spec lists"),
    (
        "SB-EQV-006",
        "error",
        "parameter the spec's executor does not read",
        "fix the name (the message suggests the closest one the executor reads) and run again: the runs went without "
        "the value, so the results do not show it",
    ),
    # log
    (
        "SB-LOG-001",
        "error",
        "MLLOG line cannot be parsed",
        "each ':::MLLOG ' line holds one JSON object with namespace, time_ms, event_type, key, value, metadata",
    ),
    ("SB-LOG-002", "error", "required log key missing", "see the key table in docs/submission-format.md"),
    ("SB-LOG-003", "error", "key logged the wrong number of times", "log the key as often as its cardinality says"),
    (
        "SB-LOG-004",
        "error",
        "interval events not paired",
        "every *_start (INTERVAL_START) needs its *_stop (INTERVAL_END) with the same epoch",
    ),
    (
        "SB-LOG-005",
        "error",
        "events out of order",
        "init before run_start, epochs and evaluations inside the run, run_stop last",
    ),
    ("SB-LOG-006", "error", "time goes backwards", "log time_ms from one wall clock, in the order events happen"),
    (
        "SB-LOG-007",
        "error",
        "run_stop status missing or inconsistent",
        "run_stop metadata status is 'success' when the target was reached, else 'aborted'",
    ),
    (
        "SB-LOG-008",
        "error",
        "evaluation cadence broken",
        "evaluate at every cadence point of the spec (quality.eval_every_epochs), within the epoch budget",
    ),
    (
        "SB-LOG-009",
        "warning",
        "target quality not reached",
        "the run counts as failed; the runs rule says how many may fail",
    ),
    ("SB-LOG-010", "error", "seeds not distinct across runs", "give every run its own seed"),
    (
        "SB-LOG-011",
        "error",
        "logged identity or setting disagrees with the submission",
        "log the submitter, system, benchmark, division and status of this submission",
    ),
    ("SB-LOG-012", "error", "log value of the wrong type", "see the key table in docs/submission-format.md"),
    # power
    (
        "SB-PWR-001",
        "error",
        "power not measured",
        "measure power with a meter of the spec's scope (`specbench power` lists what is available)",
    ),
    (
        "SB-LOG-013",
        "warning",
        "quality below the target: penalised",
        "HPC AI500 ranks a run below its target with Valid FLOPS x (achieved/target)^n; nothing to fix",
    ),
    (
        "SB-LOG-014",
        "error",
        "epoch budget not trained",
        "HPC AI500 trains the whole epoch budget and evaluates at its end; do not stop at the target",
    ),
    (
        "SB-PWR-002",
        "error",
        "power trace malformed",
        "restore power.csv and power.json as the sampler wrote them (docs/power.md)",
    ),
    (
        "SB-PWR-003",
        "error",
        "trace does not cover the timed run",
        "start sampling before run_start and stop after run_stop",
    ),
    (
        "SB-PWR-004",
        "error",
        "too few power samples",
        "sample at least as often as the spec's min_sampling_hz (e.g. --interval-ms 100)",
    ),
    ("SB-PWR-005", "error", "gap in the power trace", "keep the sampler running; a blocked sampler leaves gaps"),
    (
        "SB-PWR-006",
        "error",
        "energy counter goes down",
        "a counter reset in the window makes its energy unusable; re-run the benchmark",
    ),
    ("SB-PWR-007", "error", "sample times go backwards", "record samples on one monotonic clock, in order"),
    (
        "SB-PWR-008",
        "error",
        "counter and integrated energy disagree",
        "check the meter: the counter and the power readings must describe the same device",
    ),
    (
        "SB-PWR-009",
        "error",
        "mean power implausible",
        "check the meter and the devices it measured; mean power lies between idle and the enforced limit",
    ),
    (
        "SB-PWR-010",
        "error",
        "device missing or duplicated",
        "measure every device of the run, each once (one row per device per sweep)",
    ),
    (
        "SB-PWR-011",
        "error",
        "power scope differs from the spec",
        "measure at the spec's scope (measurement.power.scope); scopes are never compared",
    ),
    # runs
    ("SB-RUN-001", "error", "wrong number of runs", "submit exactly the spec's number of runs, failed ones included"),
    (
        "SB-RUN-002",
        "error",
        "too many failed runs",
        "re-run: the aggregation tolerates only the spec's number of failed runs",
    ),
    ("SB-RUN-003", "error", "run folders misnumbered", "name run folders run_1 ... run_N without gaps"),
    (
        "SB-RUN-004",
        "error",
        "runs differ in checked metadata",
        "runs of one result use the same hyperparameters, settings and devices",
    ),
    (
        "SB-RUN-005",
        "warning",
        "run incomplete",
        "the run counts as failed; a run stopped by a signal is replaced when you execute again into the folder",
    ),
    # result
    (
        "SB-RES-001",
        "error",
        "result.json disagrees with the submission or spec",
        "result.json must name the same spec, level, profile, run and hyperparameters as submission.yaml",
    ),
    (
        "SB-RES-002",
        "error",
        "result.json disagrees with the log or trace",
        "result.json is what the log and trace show; restore the executor's file",
    ),
    (
        "SB-RES-003",
        "error",
        "power result inconsistent",
        "measured: true needs energy_j; measured: false needs a reason and no numbers (never a zero)",
    ),
    # accounting: every number recomputed from the evidence (docs/rules.md, "Accounting")
    (
        "SB-ACC-001",
        "error",
        "samples disagree with the spec",
        "the log's samples_count must be what the spec makes of the declared hyperparameters "
        "(timed steps x global batch x sequence length; epochs x the training set)",
    ),
    (
        "SB-ACC-002",
        "error",
        "device counts disagree",
        "system.yaml's accelerator_count, the world size, result.json's devices and the trace's devices "
        "must all count the same accelerators",
    ),
    (
        "SB-ACC-003",
        "error",
        "quality value outside its metric's range",
        "accuracy and IoU lie in [0, 1]; log the metric as a fraction, not a percentage",
    ),
    (
        "SB-ACC-004",
        "error",
        "value logged with the wrong event type",
        "hyperparameters and other declared values are POINT_IN_TIME events, as mllog writes them",
    ),
    (
        "SB-ACC-005",
        "error",
        "declared accelerator not measured",
        "every accelerator system.yaml declares must have a power series for a per-watt result",
    ),
    # physics: device facts bound every claim (docs/devices.md)
    (
        "SB-PHY-001",
        "error",
        "FLOP rate above the device's peak",
        "model FLOP/s per device cannot exceed the dense peak of its precision (docs/devices.md)",
    ),
    (
        "SB-PHY-002",
        "error",
        "mean power outside the device's range",
        "a training accelerator draws at least its idle floor and at most its board power limit (docs/devices.md)",
    ),
    (
        "SB-PHY-003",
        "warning",
        "device not in the facts table",
        "on an unranked profile rates and power are not bounded and MFU is not computed; add the device, with its "
        "sources, to specbench/physics/devices.yaml (docs/devices.md)",
    ),
    (
        "SB-PHY-004",
        "error",
        "device not in the facts table on a ranked profile",
        "add a row for the device, with its sources, to specbench/physics/devices.yaml (a pull request), or a "
        "maintainer passes --devices FILE, a table of their own in the same format (docs/devices.md)",
    ),
    (
        "SB-PHY-005",
        "error",
        "trace device not in the facts table",
        "each accelerator power.json lists must be a model of the device table, as system.yaml's must (docs/devices.md)",
    ),
    (
        "SB-PHY-006",
        "error",
        "precision missing or unknown on a ranked profile",
        "declare the precision the runs trained in (layers.parallelism_precision.precision or "
        "hyperparameters.precision) with a name of docs/devices.md, as `specbench execute` writes it",
    ),
    (
        "SB-PHY-007",
        "warning",
        "precision missing or unknown",
        "declare the precision with a name of docs/devices.md; the rate is bounded by the device's highest rate",
    ),
    (
        "SB-PHY-008",
        "error",
        "precision records disagree",
        "submission.yaml, each result.json (settings.precision) and each log record the one precision the runs "
        "trained in; re-run rather than edit one of them",
    ),
    # bounds: energy floor, idle from the trace, best-known rates (docs/devices.md)
    (
        "SB-BND-001",
        "error",
        "energy below the floor of the work done",
        "a device spends at least its least energy per FLOP on each FLOP and its idle floor on each second; "
        "submit the trace the meter recorded (docs/devices.md)",
    ),
    (
        "SB-BND-002",
        "error",
        "training power below the device's own idle",
        "a training device draws at least what it drew idle before run_start; submit the trace the meter recorded",
    ),
    (
        "SB-BND-003",
        "error",
        "idle power below the device's idle floor",
        "no such device reads that little before run_start (docs/devices.md); submit the trace the meter recorded, "
        "or add the measurement that shows the part idles lower to specbench/physics/devices.yaml",
    ),
    (
        "SB-BND-004",
        "warning",
        "no trace readings before run_start",
        "start the power sampler before the run (`specbench execute` does) so the trace shows each device's idle",
    ),
    (
        "SB-BND-005",
        "warning",
        "rate beyond the best-known result",
        "unconfirmed, not ranked until `specbench reproduce` confirms it; a confirmed result becomes the new "
        "best-known row of specbench/physics/best_known.yaml",
    ),
    (
        "SB-BND-006",
        "warning",
        "no best-known result for this workload and device",
        "unconfirmed, not ranked until `specbench reproduce` confirms it; add a best-known row with its source to "
        "specbench/physics/best_known.yaml",
    ),
    (
        "SB-BND-007",
        "warning",
        "energy per sample below the best-known result",
        "unconfirmed, not ranked until `specbench reproduce` confirms it; a confirmed result becomes the new "
        "best-known energy row of specbench/physics/best_known.yaml",
    ),
    (
        "SB-BND-008",
        "warning",
        "no best-known energy per sample for this workload and device",
        "unconfirmed, not ranked until `specbench reproduce` confirms it; add a best-known energy row with its source "
        "to specbench/physics/best_known.yaml",
    ),
    # identity: names the scorer groups and compares by are plain text
    (
        "SB-IDN-001",
        "error",
        "control or invisible character in a name",
        "write the name without control, zero-width, bidirectional or private-use characters",
    ),
    (
        "SB-IDN-002",
        "error",
        "stray whitespace in a name",
        "write the name without leading or trailing whitespace, with single U+0020 spaces between words",
    ),
    (
        "SB-IDN-003",
        "error",
        "name changes under Unicode normalisation",
        "write the name in its NFKC form (plain letters and digits, no fullwidth forms, ligatures or separate accents)",
    ),
    (
        "SB-IDN-004",
        "error",
        "look-alike letters of another script in a name",
        "write the name in one script: Latin, Greek and Cyrillic letters look alike, so they are not mixed, and a "
        "Greek or Cyrillic letter does not stand with ASCII digits",
    ),
    # provenance: where the evidence comes from
    (
        "SB-PRV-001",
        "warning",
        "power not from a hardware meter",
        "replayed, null or unknown meters are never ranked per watt; measure with nvml, amdsmi, rapl or hwmon",
    ),
    (
        "SB-PRV-002",
        "error",
        "duplicated evidence",
        "each run, device and node records its own log and power series; byte-identical copies are refused",
    ),
    (
        "SB-PRV-003",
        "error",
        "energy counter goes back between runs",
        "a device's cumulative energy counter only grows during one session: run k+1 starts at or above run k's end",
    ),
    (
        "SB-PRV-004",
        "error",
        "trace clock runs faster than its sampler",
        "a fixed-period sampler's readings come at most once per requested period; a compressed trace does not",
    ),
    # consistency across fields and files
    (
        "SB-CNS-001",
        "error",
        "model variant disagrees with the hyperparameters",
        "declare as `variant` the spec variant that hyperparameters.model names, with that variant's shape; a spec "
        "without variants takes no variant",
    ),
    (
        "SB-CNS-002",
        "error",
        "fixed layer differs from the spec's reference",
        "at this level the layer follows the spec's reference (`specbench show SPEC`): use its values, or submit at a "
        "level where the layer may vary",
    ),
    (
        "SB-CNS-003",
        "error",
        "run from another host or device",
        "submit the runs of one benchmark from the devices and host system.yaml and run_1 name; run again what ran "
        "elsewhere",
    ),
    (
        "SB-CNS-004",
        "error",
        "declared number outside its bound",
        "restore the value the sampler or `specbench execute` recorded; a period, power limit or idle power outside "
        "the device's range is not a measurement",
    ),
    # duplicates across submissions (validator.across: the submissions of one validate or score call)
    (
        "SB-DUP-001",
        "error",
        "log of another submission",
        "submit each run once, under the system that ran it; a renamed or re-signed copy is refused on both",
    ),
    (
        "SB-DUP-002",
        "error",
        "power series of another submission",
        "each run records its own power readings; readings copied from another submission are refused on both",
    ),
    (
        "SB-DUP-003",
        "error",
        "device measured by two submissions at once",
        "a GPU (by UUID) runs one benchmark at a time: two submissions measuring it over the same time are refused",
    ),
    (
        "SB-DUP-004",
        "error",
        "run start of another submission",
        "each run starts at its own instant; two submissions with a run_start at the same time_ms are refused",
    ),
    # numbers
    (
        "SB-NUM-001",
        "error",
        "number out of range",
        "numbers must be finite and within the range of a 64-bit float (JSON and YAML allow larger integers)",
    ),
    # authenticity (manifest.json.sig, `specbench sign`)
    (
        "SB-SIG-001",
        "error",
        "signature missing",
        "sign the manifest with `specbench sign ORG/SYSTEM --key KEY` (or ssh-keygen -Y sign -n specbench)",
    ),
    (
        "SB-SIG-002",
        "error",
        "signature malformed",
        "write the signature with `specbench sign` or `ssh-keygen -Y sign -n specbench -f KEY manifest.json`",
    ),
    (
        "SB-SIG-003",
        "error",
        "signature does not match the manifest",
        "manifest.json changed after it was signed: restore the signed files, or sign the new manifest again",
    ),
    (
        "SB-SIG-004",
        "error",
        "signature made for another namespace",
        "sign in the specbench namespace: `specbench sign`, or ssh-keygen -Y sign -n specbench",
    ),
    (
        "SB-SIG-005",
        "error",
        "signer not allowed",
        "sign with a key the allowed_signers file lists for the specbench namespace, or ask its maintainer to add yours",
    ),
    (
        "SB-SIG-006",
        "error",
        "signer's key not valid now",
        "the allowed_signers line limits the key with valid-after/valid-before: sign with a current key",
    ),
    (
        "SB-SIG-007",
        "warning",
        "signature not verified",
        "pass --allowed-signers FILE to check who signed; without it any key's signature is accepted as unverified",
    ),
    (
        "SB-SIG-008",
        "error",
        "signature algorithm not supported",
        "sign with an ed25519, ECDSA (nistp256/384/521) or RSA key, hash sha512 or sha256 (rsa-sha2-512/256)",
    ),
    # imported MLPerf results (docs/mlperf-import.md)
    (
        "SB-MLP-001",
        "warning",
        "MLPerf log rule broken",
        "the run counts as failed, as MLPerf's package checker tolerates one non-compliant run; "
        "SB-RUN-002 says whether too many failed",
    ),
    (
        "SB-MLP-002",
        "warning",
        "evaluation off MLPerf's schedule",
        "MLPerf's rules evaluate ResNet every 4 epochs at one offset; MLPerf's tools do not check it, "
        "so the extra evaluations count as logged",
    ),
    (
        "SB-MLP-003",
        "warning",
        "seed not logged",
        "MLPerf's seed checker asks every run to log its seed; without it distinct seeds cannot be verified",
    ),
    (
        "SB-MLP-004",
        "error",
        "import record disagrees with the submission",
        "re-import the MLPerf results with `specbench import mlperf`; logs are kept verbatim",
    ),
    (
        "SB-MLP-005",
        "error",
        "MLPerf power files incomplete or misnamed",
        "each power/result_* folder holds node_0.txt ... node_(N-1).txt for the N nodes of the system",
    ),
    (
        "SB-MLP-006",
        "warning",
        "MLPerf power log markers inconsistent",
        "energy is taken over run_start..run_stop from the readings, whatever the markers say",
    ),
    (
        "SB-MLP-007",
        "warning",
        "target reached at an extra evaluation",
        "MLPerf's tools accept the run and its logged time to train; under MLPerf's schedule the clock "
        "would have stopped at the next scheduled evaluation",
    ),
    (
        "SB-MLP-008",
        "warning",
        "node power trace below MLPerf's power rules",
        "MLPerf's tools do not check sampling, gaps or coverage; the energy is counted from the readings "
        "in the timed run, a lower bound where an edge is uncovered",
    ),
    (
        "SB-MLP-009",
        "warning",
        "node power reading out of time order",
        "the readings are read in time order; a reading outside run_start..run_stop never counts",
    ),
    (
        "SB-MLP-010",
        "warning",
        "node power logs numbered unlike MLPerf's power checker",
        "MLPerf's power checker numbers node logs node_0.txt to node_(N-1).txt; the energy does not depend on the names",
    ),
    (
        "SB-MLP-011",
        "warning",
        "identical node power logs",
        "two nodes cannot read the same power at the same milliseconds: one log is likely a copy, "
        "so the energy counts one node twice and misses another",
    ),
    (
        "SB-MLP-012",
        "warning",
        "framework version not stated",
        "MLPerf's system description asks only for a framework text; state the version in it "
        "(for example 'PyTorch NVIDIA Release 24.04')",
    ),
    (
        "SB-MLP-013",
        "error",
        "problem differs from MLPerf's reference",
        "MLPerf's checker asks only for a non-empty train_samples and eval_samples; the quality is "
        "measured on another set than ImageNet's, so the result is not ranked",
    ),
    (
        "SB-MLP-014",
        "warning",
        "scaling.json unusable",
        "MLPerf's published time to train is the olympic mean x scaling.json's scaling_factor; "
        "without it the time to train is the unscaled olympic mean",
    ),
    (
        "SB-MLP-020",
        "warning",
        "switch power measured but counted as zero by MLPerf's summarizer",
        "log the interconnect as interconnect_power_est (an estimate) or have MLPerf count sw_N.txt power_reading "
        "lines; specbench shows both energies",
    ),
    (
        "SB-MLP-021",
        "warning",
        "interconnect neither measured nor estimated",
        "a multi-node system's power folder needs an sw_N.txt per switch (readings or interconnect_power_est); the "
        "energy covers the nodes alone",
    ),
    (
        "SB-MLP-030",
        "error",
        "too few models in an MLPerf HPC weak-scaling result",
        "MLPerf's package checker wants at least the benchmark's count of result logs under weak/, and its result "
        "summarizer as many models that reach the target; import every model instance's log",
    ),
)

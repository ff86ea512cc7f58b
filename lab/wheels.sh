#!/usr/bin/env bash
# Fetches into .whl/ (git-ignored) the wheels the lent H200's image lacks, for Python 3.12 on x86_64, at the
# versions this checkout's .venv holds; the device steps install them with --no-deps into /tmp/site.
#   bash lab/wheels.sh [EXTRA==VERSION ...]   e.g. nvidia-cudnn-frontend==1.32.0 for benchmarks/cudnn_fusion_probe.py
set -euo pipefail
cd "$(dirname "$0")/.."
names="pydantic pydantic_core annotated-types typing-inspection typing_extensions jsonschema
jsonschema-specifications referencing rpds-py ruamel.yaml tabulate click mlperf-logging h5py attrs sshsig"
pins=$(.venv/bin/pip freeze | python3 -c '
import re, sys
want = {re.sub(r"[-_.]+", "-", n).lower() for n in sys.argv[1:]}
for line in sys.stdin:
    name, _, version = line.strip().partition("==")
    if re.sub(r"[-_.]+", "-", name).lower() in want:
        print(f"{name}=={version}")
' $names)
mkdir -p .whl
for pin in $pins "$@"; do
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any -d .whl "$pin"
done
ls .whl
du -sh .whl

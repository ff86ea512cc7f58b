#!/usr/bin/env bash
# Steps run on the lent H200, one per device call (from the repository root, OUT set, wheels carried in .whl/):
#   bash lab/device.sh profile    benchmarks/step_profile.py (where a training step's time goes)
#   bash lab/device.sh reproduce  specbench reproduce of the committed h200 ResNet-50 submission
#   bash lab/device.sh fuzz       benchmarks/fuzz_validate.py on the machine's 16 CPUs (no GPU work)
#   bash lab/device.sh tests      the GPU test modules
# Each step's log is written under $OUT as it runs; a step that fails does not stop the next.
set -u
: "${OUT:?set OUT to the folder for the logs}"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    >"$OUT/pip.txt" 2>&1 || { echo "wheel install failed"; tail "$OUT/pip.txt"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 PATH=/tmp/site/bin:$PATH
step() {
    local name=$1 limit=$2
    shift 2
    echo "== $name (limit ${limit}s) $(date -u +%H:%M:%S)"
    timeout "$limit" "$@" >"$OUT/$name.txt" 2>&1
    echo "   exit $?"
    grep -v -i -E "warn|^frame #" "$OUT/$name.txt" | tail -${TAIL:-30}
}
nvidia-smi --query-gpu=name,driver_version,power.draw,temperature.gpu --format=csv,noheader
for what in "$@"; do
    case $what in
    profile)
        step step_profile 300 python3 -u benchmarks/step_profile.py --steps 10 --work /tmp/prof \
            --out "$OUT/step_profile_h200.json" ;;
    reproduce)
        step reproduce 400 python3 -m specbench.cli reproduce submissions/specbench/h200 \
            --out "$OUT/reproductions/specbench/h200"
        step score_reproduced 120 python3 -m specbench.cli score submissions/specbench --reproductions "$OUT/reproductions" -f json -o "$OUT/score_reproduced.json" ;;
    fuzz)
        step fuzz 300 python3 benchmarks/fuzz_validate.py --cases 12000 --jobs 15 --out "$OUT/fuzz_validate.json" ;;
    tests)
        step pytest_gpu 400 python3 -m pytest -q -p no:cacheprovider tests/test_crop_kernel.py tests/test_jpeg_loader.py \
            tests/test_crops.py tests/test_execute_jpeg.py tests/test_layers.py tests/test_boundaries.py ;;
    *) echo "unknown step $what" ;;
    esac
done

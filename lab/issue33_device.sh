#!/usr/bin/env bash
# The layer refactor's checks on the H200, one step per device call (from the repository root, OUT set,
# wheels carried in .whl/):
#   bash lab/issue33_device.sh tests     the GPU test modules, then benchmarks/resnet50_throughput.py --runs 1
#   bash lab/issue33_device.sh llm       benchmarks/llm_throughput.py --budget-s 270
#   bash lab/issue33_device.sh imagenet  benchmarks/imagenet_input.py --epochs 4 (real JPEGs against synthetic)
# Each step's log is written under $OUT as it runs; a step that fails does not stop the next.
set -u
: "${OUT:?set OUT to the folder for the logs}"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    >"$OUT/pip.txt" 2>&1 || { echo "wheel install failed"; tail "$OUT/pip.txt"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
step() {
    local name=$1 limit=$2
    shift 2
    echo "== $name (limit ${limit}s) $(date -u +%H:%M:%S)"
    timeout "$limit" "$@" >"$OUT/$name.txt" 2>&1
    echo "   exit $?"
    grep -v -i -E "warn|^frame #" "$OUT/$name.txt" | tail -8
}
nvidia-smi --query-gpu=name,driver_version,power.draw,temperature.gpu --format=csv,noheader
case ${1:?say tests, llm or imagenet} in
tests)
    step pytest_gpu 300 python3 -m pytest -q -p no:cacheprovider tests/test_crop_kernel.py tests/test_jpeg_loader.py \
        tests/test_crops.py tests/test_execute_jpeg.py tests/test_layers.py tests/test_boundaries.py
    step resnet50_throughput 270 python3 -u benchmarks/resnet50_throughput.py --runs 1 \
        --out "$OUT/resnet50_throughput_h200.json" --submission-out /tmp/sub/specbench/h200 ;;
llm)
    step llm_throughput 560 python3 -u benchmarks/llm_throughput.py --budget-s 270 \
        --out "$OUT/llm_throughput_h200.json" --submission-out /tmp/sub/specbench/h200-llm ;;
imagenet)
    step imagenet_input 560 python3 -u benchmarks/imagenet_input.py --tree /tmp/tree \
        --out "$OUT/imagenet_input_h200.json" --work /tmp/work --no-probe --epochs 4 ;;
esac

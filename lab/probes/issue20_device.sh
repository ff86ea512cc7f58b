#!/usr/bin/env bash
# The hardware JPEG decoder's checks in one device call, each step's log under $OUT as it runs:
#   bash lab/probes/issue20_device.sh checks   then, in a second call,
#   bash lab/probes/issue20_device.sh result [imagenet_input.py options, e.g. --real-set data_decode_threads=2]
#                                                      (from the repository root, with OUT set and the
#                                                       project importable: PYTHONPATH=<wheels>:$PWD)
# checks (at most 7 minutes): the GPU tests of the loader and the crop kernel; benchmarks/crop_kernel.py (the
# fused Triton crops against the torch kernels, per batch); probe32 (the torch kernels' parts). result (at
# most 6 minutes): imagenet_input.py, the committed result. A step that fails does not stop the next; each has its own time limit.
set -u
: "${OUT:?set OUT to the folder for the logs}"
step() {
    local name=$1 limit=$2
    shift 2
    echo "== $name (limit ${limit}s)"
    timeout "$limit" "$@" >"$OUT/$name.txt" 2>&1
    echo "   exit $?"
    grep -v -i -E "warn|IndexKernel|^frame #" "$OUT/$name.txt" | tail -6
}
what=${1:?say checks or result}
if [ "$what" = checks ]; then
step pytest 240 python3 -m pytest -q -p no:cacheprovider tests/test_crop_kernel.py tests/test_jpeg_loader.py tests/test_crops.py tests/test_execute_jpeg.py
step crop_kernel 90 python3 -u benchmarks/crop_kernel.py --out "$OUT/crop_kernel_h200.json"
step probe32 60 python3 -u lab/probes/probe32.py --out "$OUT/probe32.json"
else
shift
step imagenet_input 330 python3 -u benchmarks/imagenet_input.py --tree /tmp/tree \
    --out "$OUT/imagenet_input_h200.json" --work /tmp/work --no-probe --epochs 4 "$@"
fi

#!/usr/bin/env bash
# Issue 32 probes on the lent H200 (from the repository root, OUT set, wheels carried in .whl/):
#   bash lab/issue32_device.sh STEP...   each step's log under $OUT, a summary line printed.
# Steps run `specbench execute` (the executors themselves) with one change each, against a baseline
# in the same call; inductor's options are set through its own environment variables.
set -u
: "${OUT:?set OUT to the folder for the logs}"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    >"$OUT/pip.txt" 2>&1 || { echo "wheel install failed"; tail "$OUT/pip.txt"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 PATH=/tmp/site/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,power.draw,temperature.gpu --format=csv,noheader
# a compile cache carried from an earlier call (.sbcache/inductor.tgz, made by the step `pack`) goes where
# specbench keeps it by default, ~/.cache/specbench/inductor
if [ -f .sbcache/inductor.tgz ]; then
    mkdir -p ~/.cache/specbench && tar xzf .sbcache/inductor.tgz -C ~/.cache/specbench
    echo "compile cache unpacked: $(find ~/.cache/specbench/inductor -type f | wc -l) files"
fi
# nvidia-smi's power, SM clock and software-power-cap flag every 500 ms while a run lasts, summarised after it
monitor_start() {  # NAME
    nvidia-smi --query-gpu=timestamp,power.draw,clocks.sm,clocks_event_reasons.sw_power_cap,temperature.gpu \
        --format=csv,noheader,nounits -lms 500 >"$OUT/$1.smi.csv" 2>/dev/null &
    MONITOR=$!
}
monitor_stop() {  # NAME
    kill "$MONITOR" 2>/dev/null; wait "$MONITOR" 2>/dev/null
    python3 lab/summarise_runs.py --smi "$OUT/$1.smi.csv" | sed 's/^/   /'
}
resnet() {  # NAME LIMIT BATCH COMPILE [ENV...]
    local name=$1 limit=$2 batch=$3 mode=$4
    shift 4
    echo "== $name $(date -u +%H:%M:%S) $*"
    local t0=$SECONDS
    monitor_start "$name"
    # SB_CLI: another entry point, such as lab/probes/cli_with.py with its settings in the environment
    # shellcheck disable=SC2086
    env "$@" timeout "$limit" ${SB_CLI:-python3 -m specbench.cli} execute caraml-resnet50 --device cuda --power nvml --runs 1 \
        --set global_batch_size=$batch --set compile_mode="$mode" --set precision=bf16 \
        --set memory_format=channels_last --out "$OUT/$name" >"$OUT/$name.txt" 2>&1
    echo "   exit $? in $((SECONDS - t0)) s"
    monitor_stop "$name"
    grep -E "compile cache|warm-up:" "$OUT/$name.txt" | sed 's/^/   /'
    python3 - "$OUT/$name" <<'PY'
import json, sys, pathlib
for p in sorted(pathlib.Path(sys.argv[1]).glob("**/result.json")):
    r = json.loads(p.read_text())
    print(f"   {r['throughput']['samples_per_s']:.1f} img/s, median step {r['throughput'].get('step_time_s_median')} s, {r['power'].get('mean_power_w')} W")
PY
}
gpt() {  # NAME LIMIT [ENV...]; GPT_SETS (default: global and micro-batch 16, cuDNN attention)
    local name=$1 limit=$2
    shift 2
    local sets=${GPT_SETS:-"global_batch_size=16 micro_batch_size=16 attention=cudnn"}
    echo "== $name $(date -u +%H:%M:%S) $sets $*"
    local t0=$SECONDS
    monitor_start "$name"
    # shellcheck disable=SC2046,SC2086
    env "$@" timeout "$limit" ${SB_CLI:-python3 -m specbench.cli} execute llm-gpt --device cuda --power nvml --runs 1 \
        $(printf -- '--set %s ' $sets) --set compile_mode=default \
        --out "$OUT/$name" >"$OUT/$name.txt" 2>&1
    echo "   exit $? in $((SECONDS - t0)) s"
    monitor_stop "$name"
    python3 - "$OUT/$name" <<'PY'
import json, sys, pathlib
for p in sorted(pathlib.Path(sys.argv[1]).glob("**/result.json")):
    r = json.loads(p.read_text())
    t = r["throughput"]
    print(f"   {t['samples_per_s']:.1f} tokens/s, {r['flops_per_s'] / 1e12:.1f} model TFLOP/s, median step {t['step_time_s_median']:.4f} s, {r['power'].get('mean_power_w')} W")
PY
}
for what in "$@"; do
    case $what in
    gpt_base) gpt gpt_base 240 ;;
    gpt_cdt) gpt gpt_cdt 300 TORCHINDUCTOR_COORDINATE_DESCENT_TUNING=1 ;;
    # baselines name fused_kernels=none (the CUDA default is pool since 2026-12-03); r400_default sets nothing
    r400_graphs) resnet r400_graphs 300 "400 --set fused_kernels=none" reduce-overhead ;;
    r400_default) resnet r400_default 300 400 reduce-overhead ;;
    r400_graphs_cdt) resnet r400_graphs_cdt 400 "400 --set fused_kernels=none" reduce-overhead TORCHINDUCTOR_COORDINATE_DESCENT_TUNING=1 ;;
    r256_default) resnet r256_default 240 "256 --set fused_kernels=none" default ;;
    r400_tuned_cold) rm -rf ~/.cache/specbench/inductor; resnet r400_tuned_cold 400 "400 --set fused_kernels=none --set kernel_tuning=coordinate-descent" reduce-overhead ;;
    r400_tuned_warm) resnet r400_tuned_warm 300 "400 --set fused_kernels=none --set kernel_tuning=coordinate-descent" reduce-overhead ;;
    pytest_gpu)
        echo "== pytest_gpu $(date -u +%H:%M:%S)"
        timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_crop_kernel.py tests/test_jpeg_loader.py \
            tests/test_crops.py tests/test_execute_jpeg.py tests/test_compile_cache.py tests/test_kernel_tuning.py \
            >"$OUT/pytest_gpu.txt" 2>&1
        echo "   exit $?"; tail -4 "$OUT/pytest_gpu.txt" ;;
    pack)
        tar czf "$OUT/inductor.tgz" -C ~/.cache/specbench inductor
        echo "== pack: $(find ~/.cache/specbench/inductor -type f | wc -l) files, $(du -sh ~/.cache/specbench/inductor | cut -f1) -> $(du -h "$OUT/inductor.tgz" | cut -f1)" ;;
    r400_graphs_tuned) resnet r400_graphs_tuned 400 "400 --set fused_kernels=none --set kernel_tuning=coordinate-descent" reduce-overhead ;;
    gpt_g64m16) GPT_SETS="global_batch_size=64 micro_batch_size=16 attention=cudnn" gpt gpt_g64m16 200 ;;
    gpt_g64m32) GPT_SETS="global_batch_size=64 micro_batch_size=32 attention=cudnn" gpt gpt_g64m32 200 ;;
    gpt_flash) GPT_SETS="global_batch_size=16 micro_batch_size=16 attention=flash" gpt gpt_flash 150 ;;
    imagenet_bs400)
        echo "== imagenet_bs400 $(date -u +%H:%M:%S)"
        timeout 400 python3 -u benchmarks/imagenet_input.py --tree /tmp/tree --out "$OUT/imagenet_input_h200_bs400.json" \
            --work /tmp/work --no-probe --epochs 4 --batch 400 --compile-mode reduce-overhead >"$OUT/imagenet_bs400.txt" 2>&1
        echo "   exit $?"; tail -4 "$OUT/imagenet_bs400.txt" ;;
    imagenet_bs400_tuned)
        echo "== imagenet_bs400_tuned $(date -u +%H:%M:%S)"
        timeout 550 python3 -u benchmarks/imagenet_input.py --tree /tmp/tree --out "$OUT/imagenet_input_h200_bs400_tuned.json" \
            --work /tmp/work --no-probe --epochs 4 --batch 400 --compile-mode reduce-overhead \
            --set kernel_tuning=coordinate-descent >"$OUT/imagenet_bs400_tuned.txt" 2>&1
        echo "   exit $?"; tail -4 "$OUT/imagenet_bs400_tuned.txt" ;;
    bn_kernels)
        echo "== bn_kernels $(date -u +%H:%M:%S)"
        timeout 300 python3 -u benchmarks/bn_kernels.py --batch 400 --json "$OUT/bn_kernels_h200.json" \
            >"$OUT/bn_kernels.txt" 2>&1
        echo "   exit $?"; tail -22 "$OUT/bn_kernels.txt" ;;
    bn_kernels_tuned)
        echo "== bn_kernels_tuned $(date -u +%H:%M:%S)"
        timeout 420 python3 -u benchmarks/bn_kernels.py --batch 400 --tuned --json "$OUT/bn_kernels_tuned_h200.json" \
            >"$OUT/bn_kernels_tuned.txt" 2>&1
        echo "   exit $?"; tail -22 "$OUT/bn_kernels_tuned.txt" ;;
    pool_kernels)
        echo "== pool_kernels $(date -u +%H:%M:%S)"
        timeout 200 python3 -u benchmarks/pool_kernels.py --batch 400 --json "$OUT/pool_kernels_h200.json" \
            >"$OUT/pool_kernels.txt" 2>&1
        echo "   exit $?"; tail -6 "$OUT/pool_kernels.txt" ;;
    attention_kernels)
        echo "== attention_kernels $(date -u +%H:%M:%S)"
        timeout 200 python3 -u benchmarks/attention_kernels.py --json "$OUT/attention_kernels_h200.json" \
            >"$OUT/attention_kernels.txt" 2>&1
        echo "   exit $?"; tail -7 "$OUT/attention_kernels.txt" ;;
    cudnn_fusion)
        echo "== cudnn_fusion $(date -u +%H:%M:%S)"
        timeout 200 python3 -u benchmarks/cudnn_fusion_probe.py --json "$OUT/cudnn_fusion_h200.json" \
            >"$OUT/cudnn_fusion.txt" 2>&1
        echo "   exit $?"; tail -8 "$OUT/cudnn_fusion.txt" ;;
    loss_kernels)
        echo "== loss_kernels $(date -u +%H:%M:%S)"
        timeout 200 python3 -u benchmarks/loss_kernels.py --json "$OUT/loss_kernels_h200.json" >"$OUT/loss_kernels.txt" 2>&1
        echo "   exit $?"; tail -5 "$OUT/loss_kernels.txt" ;;
    cudnn_fusion_fp16)
        echo "== cudnn_fusion_fp16 $(date -u +%H:%M:%S)"
        timeout 200 python3 -u benchmarks/cudnn_fusion_probe.py --dtype fp16 --json "$OUT/cudnn_fusion_fp16_h200.json" \
            >"$OUT/cudnn_fusion_fp16.txt" 2>&1
        echo "   exit $?"; tail -8 "$OUT/cudnn_fusion_fp16.txt" ;;
    r400_fused) resnet r400_fused 400 "400 --set fused_kernels=triton" reduce-overhead ;;
    pytest_pool)
        echo "== pytest_pool $(date -u +%H:%M:%S)"
        timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_fused_bn.py -k pool_only >"$OUT/pytest_pool.txt" 2>&1
        echo "   exit $?"; tail -3 "$OUT/pytest_pool.txt" ;;
    pool_ab)  # none and pool interleaved, AB_PAIRS (default 3) of each, one call (untuned; the compile cache fills on the first two)
        for i in $(seq "${AB_PAIRS:-3}"); do
            resnet "ab_none_$i" 200 "400 --set fused_kernels=none" reduce-overhead
            resnet "ab_pool_$i" 200 "400 --set fused_kernels=pool" reduce-overhead
        done ;;
    r400_pool) resnet r400_pool 300 "400 --set fused_kernels=pool" reduce-overhead ;;
    r400_bl0) SB_CLI="python3 lab/probes/cli_with.py" resnet r400_bl0 300 "400 --set fused_kernels=none" reduce-overhead SB_CUDNN_BENCHMARK_LIMIT=0 ;;
    r400_pad8) SB_CLI="python3 lab/probes/cli_with.py" resnet r400_pad8 240 400 reduce-overhead SB_STEM_PAD=8 ;;
    r400_aggr) SB_CLI="python3 lab/probes/cli_with.py" resnet r400_aggr 300 400 reduce-overhead SB_INDUCTOR='{"aggressive_fusion": true}' ;;
    r400_bfus) SB_CLI="python3 lab/probes/cli_with.py" resnet r400_bfus 400 400 reduce-overhead SB_INDUCTOR='{"benchmark_fusion": true}' ;;
    r400_mm) SB_CLI="python3 lab/probes/cli_with.py" resnet r400_mm 300 400 reduce-overhead SB_INDUCTOR='{"conv_1x1_as_mm": true}' ;;
    r400_pool_tuned) resnet r400_pool_tuned 520 "400 --set fused_kernels=pool --set kernel_tuning=coordinate-descent" reduce-overhead ;;
    r400_ma) resnet r400_ma 560 400 max-autotune ;;
    pytest_fused)
        echo "== pytest_fused $(date -u +%H:%M:%S)"
        timeout 480 python3 -m pytest -q -p no:cacheprovider tests/test_fused_bn.py >"$OUT/pytest_fused.txt" 2>&1
        echo "   exit $?"; tail -3 "$OUT/pytest_fused.txt" ;;
    sustained_gemm)
        echo "== sustained_gemm $(date -u +%H:%M:%S)"
        timeout 200 python3 -u benchmarks/sustained_gemm.py --seconds 30 --json "$OUT/sustained_gemm_h200.json" \
            >"$OUT/sustained_gemm.txt" 2>&1
        echo "   exit $?"; tail -3 "$OUT/sustained_gemm.txt" ;;
    gpt_ab)  # the sliced loss (before 2026-12-03) and the masked one interleaved, AB_PAIRS (default 2) of each
        for i in $(seq "${AB_PAIRS:-2}"); do
            SB_CLI="python3 lab/probes/cli_with.py" gpt "ab_slice_$i" 200 SB_GPT_SLICE=1
            gpt "ab_masked_$i" 200
        done ;;
    llm_throughput)  # deliverable 5's GPT script (plain loops against specbench in one process)
        echo "== llm_throughput $(date -u +%H:%M:%S)"
        timeout 300 python3 -u benchmarks/llm_throughput.py --budget-s 200 --runs 1 --out "$OUT/llm_throughput_h200.json" \
            --submission-out /tmp/sub/specbench/h200-llm >"$OUT/llm_throughput.txt" 2>&1
        echo "   exit $?"; tail -8 "$OUT/llm_throughput.txt" ;;
    gpt_weights)  # the executor's weights=fp32 (the default) and weights=bf16 interleaved, AB_PAIRS (default 2) of each
        for i in $(seq "${AB_PAIRS:-2}"); do
            gpt "ab_w32_$i" 200
            GPT_SETS="global_batch_size=16 micro_batch_size=16 attention=cudnn weights=bf16" gpt "ab_w16_$i" 200
        done ;;
    smoke_weights)  # llm-gpt's smoke profile on the GPU, bf16 autocast over fp32 weights and bf16 weights, seed 1
        for w in fp32 bf16; do
            echo "== smoke_weights $w $(date -u +%H:%M:%S)"
            timeout 200 python3 -m specbench.cli execute llm-gpt --profile smoke --device cuda --power none --seed 1 \
                --set precision=bf16 --set weights=$w --out "$OUT/smoke_$w" >"$OUT/smoke_$w.txt" 2>&1
            echo "   exit $?"
            python3 -c 'import json, sys, pathlib
for p in sorted(pathlib.Path(sys.argv[1]).glob("**/result.json")):
    q = json.loads(p.read_text())["quality"]
    print("   held-out loss", [(c["step"], round(c["value"], 4)) for c in q["curve"]], "reached", q["reached"])' "$OUT/smoke_$w"
        done ;;
    llm_throughput_w16)  # deliverable 5's GPT script with specbench's run at weights=bf16
        echo "== llm_throughput_w16 $(date -u +%H:%M:%S)"
        timeout 330 python3 -u benchmarks/llm_throughput.py --budget-s 230 --runs 1 --set weights=bf16 \
            --out "$OUT/llm_throughput_h200.json" --submission-out /tmp/sub/specbench/h200-llm >"$OUT/llm_throughput.txt" 2>&1
        echo "   exit $?"; tail -8 "$OUT/llm_throughput.txt" ;;
    gpt_whole) SB_CLI="python3 lab/probes/cli_with.py" gpt gpt_whole 300 SB_GPT_WHOLE=1 ;;
    *) echo "unknown step $what" ;;
    esac
done

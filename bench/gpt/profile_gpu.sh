#!/usr/bin/env bash
# bench/gpt/profile_gpu.sh — where one GPT-2 small training step's time goes
# on the GPU: symtrain's gpt:d12 (batch 16 x 1024, bf16) under Nsight Systems
# when nsys is there (kernel time summed per kernel over the profiled steps),
# else Nsight Compute's per-kernel duration over one step's kernels.
#
#   bench/gpt/profile_gpu.sh BUILD_DIR OUT_DIR
set -u
build=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
args=(train --model gpt:d12 --generated --device gpu --batch 16 --steps 8 --test-samples 1 --quiet)
nsys=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
if [ -n "$nsys" ]; then
    "$nsys" profile -o "$out/d12" --force-overwrite true --cuda-graph-trace=node \
        "$build/symtrain" "${args[@]}" >"$out/run.log" 2>&1
    "$nsys" stats --report cuda_gpu_kern_sum --format csv "$out/d12.nsys-rep" >"$out/kernels.csv" 2>&1
    echo "nsys: $out/kernels.csv"
else
    ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
    # step 1 runs without the graph: its kernels are one step's
    "$ncu" --clock-control none --metrics gpu__time_duration.sum --csv --launch-skip 0 --launch-count 400 \
        "$build/symtrain" train --model gpt:d12 --generated --device gpu --batch 16 --steps 1 \
        --test-samples 1 --quiet >"$out/kernels.csv" 2>"$out/ncu.err"
    echo "ncu: $out/kernels.csv"
fi

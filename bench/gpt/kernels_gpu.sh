#!/usr/bin/env bash
# bench/gpt/kernels_gpu.sh — the GPU kernels at GPT-2 small's shape in one or
# more builds that differ in compile-time flags (attention.cu's tuning knobs:
# SYMCU_ATTN_SPLIT, SYMCU_ATTN_CHUNK, SYMCU_ATTN_MINB_*). For each build:
# tests/gpu_train_ops (every kernel against its CPU reference), its --bench
# table, and gpt:d12 training steps (batch 16 x 1024) with their tokens/s.
#
#   bench/gpt/kernels_gpu.sh OUT_DIR [NAME=CUDA_FLAGS ...]
#
# Without variants: the default build only. Example:
#   bench/gpt/kernels_gpu.sh out default= nosplit=-DSYMCU_ATTN_SPLIT=0
set -u
out=$1
shift
[ $# -gt 0 ] || set -- default=
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
jobs=$(nproc)
targets=(--target symtrain_cli symrun symtrain_cuda gpu_train_ops)
build() { # DIR CUDA_FLAGS
    cmake -S . -B "$1" -DCMAKE_CUDA_FLAGS="$2" >"$out/$(basename "$1").cmake.log" 2>&1 &&
        cmake --build "$1" -j "$jobs" "${targets[@]}" >"$out/$(basename "$1").build.log" 2>&1 ||
        { tail -30 "$out/$(basename "$1").build.log"; return 1; }
}
rate() { python3 "$(dirname "$0")/rate.py" "$1"; } # JSONL: tokens/s after the first 3 steps
pids=()
for v in "$@"; do
    build "build-k-${v%%=*}" "${v#*=}" &
    pids+=($!)
done
for i in "${!pids[@]}"; do wait "${pids[$i]}" || echo "build of ${@:$((i + 1)):1} failed"; done
for v in "$@"; do
    b=build-k-${v%%=*}
    [ -x "$b/tests/gpu_train_ops" ] || continue
    echo "== ${v%%=*} (${v#*=})"
    "$b/tests/gpu_train_ops" >"$out/$b.ops.log" 2>&1
    echo "gpu_train_ops: exit $?"
    grep -E "^FAIL|^PASS" "$out/$b.ops.log" | head -12
    grep -A12 -- "-- attention" "$out/$b.ops.log" | grep -E "^-- attention|^(ok  |FAIL) bf16 (out|d[qkv])" |
        awk '/^--/{printf "%s %s:", $4, $5; next} {for (i = 1; i < NF; i++) if ($i == "error") e = $(i + 1);
             printf " %s %s %s", $1, $3, e} / dv /{print ""}'
    "$b/tests/gpu_train_ops" --bench >"$out/$b.bench.log" 2>&1
    grep -iE "attention" "$out/$b.bench.log"
    "$b/symtrain" train --model gpt:d12 --generated --device gpu --batch 16 --steps 23 \
        --test-samples 1 --log-interval 1000 --metrics "$out/$b.jsonl" >"$out/$b.train.log" 2>&1
    echo "gpt:d12 16x1024: exit $?, $(rate "$out/$b.jsonl") tokens/s"
done

#!/usr/bin/env bash
# bench/tp/gpu_share.sh — tensor parallelism on one GPU shared by its PEs
# (SYMTRAIN_GPU_SHARE=1): gpt:d12 at tp=1 (1 PE), tp=2 (2 PEs) and dp=2
# (2 PEs), the same seed and global batch. A correctness run, not a speed
# claim: two PEs on one GPU take turns on it. Per layout and precision
# (bf16, then fp32): tokens/s (the job's, bench/gpt/rate.py, after 3 warm-up
# steps), the GPU memory a PE holds, and the relative difference of the loss
# and the gradient norm from the tp=1 run's: at step 1 (the same weights and
# batch) and the largest over the steps.
#
#   [MODEL=d12] [BATCH=8] [PRECISIONS="bf16 fp32"] bench/tp/gpu_share.sh BUILD_DIR [STEPS]
set -u
build=$1
steps=${2:-20}
here=$(cd "$(dirname "$0")/.." && pwd)
model=gpt:${MODEL:-d12}
B=${BATCH:-8}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export SYMTRAIN_GPU_SHARE=1
echo "# machine: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null |
     head -1); $(nproc) cores"
echo "# $model, global batch $B x 1024 tokens, AdamW, $steps steps, one GPU shared by the PEs"
printf "%-6s %-8s %4s %12s %14s %11s %11s %11s %11s\n" prec layout PEs tokens_per_s \
    gpu_mem_per_pe loss_step1 loss_max norm_step1 norm_max
for prec in ${PRECISIONS:-bf16 fp32}; do
for lay in "1 dp=1" "2 tp=2" "2 dp=2"; do
    pes=${lay%% *} par=${lay#* } name=$prec-${lay#* }
    launch=()
    [ "$pes" -gt 1 ] && launch=("$build/symrun" -n "$pes")
    "${launch[@]}" "$build/symtrain" train --model "$model" --generated --device gpu \
        --precision "$prec" --parallel "$par" --batch "$B" --steps "$steps" --test-samples 1 \
        --log-interval 1000 --metrics "$tmp/$name.jsonl" >"$tmp/$name.log" 2>&1 ||
        { tail -20 "$tmp/$name.log"; exit 1; }
    [ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$tmp/$name.jsonl" "$KEEP/" # KEEP=DIR: the metrics files
    mem=$(sed -n 's/.*; \([0-9.]* [KMGT]iB\) of GPU memory per PE.*/\1/p' "$tmp/$name.log" | head -1)
    tps=$(python3 "$here/gpt/rate.py" "$tmp/$name.jsonl")
    diff=$(python3 - "$tmp/$prec-dp=1.jsonl" "$tmp/$name.jsonl" <<'PY'
import json, sys
def rows(p):
    return {r["step"]: r for r in map(json.loads, open(p)) if "loss" in r and "eval" not in r}
a, b = rows(sys.argv[1]), rows(sys.argv[2])
rel = lambda k, s: abs(b[s][k] - a[s][k]) / abs(a[s][k])
top = lambda k: max(rel(k, s) for s in a)
print(f"{rel('loss', 1):.2e} {top('loss'):.2e} {rel('grad_norm', 1):.2e} {top('grad_norm'):.2e}")
PY
)
    # shellcheck disable=SC2086
    printf "%-6s %-8s %4s %12s %14s %11s %11s %11s %11s\n" "$prec" "$par" "$pes" "$tps" "${mem:--}" \
        $diff
done
done
